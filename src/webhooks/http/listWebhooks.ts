import { principalOf, type OperationHandler } from '../../platform/http/operation-handler.ts';
import { listWebhooks as list, type EndpointDeps } from '../endpoints.ts';

export function listWebhooks(deps: EndpointDeps): OperationHandler<'listWebhooks'> {
  return async (request) => ({ status: 200, body: await list(deps, principalOf(request).lender.id, request.query ?? {}) });
}
