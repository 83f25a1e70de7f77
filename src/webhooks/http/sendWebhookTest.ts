import { principalOf, type OperationHandler } from '../../platform/http/operation-handler.ts';
import { sendTestEvent, type EndpointDeps, type PostToEndpoint } from '../endpoints.ts';

export function sendWebhookTest(deps: EndpointDeps & { post: PostToEndpoint }): OperationHandler<'sendWebhookTest'> {
  return async (request) => ({ status: 200, body: await sendTestEvent(deps, principalOf(request).lender.id, request.params.webhook_id) });
}
