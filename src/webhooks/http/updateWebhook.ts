import { principalOf, type OperationHandler } from '../../platform/http/operation-handler.ts';
import { updateWebhook as update } from '../endpoints.ts';
import type { WebhookHandlerDeps } from './handlers.ts';

export function updateWebhook(deps: WebhookHandlerDeps): OperationHandler<'updateWebhook'> {
  return async (request) => ({ status: 200, body: await update(deps, principalOf(request).lender.id, request.params.webhook_id, request.body) });
}
