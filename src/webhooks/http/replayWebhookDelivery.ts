import { principalOf, type OperationHandler } from '../../platform/http/operation-handler.ts';
import { replayDelivery } from '../deliveries.ts';
import type { EndpointDeps } from '../endpoints.ts';

export function replayWebhookDelivery(
  deps: Pick<EndpointDeps, 'webhooks' | 'now'> & { wakeDeliveries: () => void },
): OperationHandler<'replayWebhookDelivery'> {
  return async (request) => {
    const replayDeps = { webhooks: deps.webhooks, now: deps.now, wake: deps.wakeDeliveries };
    return { status: 202, body: await replayDelivery(replayDeps, principalOf(request).lender.id, request.params.webhook_id, request.params.delivery_id) };
  };
}
