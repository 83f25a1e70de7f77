import type { components } from '../../generated/api.ts';
import { emailIndex } from '../consent/consent-flow.ts';
import type { ConsentRepository } from '../consent/consent-repository.ts';
import { keepForRetry, revokeGrants, type GrantRevocationDeps } from '../consent/grant-revocation.ts';
import { decryptSecret } from '../platform/crypto.ts';
import { DomainError } from '../platform/domain-error.ts';
import { newId } from '../platform/ids.ts';
import type { Principal } from '../platform/principal.ts';
import type { VerificationLifecycle } from '../verifications/verification-lifecycle.ts';
import type { VerificationRecord } from '../verifications/verifications-repository.ts';
import type { WebhooksRepository } from '../webhooks/webhooks-repository.ts';
import type { GdprOperation, GdprRepository } from './gdpr-repository.ts';
import type { StorageRepository } from './storage-repository.ts';
import { processingNotice } from './processing-notice.ts';

type Schemas = components['schemas'];
export type DataSubject = Schemas['GdprSubject'];
export type AccessReport = Schemas['GdprAccessReport'];
export type ErasureReceipt = Schemas['GdprErasureReceipt'];

export interface DataSubjectDeps {
  lifecycle: VerificationLifecycle;
  consent: ConsentRepository;
  webhooks: Pick<WebhooksRepository, 'deliveriesOf'>;
  audit: GdprRepository;
  storage: Pick<StorageRepository, 'truncateWriteAheadLog'>;
  revocation: GrantRevocationDeps;
  encryptionKey: Buffer;
  now: () => Date;
}

export const EXPORT_FORMAT = 'creator-income-export/1';

const identifierKinds = (subject: DataSubject) => (['email', 'obligor_id'] as const).filter((kind) => subject[kind] !== undefined);

/**
 * The creator's verifications in the caller's lender account (only that account is searched):
 * those with the obligor reference, and those whose connected account has the email (P19). Both
 * given and naming different creators is refused rather than guessed at.
 */
async function findSubject(deps: DataSubjectDeps, lenderId: string, subject: DataSubject, where: 'query' | 'body'): Promise<VerificationRecord[]> {
  if (subject.email === undefined && subject.obligor_id === undefined) {
    throw new DomainError('invalid', 'identify the creator by email or obligor_id (at least one)', where);
  }
  const byObligor = subject.obligor_id === undefined ? [] : await deps.lifecycle.findForObligor(lenderId, subject.obligor_id);
  const byEmail =
    subject.email === undefined
      ? []
      : await deps.lifecycle.findOwned(lenderId, await deps.consent.verificationIdsByEmailIndex(emailIndex(deps.encryptionKey, subject.email)));
  if (subject.obligor_id !== undefined && byEmail.some((v) => v.obligorReference !== subject.obligor_id)) {
    throw new DomainError('invalid', 'email and obligor_id identify different creators; send one of them', where);
  }
  const found = new Map([...byObligor, ...byEmail].map((v) => [v.id, v]));
  if (found.size === 0) throw new DomainError('not_found', 'No data is held for this creator in this lender account.');
  return [...found.values()].sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id));
}

function consentSessionOf(verification: VerificationRecord, now: Date): Schemas['GdprConsentSession'] {
  const open = verification.status === 'pending_consent' && new Date(verification.expiresAt) > now;
  const expired = verification.status === 'expired' || (verification.status === 'pending_consent' && !open);
  return { state: open ? 'open' : expired ? 'expired' : 'closed', expires_at: verification.expiresAt };
}

