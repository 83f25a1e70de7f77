import { createHash } from 'node:crypto';
import type { RiskTape200 } from '../../generated/tape.ts';
import type { Principal } from '../accounts/model.ts';
import type { Config } from '../platform/config.ts';
import { newId, randomBase62 } from '../platform/ids.ts';
import { ApiError } from '../platform/http/error-catalogue.ts';
import { computeTape, isSyntheticCreator, syntheticTapeInput, type TapeInput } from '../tape/index.ts';
import { SANDBOX_TAPE_SOURCE, sandboxSteps, stepDelayMs } from './sandbox.ts';
import { findTransition, IllegalTransition, type FailureReason, type Transition } from './state-machine.ts';
import type { VerificationRecord, VerificationResource, VerificationsRepository, VerificationStore } from './verifications-repository.ts';

export const CONSENT_SESSION_MS = 7 * 24 * 60 * 60 * 1000;
export const IDEMPOTENCY_KEY_LIFETIME_MS = 24 * 60 * 60 * 1000;

export type CreateVerificationRequest = {
  obligor_reference: string;
  creator_platforms: VerificationResource['creator_platforms'];
  lender_name?: string;
  product_type?: VerificationResource['product_type'];
  declared_monthly_obligations_eur?: number;
};

export interface LifecycleDeps {
  verifications: VerificationsRepository;
  config: Pick<Config, 'mode' | 'publicBaseUrl' | 'sandboxCompleteDelayMs'>;
  now: () => Date;
  /** The lender's data-protection regime and per-product policy overrides (D9), which scoring needs. */
  scoringProfileOf: (lenderId: string) => Promise<ScoringProfile>;
}

export interface ScoringProfile {
  jurisdiction: Principal['lender']['jurisdiction'];
  policies: Record<string, Record<string, unknown>>;
}

/** Job kinds of the lifecycle; each handler re-checks the state, so a job that runs twice is harmless. */
export const JOB_KINDS = {
  expireConsent: 'verification.expire_consent',
  sandboxStep: 'verification.sandbox_step',
  collectIncome: 'verification.collect_income',
  processingWindow: 'verification.processing_window',
} as const;

/** Stable across key order and whitespace, so a retried request is recognised as the same payload. */
export function requestFingerprint(body: unknown): string {
  const canonical = (value: unknown): unknown =>
    Array.isArray(value)
      ? value.map(canonical)
      : value !== null && typeof value === 'object'
        ? Object.fromEntries(Object.keys(value).sort().map((k) => [k, canonical((value as Record<string, unknown>)[k])]))
        : value;
  return createHash('sha256').update(JSON.stringify(canonical(body))).digest('hex');
}

/**
 * Moves a verification along one row of the state table, with everything the move triggers (the
 * transition record and its event) in the caller's transaction. A move the table does not allow
 * throws IllegalTransition and the transaction rolls back.
 */
export async function moveVerification(
  store: VerificationStore,
  verification: Pick<VerificationRecord, 'id' | 'lenderId' | 'obligorReference' | 'status'> | null,
  trigger: Transition['trigger'],
  change: { at: Date; reason?: FailureReason; tape?: RiskTape200; subject?: Pick<VerificationRecord, 'id' | 'lenderId' | 'obligorReference'> },
): Promise<Transition> {
  const transition = findTransition(verification?.status ?? null, trigger);
  if (!transition) throw new IllegalTransition(verification?.status ?? null, trigger);
  const subject = verification ?? change.subject!;
  const at = change.at.toISOString();
  if (change.tape) await store.saveTape(subject.id, change.tape, at);
  await store.applyStatus(subject.id, transition, { at, reason: change.reason ?? null, tapeSchemaVersion: change.tape?.schema_version });
  if (transition.emits) {
    const eventId = newId('evt');
    const status = transition.to;
    const reason = change.reason;
    // D13: the flat form of 6.1, plus event_id and `data` repeating the verification fields.
    const payload = {
      event: transition.emits,
      event_id: eventId,
      verification_id: subject.id,
      obligor_reference: subject.obligorReference,
      ...(reason ? { reason } : {}),
      occurred_at: at,
      data: { verification_id: subject.id, obligor_reference: subject.obligorReference, status, ...(reason ? { reason } : {}) },
    };
    await store.recordEvent({ id: eventId, lenderId: subject.lenderId, verificationId: subject.id, name: transition.emits, payload, occurredAt: at });
  }
  return transition;
}

