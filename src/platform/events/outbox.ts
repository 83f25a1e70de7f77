import type { WebhookEvents } from '../../../generated/events.ts';
import type { UnitOfWork } from '../db/unit-of-work.ts';

/** The events of spec/asyncapi.yaml, by name. */
export type EventName = keyof WebhookEvents;
/** An event's body as the contract types it (generated/events.ts). */
export type EventBody<Name extends EventName = EventName> = NonNullable<WebhookEvents[Name]>;

/** An event as recorded in the outbox: its place in the order, and the exact bytes that are sent. */
export interface RecordedEvent {
  id: string;
  lenderId: string;
  verificationId: string;
  name: EventName;
  /** Outbox order: receivers get one verification's events in this order. */
  sequence: number;
  occurredAt: string;
  body: string;
}

/** Runs in the unit of work that records the event, so what it writes commits with the state change (D14). */
export type EventSubscriber = (event: RecordedEvent, unit: UnitOfWork) => Promise<void>;

/**
 * The hand-off from the feature that records events (verifications) to those that act on them
 * (webhooks): publishers and subscribers know this port, not each other.
 */
export class EventOutbox {
  private readonly subscribers: EventSubscriber[] = [];

  subscribe(subscriber: EventSubscriber): void {
    this.subscribers.push(subscriber);
  }

  async publish(event: RecordedEvent, unit: UnitOfWork): Promise<void> {
    for (const subscriber of this.subscribers) await subscriber(event, unit);
  }
}
