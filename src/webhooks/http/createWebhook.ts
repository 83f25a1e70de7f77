import { principalOf, type OperationHandler } from '../../platform/http/operation-handler.ts';
import { registerWebhook, type EndpointDeps } from '../endpoints.ts';

export function createWebhook(deps: EndpointDeps): OperationHandler<'createWebhook'> {
  return async (request) => ({ status: 201, body: await registerWebhook(deps, principalOf(request).lender.id, request.body) });
}