/**
 * Synthetic income for a sandbox verification: a synthetic creator's own series, otherwise
 * SANDBOX_TAPE_SOURCE's income for the requested platforms; a platform not in `connected` (when
 * given) has no data, as a creator who left it unconnected. The profile is read before any
 * transaction opens (SQLite has one writer connection).
 */
export function sandboxTapeInput(
  verification: VerificationRecord,
  { jurisdiction, policies }: ScoringProfile,
  now: Date,
  connected?: ReadonlySet<string>,
): TapeInput {
  const reference = verification.obligorReference;
  const input = syntheticTapeInput(isSyntheticCreator(reference) ? reference : SANDBOX_TAPE_SOURCE, {
    now,
    verificationId: verification.id,
    productType: verification.productType,
    jurisdiction,
    policyOverrides: policies[verification.productType],
    declaredMonthlyObligationsEur: verification.declaredMonthlyObligationsEur,
  });
  if (isSyntheticCreator(reference)) return input;
  return {
    ...input,
    obligorReference: verification.obligorReference,
    platforms: verification.creatorPlatforms.map((platform) => {
      const income = input.platforms.find((p) => p.platform === platform);
      return income && (!connected || connected.has(platform)) ? income : { platform, status: 'not_connected' as const, months: [] };
    }),
  };
}

async function createInStore(
  deps: LifecycleDeps,
  store: VerificationStore,
  principal: Principal,
  request: CreateVerificationRequest,
  profile: ScoringProfile,
): Promise<VerificationResource> {
  const now = deps.now();
  const consentToken = randomBase62(43);
  const record: VerificationRecord = {
    id: newId('vrf'),
    lenderId: principal.lender.id,
    obligorReference: request.obligor_reference,
    creatorPlatforms: request.creator_platforms,
    lenderName: request.lender_name ?? principal.lender.name,
    productType: request.product_type ?? 'rbf',
    declaredMonthlyObligationsEur: request.declared_monthly_obligations_eur ?? null,
    status: 'pending_consent',
    failureReason: null,
    // The URL carries an unguessable token, never the verification id; only its hash is stored.
    consentUrl: `${deps.config.publicBaseUrl}/consent/${consentToken}`,
    expiresAt: new Date(now.getTime() + CONSENT_SESSION_MS).toISOString(),
    createdAt: now.toISOString(),
    updatedAt: now.toISOString(),
    completedAt: null,
    tapeSchemaVersion: null,
  };
  const sandbox = deps.config.mode === 'sandbox';
  const synthetic = sandbox && isSyntheticCreator(record.obligorReference);
  const insertAs = (status: VerificationRecord['status'], connections: 'connected' | 'not_connected') =>
    store.insert(
      { ...record, status, consentTokenHash: createHash('sha256').update(consentToken).digest('hex') },
      record.creatorPlatforms.map((platform) => ({ platform, status: connections })),
    );

  if (synthetic) {
    // Section 3: a synthetic creator completes at creation, with its tape and its event.
    const tape = computeTape(sandboxTapeInput(record, profile, now), { now });
    await insertAs('completed', 'connected');
    await moveVerification(store, null, 'created_synthetic', { at: now, tape, subject: record });
  } else {
    await insertAs('pending_consent', 'not_connected');
    await moveVerification(store, null, 'created', { at: now, subject: record });
    const steps = sandbox ? sandboxSteps(record.obligorReference) : null;
    if (steps) {
      const runAt = new Date(now.getTime() + stepDelayMs(steps[0]!, deps.config.sandboxCompleteDelayMs));
      await store.enqueue({ kind: JOB_KINDS.sandboxStep, subjectId: record.id, runAt, payload: { step: 0, lenderId: record.lenderId } }, now);
    }
    await store.enqueue({ kind: JOB_KINDS.expireConsent, subjectId: record.id, runAt: new Date(record.expiresAt) }, now);
  }
  return store.resource((await store.lock(record.id))!);
}

