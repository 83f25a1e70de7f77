import { principalOf, type OperationHandler } from '../../platform/http/operation-handler.ts';
import { updateWebhook as update, type EndpointDeps } from '../endpoints.ts';

export function updateWebhook(deps: EndpointDeps & { wakeDeliveries: () => void }): OperationHandler<'updateWebhook'> {
  return async (request) => ({ status: 200, body: await update(deps, principalOf(request).lender.id, request.params.webhook_id, request.body) });
}
