import { principalOf, type OperationHandler } from '../../platform/http/operation-handler.ts';
import { getWebhook as get, type EndpointDeps } from '../endpoints.ts';

export function getWebhook(deps: EndpointDeps): OperationHandler<'getWebhook'> {
  return async (request) => ({ status: 200, body: await get(deps, principalOf(request).lender.id, request.params.webhook_id) });
}
