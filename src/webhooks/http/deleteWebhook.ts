import { principalOf, type OperationHandler } from '../../platform/http/operation-handler.ts';
import { removeWebhook, type EndpointDeps } from '../endpoints.ts';

export function deleteWebhook(deps: EndpointDeps): OperationHandler<'deleteWebhook'> {
  return async (request) => {
    await removeWebhook(deps, principalOf(request).lender.id, request.params.webhook_id);
    return { status: 204 };
  };
}
