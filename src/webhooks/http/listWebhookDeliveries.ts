import { principalOf, type OperationHandler } from '../../platform/http/operation-handler.ts';
import { listEndpointDeliveries, toDeliveryResource } from '../deliveries.ts';
import type { EndpointDeps } from '../endpoints.ts';

export function listWebhookDeliveries(deps: EndpointDeps): OperationHandler<'listWebhookDeliveries'> {
  return async (request) => {
    const { deliveries, hasMore } = await listEndpointDeliveries(deps, principalOf(request).lender.id, request.params.webhook_id, request.query);
    return { status: 200, body: { data: deliveries.map(toDeliveryResource), has_more: hasMore } };
  };
}
