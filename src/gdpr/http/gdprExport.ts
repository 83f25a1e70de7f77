import { principalOf, type OperationHandler } from '../../platform/http/operation-handler.ts';
import { exportReport, type DataSubjectDeps } from '../data-subject-requests.ts';

export function gdprExport(deps: DataSubjectDeps): OperationHandler<'gdprExport'> {
  return async (request) => {
    const body = await exportReport(deps, principalOf(request), request.query);
    // A download, named by date only: the file name carries nothing of the creator.
    const headers = { 'Content-Disposition': `attachment; filename="creator-data-export-${body.exported_at.slice(0, 10)}.json"` };
    return { status: 200, body, headers };
  };
}
