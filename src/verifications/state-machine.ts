import type { FailureReason as ContractFailureReason } from '../../generated/events.ts';
import type { EventName } from '../platform/events/outbox.ts';

/**
 * The states and moves of section 3, as data. The service refuses any move not in this table
 * (nothing leaves `completed`, `failed`, `expired` or `cancelled`), and the conformance suite walks it.
 */
export const VERIFICATION_STATES = ['pending_consent', 'processing', 'completed', 'failed', 'expired', 'cancelled'] as const;
export type VerificationStatus = (typeof VERIFICATION_STATES)[number];

export const FAILURE_REASONS = ['platform_error', 'consent_revoked', 'timeout', 'consent_declined'] as const;
export type FailureReason = (typeof FAILURE_REASONS)[number];
// The reasons of the table and of the contract's events are the same set; a change to one alone fails here.
const sameReasons: [FailureReason, ContractFailureReason] extends [ContractFailureReason, FailureReason] ? true : never = true;
void sameReasons;

/** The events a move of the state table can emit (`tape.updated` is emitted by tape changes, not moves). */
export type TransitionEventName = Extract<EventName, 'verification.completed' | 'verification.failed' | 'verification.expired' | 'verification.cancelled'>;

export interface Transition {
  /** null: the verification is being created. */
  from: VerificationStatus | null;
  trigger:
    | 'created'
    | 'created_synthetic'
    | 'consent_completed'
    | 'tape_computed'
    | 'collection_failed'
    | 'consent_expired'
    | 'cancelled_by_lender'
    | 'consent_declined';
  to: VerificationStatus;
  /** The event the move emits, in the same transaction (D11, D14). */
  emits: TransitionEventName | null;
  /** A move to `failed`: the reasons it may set, and only those (its event's `reason` names the move). */
  reasons?: readonly FailureReason[];
  /** What the description says happens on this move; shown by the conformance suite. */
  description: string;
}

export const TRANSITIONS: readonly Transition[] = [
  {
    from: null,
    trigger: 'created',
    to: 'pending_consent',
    emits: null,
    description: 'valid request for a real creator: consent URL returned, 7-day consent session starts',
  },
  {
    from: null,
    trigger: 'created_synthetic',
    to: 'completed',
    emits: 'verification.completed',
    description: 'sandbox synthetic creator: tape available at once, no consent step',
  },
  {
    from: 'pending_consent',
    trigger: 'consent_completed',
    to: 'processing',
    emits: null,
    description: 'creator completes consent within 7 days: income data is fetched and analysed',
  },
  { from: 'processing', trigger: 'tape_computed', to: 'completed', emits: 'verification.completed', description: 'data fetched and tape computed' },
  {
    from: 'processing',
    trigger: 'collection_failed',
    to: 'failed',
    emits: 'verification.failed',
    reasons: ['platform_error', 'consent_revoked', 'timeout'],
    description: 'platform error, consent revoked before fetch, or processing window exceeded',
  },
  { from: 'pending_consent', trigger: 'consent_expired', to: 'expired', emits: 'verification.expired', description: '7 days pass without consent' },
  {
    from: 'pending_consent',
    trigger: 'cancelled_by_lender',
    to: 'cancelled',
    emits: 'verification.cancelled',
    description: 'the lender cancels before consent: the consent link says the request was withdrawn',
  },
  {
    from: 'pending_consent',
    trigger: 'consent_declined',
    to: 'failed',
    emits: 'verification.failed',
    reasons: ['consent_declined'],
    description: 'the creator declines on the consent page: reason consent_declined, nothing is read',
  },
];

export function findTransition(from: VerificationStatus | null, trigger: Transition['trigger']): Transition | undefined {
  return TRANSITIONS.find((transition) => transition.from === from && transition.trigger === trigger);
}

export class IllegalTransition extends Error {
  override name = 'IllegalTransition';
  constructor(
    readonly from: VerificationStatus | null,
    readonly trigger: Transition['trigger'],
  ) {
    super(`No move from ${from ?? '(creation)'} on ${trigger}`);
  }
}
