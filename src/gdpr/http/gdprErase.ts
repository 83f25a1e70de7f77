import { principalOf, type OperationHandler } from '../../platform/http/operation-handler.ts';
import { eraseSubject, type DataSubjectDeps } from '../data-subject-requests.ts';

export function gdprErase(deps: DataSubjectDeps): OperationHandler<'gdprErase'> {
  return async (request) => ({ status: 200, body: await eraseSubject(deps, principalOf(request), request.body) });
}
