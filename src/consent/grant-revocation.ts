import { decryptSecret, encryptSecret } from '../platform/crypto.ts';
import type { UnitOfWork } from '../platform/db/unit-of-work.ts';
import { newId } from '../platform/ids.ts';
import type { JobHandlers } from '../platform/jobs/job-queue.ts';
import type { Logger } from '../platform/logger.ts';
import type { Platform } from '../verifications/verification-lifecycle.ts';
import type { ConsentJobPayloads } from './consent-jobs.ts';
import type { ConsentRepository, StoredGrant } from './consent-repository.ts';
import type { PlatformProvider } from './providers.ts';

export interface GrantRevocationDeps {
  consent: ConsentRepository;
  providers: Partial<Record<Platform, PlatformProvider>>;
  encryptionKey: Buffer;
  logger: Logger;
  now: () => Date;
}

/** How long one revocation may take at erasure time; a slower provider is retried later instead. */
const REVOCATION_TIMEOUT_MS = 10_000;

async function revoke(deps: GrantRevocationDeps, grant: StoredGrant): Promise<void> {
  const provider = deps.providers[grant.platform as Platform];
  if (!provider) throw new Error(`${grant.platform} is not configured on this deployment`);
  const decrypt = (ciphertext: string | null) => (ciphertext ? decryptSecret(deps.encryptionKey, ciphertext) : null);
  const call = provider.revoke({
    accessToken: decrypt(grant.accessTokenCiphertext) ?? '',
    refreshToken: decrypt(grant.refreshTokenCiphertext),
    externalAccountId: grant.externalAccountId,
  });
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer from ${grant.platform} in ${REVOCATION_TIMEOUT_MS} ms`)), REVOCATION_TIMEOUT_MS);
  });
  try {
    await Promise.race([call, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** A grant the provider did not revoke now, to be kept (encrypted) and retried. */
export interface RefusedRevocation {
  grant: StoredGrant;
  error: string;
}

/**
 * Revokes the creator's grants at the providers before their tokens are erased (Google token
 * revocation, Stripe Connect deauthorization). A refusal never blocks the erasure: it is returned,
 * for `keepForRetry` to record in the erasure's unit of work.
 */
export async function revokeGrants(deps: GrantRevocationDeps, grants: StoredGrant[]): Promise<{ revoked: number; refused: RefusedRevocation[] }> {
  let revoked = 0;
  const refused: RefusedRevocation[] = [];
  for (const grant of grants) {
    try {
      await revoke(deps, grant);
      revoked++;
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      deps.logger.warn({ platform: grant.platform, error: message }, 'provider grant revocation refused; will retry');
      refused.push({ grant, error: message });
    }
  }
  return { revoked, refused };
}

/** Records refused revocations in the erasure's unit of work, each with a retry job. */
export async function keepForRetry(deps: GrantRevocationDeps, unit: UnitOfWork, refused: RefusedRevocation[]): Promise<void> {
  for (const { grant, error } of refused) {
    await deps.consent.recordPendingRevocation(unit, {
      id: newId('rvk'),
      platform: grant.platform,
      accessTokenCiphertext: grant.accessTokenCiphertext,
      refreshTokenCiphertext: grant.refreshTokenCiphertext,
      // The account id names the creator at the provider: kept encrypted like the tokens.
      externalAccountIdCiphertext: grant.externalAccountId ? encryptSecret(deps.encryptionKey, grant.externalAccountId) : null,
      lastError: error,
      createdAt: deps.now().toISOString(),
    });
  }
}

/** The retry job: revoke again; on success nothing of the grant is left. A failure is recorded and the job runner retries with backoff. */
export function grantRevocationJobs(deps: GrantRevocationDeps): JobHandlers<ConsentJobPayloads> {
  return {
    'consent.revoke_grant': async (job) => {
      const pending = await deps.consent.findPendingRevocation(job.payload.revocationId);
      if (!pending) return;
      const grant: StoredGrant = {
        platform: pending.platform,
        accessTokenCiphertext: pending.accessTokenCiphertext,
        refreshTokenCiphertext: pending.refreshTokenCiphertext,
        externalAccountId: pending.externalAccountIdCiphertext ? decryptSecret(deps.encryptionKey, pending.externalAccountIdCiphertext) : null,
      };
      try {
        await revoke(deps, grant);
      } catch (error) {
        await deps.consent.recordRevocationFailure(pending.id, error instanceof Error ? error.message : String(error));
        throw error;
      }
      await deps.consent.completeRevocation(pending.id);
    },
    // After monitoring ended (P33): each grant still held is revoked and its tokens forgotten; a
    // refusal fails the job, which the runner retries with backoff (the grants revoked stay so).
    'consent.end_grants': async (job) => {
      const grants = await deps.consent.grantsOf([job.subjectId]);
      const { refused } = await revokeGrants(deps, grants);
      const at = deps.now().toISOString();
      for (const grant of grants) if (!refused.some((r) => r.grant === grant)) await deps.consent.forgetTokens(job.subjectId, grant.platform, at);
      if (refused.length > 0) throw new Error(`${refused.map((r) => `${r.grant.platform}: ${r.error}`).join('; ')}`);
    },
  };
}
