import { principalOf, type OperationHandler } from '../../platform/http/operation-handler.ts';
import { listEndpointDeliveries, replayDelivery, toDeliveryResource } from '../deliveries.ts';
import {
  getWebhook as get,
  listWebhooks as list,
  registerWebhook,
  removeWebhook,
  rotateWebhookSecret as rotate,
  sendTestEvent,
  type EndpointDeps,
  type PostToEndpoint,
} from '../endpoints.ts';

export interface WebhookHandlerDeps extends EndpointDeps {
  wakeDeliveries: () => void;
  post: PostToEndpoint;
}

export function createWebhook(deps: WebhookHandlerDeps): OperationHandler<'createWebhook'> {
  return async (request) => ({ status: 201, body: await registerWebhook(deps, principalOf(request).lender.id, request.body) });
}

export function listWebhooks(deps: WebhookHandlerDeps): OperationHandler<'listWebhooks'> {
  return async (request) => ({ status: 200, body: await list(deps, principalOf(request).lender.id, request.query ?? {}) });
}

export function getWebhook(deps: WebhookHandlerDeps): OperationHandler<'getWebhook'> {
  return async (request) => ({ status: 200, body: await get(deps, principalOf(request).lender.id, request.params.webhook_id) });
}

export function rotateWebhookSecret(deps: WebhookHandlerDeps): OperationHandler<'rotateWebhookSecret'> {
  return async (request) => ({
    status: 200,
    body: await rotate(deps, principalOf(request).lender.id, request.params.webhook_id, request.body?.overlap_seconds),
  });
}

export function sendWebhookTest(deps: WebhookHandlerDeps): OperationHandler<'sendWebhookTest'> {
  return async (request) => ({ status: 200, body: await sendTestEvent(deps, principalOf(request).lender.id, request.params.webhook_id) });
}

export function deleteWebhook(deps: WebhookHandlerDeps): OperationHandler<'deleteWebhook'> {
  return async (request) => {
    await removeWebhook(deps, principalOf(request).lender.id, request.params.webhook_id);
    return { status: 204 };
  };
}

export function listWebhookDeliveries(deps: WebhookHandlerDeps): OperationHandler<'listWebhookDeliveries'> {
  return async (request) => {
    const { deliveries, hasMore } = await listEndpointDeliveries(deps, principalOf(request).lender.id, request.params.webhook_id, request.query);
    return { status: 200, body: { data: deliveries.map(toDeliveryResource), has_more: hasMore } };
  };
}

export function replayWebhookDelivery(deps: WebhookHandlerDeps): OperationHandler<'replayWebhookDelivery'> {
  return async (request) => {
    const replayDeps = { webhooks: deps.webhooks, now: deps.now, wake: deps.wakeDeliveries };
    return { status: 202, body: await replayDelivery(replayDeps, principalOf(request).lender.id, request.params.webhook_id, request.params.delivery_id) };
  };
}
