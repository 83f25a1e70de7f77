import { createHash } from 'node:crypto';
import { computeTape } from '../tape/index.ts';
import { JOB_KINDS, moveVerification, sandboxTapeInput, type LifecycleDeps } from '../verifications/lifecycle.ts';
import type { VerificationRecord } from '../verifications/verifications-repository.ts';

export type Platform = VerificationRecord['creatorPlatforms'][number];

export interface ConsentDeps extends LifecycleDeps {
  /** D18: how long data collection may take after consent before the verification fails with `timeout`. */
  processingWindowMs: number;
}

/** What a consent link shows. Unknown, expired and finished links say so and reveal nothing else. */
export type ConsentSession =
  | { kind: 'unknown' }
  | { kind: 'expired' | 'finished'; verification: VerificationRecord }
  | { kind: 'open'; verification: VerificationRecord; connections: Map<string, string> };

export class ConsentRefused extends Error {
  override name = 'ConsentRefused';
  constructor(
    readonly reason: 'already_connected' | 'not_requested' | 'nothing_connected' | 'closed',
    message: string,
  ) {
    super(message);
  }
}

export const hashConsentToken = (token: string): string => createHash('sha256').update(token).digest('hex');

export async function openConsentSession(deps: ConsentDeps, token: string): Promise<ConsentSession> {
  if (!/^[A-Za-z0-9]{20,100}$/.test(token)) return { kind: 'unknown' };
  const found = await deps.verifications.findByConsentTokenHash(hashConsentToken(token));
  if (!found) return { kind: 'unknown' };
  const { record, connections } = found;
  if (record.status === 'expired' || (record.status === 'pending_consent' && new Date(record.expiresAt) <= deps.now())) {
    return { kind: 'expired', verification: record };
  }
  if (record.status !== 'pending_consent') return { kind: 'finished', verification: record };
  return { kind: 'open', verification: record, connections };
}

async function requireOpen(deps: ConsentDeps, token: string) {
  const session = await openConsentSession(deps, token);
  if (session.kind !== 'open') throw new ConsentRefused('closed', 'This consent link is no longer open.');
  return session;
}

/**
 * The sandbox's simulated provider step (D10: no real OAuth): the creator allows or refuses access
 * on a page the service shows in place of the provider's. Allowing connects the platform.
 */
export async function decideSandboxConnection(deps: ConsentDeps, token: string, platform: Platform, allow: boolean): Promise<void> {
  const { verification, connections } = await requireOpen(deps, token);
  if (!verification.creatorPlatforms.includes(platform)) {
    throw new ConsentRefused('not_requested', `The lender did not ask for ${platform}.`);
  }
  if (connections.get(platform) === 'connected') {
    throw new ConsentRefused('already_connected', `${platform} is already connected for this verification.`);
  }
  if (!allow) return;
  await deps.verifications.transaction((store) =>
    store.setConnections(verification.id, [{ platform, status: 'connected' }], deps.now().toISOString()),
  );
}

/** The final step: consent moves the verification to `processing` and schedules the collection and its window. */
export async function completeConsent(deps: ConsentDeps, token: string): Promise<void> {
  const { verification, connections } = await requireOpen(deps, token);
  if (![...connections.values()].includes('connected')) {
    throw new ConsentRefused('nothing_connected', 'Connect at least one platform before giving consent.');
  }
  const now = deps.now();
  await deps.verifications.transaction(async (store) => {
    const current = await store.lock(verification.id);
    if (!current || current.status !== 'pending_consent') throw new ConsentRefused('closed', 'This consent link is no longer open.');
    await moveVerification(store, current, 'consent_completed', { at: now });
    await store.enqueue({ kind: JOB_KINDS.collectIncome, subjectId: verification.id, runAt: now, payload: { lenderId: verification.lenderId } }, now);
    await store.enqueue({ kind: JOB_KINDS.processingWindow, subjectId: verification.id, runAt: new Date(now.getTime() + deps.processingWindowMs) }, now);
  });
}

/**
 * Job: fetch the income and score it. In the sandbox the income is synthetic, for the platforms
 * the creator connected; a requested platform left unconnected becomes an ND code in the tape.
 */
export async function collectIncome(deps: ConsentDeps, job: { verificationId: string; lenderId: string }, now: Date): Promise<void> {
  // Only the sandbox can get here today: production connections need the providers' OAuth.
  if (deps.config.mode !== 'sandbox') throw new Error('income collection from the providers is not available yet');
  const profile = await deps.scoringProfileOf(job.lenderId);
  await deps.verifications.transaction(async (store) => {
    const verification = await store.lock(job.verificationId);
    if (!verification || verification.status !== 'processing') return;
    const resource = await store.resource(verification);
    const connected = new Set(resource.platform_connections.filter((c) => c.status === 'connected').map((c) => c.platform));
    const tape = computeTape(sandboxTapeInput(verification, profile, now, connected), { now });
    await moveVerification(store, verification, 'tape_computed', { at: now, tape });
  });
}

/** Job: D18, the processing window ended; a verification still processing fails with `timeout`. */
export async function enforceProcessingWindow(deps: ConsentDeps, verificationId: string, now: Date): Promise<void> {
  await deps.verifications.transaction(async (store) => {
    const verification = await store.lock(verificationId);
    if (!verification || verification.status !== 'processing') return;
    await moveVerification(store, verification, 'collection_failed', { at: now, reason: 'timeout' });
  });
}
