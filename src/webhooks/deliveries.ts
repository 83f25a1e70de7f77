import { randomUUID } from 'node:crypto';
import type { components } from '../../generated/api.ts';
import { DomainError } from '../platform/domain-error.ts';
import type { EventOutbox } from '../platform/events/outbox.ts';
import { instant, oneCursor } from '../platform/list-query.ts';
import { requireEndpoint } from './endpoints.ts';
import type { Delivery, WebhooksRepository } from './webhooks-repository.ts';

type DeliveryResource = components['schemas']['Delivery'];

/**
 * Subscribes the webhooks to the outbox: one delivery per subscribed endpoint, written in the unit
 * of work that records the event, so a delivery exists exactly when the state change commits
 * (D14); the sender is woken once it has.
 */
export function deliverEventsToWebhooks(outbox: EventOutbox, webhooks: WebhooksRepository, wake: () => void): void {
  outbox.subscribe(async (event, unit) => {
    const endpoints = await webhooks.subscribedEndpoints(unit, event.lenderId, event.name);
    if (endpoints.length === 0) return;
    await webhooks.insertEventDeliveries(
      unit,
      event,
      endpoints.map((endpoint) => ({
        id: randomUUID(),
        webhookId: endpoint.id,
        lenderId: event.lenderId,
        eventId: event.id,
        eventName: event.name,
        verificationId: event.verificationId,
        eventSequence: event.sequence,
        replayOf: null,
        createdAt: event.occurredAt,
      })),
      event.occurredAt,
    );
    unit.afterCommit(wake);
  });
}

export function toDeliveryResource(delivery: Delivery): DeliveryResource {
  return {
    delivery_id: delivery.id,
    webhook_id: delivery.webhookId,
    event_id: delivery.eventId,
    event: delivery.eventName as DeliveryResource['event'],
    verification_id: delivery.verificationId,
    status: delivery.status,
    attempts: delivery.attempts.map((a) => ({
      attempt: a.attempt,
      attempted_at: a.attemptedAt,
      status_code: a.statusCode,
      duration_ms: a.durationMs,
      error: a.error,
    })),
    next_attempt_at: delivery.nextAttemptAt,
    replay_of: delivery.replayOf,
    created_at: delivery.createdAt,
  };
}

/** GET /webhooks/{id}/deliveries: the endpoint's delivery log, newest first, each with its attempts. */
export async function listEndpointDeliveries(
  deps: { webhooks: WebhooksRepository },
  lenderId: string,
  webhookId: string,
  query: { limit?: number; starting_after?: string; ending_before?: string; status?: string[]; created_gte?: string; created_lt?: string },
): Promise<{ deliveries: Delivery[]; hasMore: boolean }> {
  const endpoint = await requireEndpoint(deps, lenderId, webhookId);
  oneCursor(query);
  const limit = Math.min(Math.max(query.limit ?? 20, 1), 100);
  const page = await deps.webhooks.listDeliveries(endpoint.id, limit, {
    startingAfter: query.starting_after,
    endingBefore: query.ending_before,
    status: query.status,
    createdGte: instant(query.created_gte, 'created_gte'),
    createdLt: instant(query.created_lt, 'created_lt'),
  });
  // Refused like the verification list's cursor: an empty page would read as the end of the log.
  if ('refused' in page) {
    const cursor = page.refused === 'starting_after' ? query.starting_after : query.ending_before;
    throw new DomainError('invalid', `${page.refused}: no delivery ${cursor} in this endpoint's log`, `query.${page.refused}`);
  }
  return page;
}

/** POST .../deliveries/{id}/replay (D14): the same event again, as a new delivery with its own id. */
export async function replayDelivery(
  deps: { webhooks: WebhooksRepository; now: () => Date; wake: () => void },
  lenderId: string,
  webhookId: string,
  deliveryId: string,
): Promise<DeliveryResource> {
  const endpoint = await requireEndpoint(deps, lenderId, webhookId);
  if (!/^[0-9a-f-]{36}$/i.test(deliveryId)) throw new DomainError('not_found', `No delivery ${deliveryId} for webhook endpoint ${webhookId}.`);
  const original = await deps.webhooks.findDelivery(endpoint.id, deliveryId);
  if (!original) throw new DomainError('not_found', `No delivery ${deliveryId} for webhook endpoint ${webhookId}.`);
  if (original.status === 'pending') {
    throw new DomainError('refused', `Delivery ${deliveryId} is still being attempted; replay it once it has succeeded or failed.`);
  }
  const now = deps.now().toISOString();
  const replay = {
    id: randomUUID(),
    webhookId,
    lenderId: original.lenderId,
    eventId: original.eventId,
    eventName: original.eventName,
    verificationId: original.verificationId,
    eventSequence: original.eventSequence,
    replayOf: original.id,
    createdAt: now,
  };
  const { held } = await deps.webhooks.insertReplay(replay, now);
  if (!held) deps.wake();
  return toDeliveryResource({ ...replay, status: 'pending', attempts: [], nextAttemptAt: held ? null : now });
}
