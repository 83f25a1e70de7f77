import type { EventBody } from '../platform/events/outbox.ts';
import type { MonitoringEndReason, TapeChanges } from './monitoring.ts';
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
    case 'verification.cancelled':
      return { event: name, event_id: eventId, ...ids, occurred_at: occurredAt, data: { ...ids, status: 'cancelled' } };
    case 'verification.failed':
      if (!reason) throw new Error('verification.failed needs a reason');
      return { event: name, event_id: eventId, ...ids, reason, occurred_at: occurredAt, data: { ...ids, status: 'failed', reason } };
  }
}

/** Why a completed verification's tape changed (tape.updated's `reason`). */
export type TapeChange = 'overlay_attached' | 'refresh';

/** The body of `tape.updated`: the verification stays `completed`, its tape changed. */
export function tapeUpdatedEvent(
  eventId: string,
  subject: EventSubject,
  schemaVersion: EventBody<'tape.updated'>['schema_version'],
  reason: TapeChange,
  occurredAt: string,
  tape: { tapeId: string; changes: TapeChanges },
): EventBody<'tape.updated'> {
  const ids = { verification_id: subject.verificationId, obligor_reference: subject.obligorReference };
  return {
    event: 'tape.updated',
    event_id: eventId,
    ...ids,
    schema_version: schemaVersion,
    reason,
    tape_id: tape.tapeId,
    changes: tape.changes,
    occurred_at: occurredAt,
    data: { ...ids, status: 'completed', schema_version: schemaVersion },
  };
}

/** The body of `verification.monitoring_ended` (P33). */
export function monitoringEndedEvent(
  eventId: string,
  subject: EventSubject,
  reason: MonitoringEndReason,
  occurredAt: string,
): EventBody<'verification.monitoring_ended'> {
  const ids = { verification_id: subject.verificationId, obligor_reference: subject.obligorReference };
  return { event: 'verification.monitoring_ended', event_id: eventId, ...ids, reason, occurred_at: occurredAt, data: { ...ids, reason } };
}

/** The body of `verification.refresh_failed` (P33): a refresh failed after its retries. */
export function refreshFailedEvent(
  eventId: string,
  subject: EventSubject,
  failedRefreshes: number,
  nextRefreshAt: string | null,
  occurredAt: string,
): EventBody<'verification.refresh_failed'> {
  const ids = { verification_id: subject.verificationId, obligor_reference: subject.obligorReference };
  const reason = 'platform_error';
  return {
    event: 'verification.refresh_failed',
    event_id: eventId,
    ...ids,
    reason,
    failed_refreshes: failedRefreshes,
    next_refresh_at: nextRefreshAt,
    occurred_at: occurredAt,
    data: { ...ids, reason, failed_refreshes: failedRefreshes },
  };
}