/**
 * POST /verifications (4.1): creates exactly one verification per lender and Idempotency-Key.
 * The key claim, the verification, its first transition, jobs and event, and the stored answer all
 * commit in one transaction, so concurrent requests with one key create one verification.
 */
export async function createVerification(
  deps: LifecycleDeps,
  principal: Principal,
  idempotencyKey: string,
  request: CreateVerificationRequest,
): Promise<{ status: number; body: unknown; replayed: boolean }> {
  const fingerprint = requestFingerprint(request);
  const now = deps.now();
  const profile = await deps.scoringProfileOf(principal.lender.id);
  return deps.verifications.transaction(async (store) => {
    const previous = await store.claimIdempotencyKey(
      principal.lender.id,
      idempotencyKey.toLowerCase(),
      fingerprint,
      now.toISOString(),
      new Date(now.getTime() + IDEMPOTENCY_KEY_LIFETIME_MS).toISOString(),
    );
    if (previous) {
      if (previous.requestFingerprint !== fingerprint) {
        throw new ApiError('duplicate_request', `Idempotency-Key ${idempotencyKey} was already used with a different payload.`);
      }
      return { status: previous.responseStatus, body: previous.responseBody, replayed: true };
    }
    const resource = await createInStore(deps, store, principal, request, profile);
    await store.storeIdempotentResponse(principal.lender.id, idempotencyKey.toLowerCase(), 201, resource, resource.verification_id);
    return { status: 201, body: resource, replayed: false };
  });
}

/** Job: the 7-day consent session ended (section 3). No-op unless the verification still waits for consent. */
export async function expireConsent(deps: LifecycleDeps, verificationId: string, now: Date): Promise<void> {
  await deps.verifications.transaction(async (store) => {
    const verification = await store.lock(verificationId);
    if (!verification || verification.status !== 'pending_consent' || new Date(verification.expiresAt) > now) return;
    await moveVerification(store, verification, 'consent_expired', { at: now });
  });
}

/** Job: one step of a `test-` scenario (D11); schedules the next. Steps that no longer apply are skipped. */
export async function runSandboxStep(deps: LifecycleDeps, job: { verificationId: string; lenderId: string; step: number }, now: Date): Promise<void> {
  const { verificationId, step: stepIndex } = job;
  const profile = await deps.scoringProfileOf(job.lenderId);
  await deps.verifications.transaction(async (store) => {
    const verification = await store.lock(verificationId);
    const steps = verification ? sandboxSteps(verification.obligorReference) : null;
    const step = steps?.[stepIndex];
    if (!verification || !steps || !step || !findTransition(verification.status, step.trigger)) return;
    const tape = step.trigger === 'tape_computed' ? computeTape(sandboxTapeInput(verification, profile, now), { now }) : undefined;
    // The simulated creator connects every platform at consent; a failure marks them as the reason says.
    const connectionStatus =
      step.trigger === 'consent_completed' ? 'connected' : step.reason === 'platform_error' ? 'error' : step.reason === 'consent_revoked' ? 'revoked' : null;
    if (connectionStatus) {
      await store.setConnections(verification.id, verification.creatorPlatforms.map((platform) => ({ platform, status: connectionStatus })), now.toISOString());
    }
    await moveVerification(store, verification, step.trigger, { at: now, reason: step.reason, tape });
    const next = steps[stepIndex + 1];
    if (next) {
      // Timed from creation, so steps missed while the service was down all run as soon as it is back.
      const runAt = new Date(new Date(verification.createdAt).getTime() + stepDelayMs(next, deps.config.sandboxCompleteDelayMs));
      await store.enqueue({ kind: JOB_KINDS.sandboxStep, subjectId: verification.id, runAt, payload: { step: stepIndex + 1, lenderId: verification.lenderId } }, now);
    }
  });
}
