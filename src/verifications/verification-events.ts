import type { EventBody } from '../platform/events/outbox.ts';
import type { FailureReason, TransitionEventName } from './state-machine.ts';

interface EventSubject {
  verificationId: string;
  obligorReference: string;
}

/**
 * The body of the event a move emits, typed by the contract (generated/events.ts): D13's flat form
 * of section 6.1 plus `event_id`, and `data` repeating the verification fields.
 */
export function transitionEvent(
  name: TransitionEventName,
  eventId: string,
  subject: EventSubject,
  occurredAt: string,
  reason: FailureReason | undefined,
): EventBody<TransitionEventName> {
  const ids = { verification_id: subject.verificationId, obligor_reference: subject.obligorReference };
  switch (name) {
    case 'verification.completed':
      return { event: name, event_id: eventId, ...ids, occurred_at: occurredAt, data: { ...ids, status: 'completed' } };
    case 'verification.expired':
      return { event: name, event_id: eventId, ...ids, occurred_at: occurredAt, data: { ...ids, status: 'expired' } };
    case 'verification.failed':
      if (!reason) throw new Error('verification.failed needs a reason');
      return { event: name, event_id: eventId, ...ids, reason, occurred_at: occurredAt, data: { ...ids, status: 'failed', reason } };
  }
}