async function report(deps: DataSubjectDeps, principal: Principal, subject: DataSubject, where: 'query' | 'body'): Promise<AccessReport> {
  const verifications = await findSubject(deps, principal.lender.id, subject, where);
  const ids = verifications.map((v) => v.id);
  const connections = await deps.consent.connectionsOf(ids);
  const deliveries = await deps.webhooks.deliveriesOf(ids);
  const now = deps.now();
  const records: Schemas['GdprVerificationRecord'][] = [];
  for (const verification of verifications) {
    const held = await deps.lifecycle.heldAbout(verification);
    records.push({
      verification: held.resource,
      consent_session: consentSessionOf(verification, now),
      state_history: held.transitions.map((t) => ({
        from: t.from as Schemas['VerificationStatus'] | null,
        to: t.to as Schemas['VerificationStatus'],
        trigger: t.trigger,
        reason: t.reason,
        at: t.at,
      })),
      platform_connections: connections
        .filter((c) => c.verificationId === verification.id)
        .map((c) => ({
          platform: c.platform as Schemas['Platform'],
          status: c.status,
          account_id: c.externalAccountId,
          account_email: c.emailCiphertext ? decryptSecret(deps.encryptionKey, c.emailCiphertext) : null,
          scopes: c.scopes,
          connected_at: c.connectedAt,
          revoked_at: c.revokedAt,
        })),
      income: held.income.map((r) => ({
        platform: r.platform as Schemas['Platform'],
        month: r.month,
        amount_eur: r.amountEur,
        source_currency: r.sourceCurrency,
        source_amount: r.sourceAmount,
      })),
      tapes: held.tapes,
      overlays: held.overlays.map((overlay) => ({ ...overlay, verification_id: verification.id })),
      webhook_events: held.events.map((e) => ({
        event_id: e.id,
        event: e.name as Schemas['EventName'],
        created_at: e.occurredAt,
        payload: e.payload as Record<string, unknown>,
      })),
      webhook_deliveries: deliveries
        .filter((d) => d.verificationId === verification.id)
        .map((d) => ({
          delivery_id: d.id,
          webhook_id: d.webhookId,
          event_id: d.eventId,
          event: d.eventName as Schemas['EventName'],
          status: d.status,
          attempts: d.attempts.length,
          attempt_log: d.attempts.map((a) => ({
            attempt: a.attempt,
            attempted_at: a.attemptedAt,
            status_code: a.statusCode,
            duration_ms: a.durationMs,
            error: a.error,
            response_snippet: a.responseSnippet,
          })),
          next_attempt_at: d.nextAttemptAt,
          replay_of: d.replayOf,
          created_at: d.createdAt,
        })),
    });
  }
  const echo: DataSubject = {};
  if (subject.email !== undefined) echo.email = subject.email;
  if (subject.obligor_id !== undefined) echo.obligor_id = subject.obligor_id;
  return { subject: echo, generated_at: now.toISOString(), processing: processingNotice(principal.lender.name), verifications: records };
}

async function audited(deps: DataSubjectDeps, principal: Principal, operation: GdprOperation, subject: DataSubject, result: AccessReport): Promise<void> {
  await deps.audit.record({
    lenderId: principal.lender.id,
    keyId: principal.keyId,
    operation,
    at: deps.now().toISOString(),
    identifierKinds: identifierKinds(subject),
    counts: { verifications: result.verifications.length },
    receiptId: null,
  });
}

/** GET /gdpr/access (4.8): everything held for the creator, grouped by verification. */
export async function accessReport(deps: DataSubjectDeps, principal: Principal, subject: DataSubject): Promise<AccessReport> {
  const result = await report(deps, principal, subject, 'query');
  await audited(deps, principal, 'access', subject, result);
  return result;
}

/** GET /gdpr/export (4.8): the same content as a portable document. */
export async function exportReport(deps: DataSubjectDeps, principal: Principal, subject: DataSubject): Promise<Schemas['GdprExport']> {
  const result = await report(deps, principal, subject, 'query');
  await audited(deps, principal, 'export', subject, result);
  return { export_format: EXPORT_FORMAT, exported_at: result.generated_at, report: result };
}

/**
 * POST /gdpr/erase (4.8): revoke the creator's platform grants, then erase every row about them in
 * one unit of work with its audit record. A crash before the commit leaves everything in place (a
 * retry revokes again, harmlessly, and erases); after it, nothing is left. On SQLite the write-ahead
 * log is then copied into the database file and cut to zero bytes before the receipt is returned.
 */
export async function eraseSubject(deps: DataSubjectDeps, principal: Principal, subject: DataSubject): Promise<ErasureReceipt> {
  const verifications = await findSubject(deps, principal.lender.id, subject, 'body');
  const ids = verifications.map((v) => v.id);
  const revocations = await revokeGrants(deps.revocation, await deps.consent.grantsOf(ids));
  const receiptId = newId('ers');
  const erasedAt = deps.now().toISOString();
  const counts = await deps.lifecycle.erase(principal.lender.id, ids, async (unit, erased) => {
    await keepForRetry(deps.revocation, unit, revocations.refused);
    await deps.audit.recordIn(unit, {
      lenderId: principal.lender.id,
      keyId: principal.keyId,
      operation: 'erase',
      at: erasedAt,
      identifierKinds: identifierKinds(subject),
      counts: { ...erased, provider_grants_revoked: revocations.revoked, provider_grants_pending_revocation: revocations.refused.length },
      receiptId,
    });
  });
  // Another erasure of the same creator committed first.
  if (!counts) throw new DomainError('not_found', 'No data is held for this creator in this lender account.');
  // Before the answer: a crash right after it must not find the erased rows' old pages on disk.
  await deps.storage.truncateWriteAheadLog();
  const count = (name: string) => counts[name] ?? 0;
  return {
    receipt_id: receiptId,
    erased_at: erasedAt,
    identifiers: identifierKinds(subject),
    counts: {
      verifications: count('verifications'),
      tapes: count('tapes'),
      overlays: count('overlays'),
      platform_connections: count('platform_connections'),
      oauth_tokens: count('oauth_tokens'),
      income_records: count('income_records'),
      webhook_events: count('webhook_events'),
      webhook_deliveries: count('webhook_deliveries'),
      idempotency_records: count('idempotency_records'),
      pending_jobs: count('pending_jobs'),
      provider_grants_revoked: revocations.revoked,
      provider_grants_pending_revocation: revocations.refused.length,
    },
  };
}
