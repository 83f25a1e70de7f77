import { principalOf, type OperationHandler } from '../../platform/http/operation-handler.ts';
import { rotateWebhookSecret as rotate, type EndpointDeps } from '../endpoints.ts';

export function rotateWebhookSecret(deps: EndpointDeps): OperationHandler<'rotateWebhookSecret'> {
  return async (request) => ({
    status: 200,
    body: await rotate(deps, principalOf(request).lender.id, request.params.webhook_id, request.body?.overlap_seconds),
  });
}
