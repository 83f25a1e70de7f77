import { principalOf, type OperationHandler } from '../../platform/http/operation-handler.ts';
import { accessReport, type DataSubjectDeps } from '../data-subject-requests.ts';

export function gdprAccess(deps: DataSubjectDeps): OperationHandler<'gdprAccess'> {
  return async (request) => ({ status: 200, body: await accessReport(deps, principalOf(request), request.query) });
}
