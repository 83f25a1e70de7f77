import type { Knex } from 'knex';
import { namedStatement, runNamed } from '../platform/db/named-statements.ts';
import { transactionOf, type UnitOfWork } from '../platform/db/unit-of-work.ts';
import type { JobQueue } from '../platform/jobs/job-queue.ts';
import type { ConsentJobPayloads } from './consent-jobs.ts';

export interface OAuthRequest {
  verificationId: string;
  platform: string;
  codeVerifierCiphertext: string | null;
  consentTokenCiphertext: string;
  /** SHA-256 of the nonce in the cookie of the browser that began the round trip; null for requests older than the binding. */
  browserBindingHash: string | null;
  expiresAt: string;
}

export interface ConnectionWithTokens {
  platform: string;
  status: string;
  externalAccountId: string | null;
  accessTokenCiphertext: string | null;
  refreshTokenCiphertext: string | null;
  connectedAt: string | null;
}

/**
 * `saveSandboxAccounts`'s statement for one and for two platforms (a verification asks for each
 * platform at most once): a sandbox creation of a synthetic creator runs it, on the creation's
 * path, where the query builder's work cost more than the statement (docs/performance.md).
 */
const SAVE_SANDBOX_ACCOUNTS = new Map(
  [1, 2].map((count) => {
    const byPlatform = `case "platform" ${Array.from({ length: count }, () => 'when ? then ?').join(' ')} end`;
    const sql = `update "platform_connections" set "account_email_ciphertext" = ?, "account_email_index" = ?,
      "scopes" = ${byPlatform}, "external_account_id" = ${byPlatform}, "connected_at" = ${byPlatform}
      where "verification_id" = ? and "status" = 'connected' and "account_email_ciphertext" is null
        and "platform" in (${Array.from({ length: count }, () => '?').join(', ')})
      returning "platform"`;
    return [count, namedStatement(`save_sandbox_accounts_${count}`, sql)] as const;
  }),
);

interface OAuthRequestRow {
  state_hash: string;
  verification_id: string;
  platform: string;
  code_verifier_ciphertext: string | null;
  consent_token_ciphertext: string;
  browser_binding_hash: string | null;
  expires_at: string;
}

interface ConnectionRow {
  verification_id: string;
  platform: string;
  status: string;
  external_account_id: string | null;
  access_token_ciphertext: string | null;
  refresh_token_ciphertext: string | null;
  account_email: string | null;
  account_email_ciphertext: string | null;
  account_email_index: string | null;
  scopes: string | null;
  connected_at: string | null;
  revoked_at: string | null;
}

/** A connection as the data-protection report shows it: the email still encrypted, no tokens. */
export interface SubjectConnection {
  verificationId: string;
  platform: string;
  status: string;
  externalAccountId: string | null;
  emailCiphertext: string | null;
  scopes: string[];
  connectedAt: string | null;
  revokedAt: string | null;
}

/** What revoking a creator's grant at the provider needs; the tokens still encrypted. */
export interface StoredGrant {
  platform: string;
  externalAccountId: string | null;
  accessTokenCiphertext: string | null;
  refreshTokenCiphertext: string | null;
}

/** A grant kept for a retried revocation: everything that names the creator at the provider is sealed. */
export interface PendingRevocation {
  id: string;
  platform: string;
  accessTokenCiphertext: string | null;
  refreshTokenCiphertext: string | null;
  externalAccountIdCiphertext: string | null;
}

interface RevocationRow {
  id: string;
  platform: string;
  access_token_ciphertext: string | null;
  refresh_token_ciphertext: string | null;
  external_account_id_ciphertext: string | null;
  attempts: number;
  last_error: string | null;
  created_at: string;
}

/**
 * The only code that reads or writes the creator's side of a connection: pending OAuth requests,
 * and the account and tokens (encrypted before they arrive here) of each connected platform. The
 * connection's status as lenders see it is the lifecycle's; this repository sets it only when the
 * creator connects.
 */
export class ConsentRepository {
  constructor(
    private readonly knex: Knex,
    private readonly jobs: JobQueue,
  ) {}

  /** A creator's pending authorization at a provider: single use, bound to one consent session. */
  async insertOAuthRequest(request: OAuthRequest & { stateHash: string }): Promise<void> {
    await this.knex<OAuthRequestRow>('oauth_requests').insert({
      state_hash: request.stateHash,
      verification_id: request.verificationId,
      platform: request.platform,
      code_verifier_ciphertext: request.codeVerifierCiphertext,
      consent_token_ciphertext: request.consentTokenCiphertext,
      browser_binding_hash: request.browserBindingHash,
      expires_at: request.expiresAt,
    });
  }

  /** Reads and deletes the request, so a state is honoured once. */
  async takeOAuthRequest(stateHash: string): Promise<OAuthRequest | null> {
    return this.knex.transaction(async (trx) => {
      const row = await trx<OAuthRequestRow>('oauth_requests').where({ state_hash: stateHash }).first();
      if (!row) return null;
      await trx('oauth_requests').where({ state_hash: stateHash }).delete();
      return {
        verificationId: row.verification_id,
        platform: row.platform,
        codeVerifierCiphertext: row.code_verifier_ciphertext,
        consentTokenCiphertext: row.consent_token_ciphertext,
        browserBindingHash: row.browser_binding_hash,
        expiresAt: row.expires_at,
      };
    });
  }

  /**
   * Stores the account and tokens (encrypted before they arrive here) of a connection, in the unit
   * of work in which the lifecycle records the platform as connected under the verification's lock.
   */
  async saveGrant(
    unit: UnitOfWork,
    verificationId: string,
    platform: string,
    grant: {
      /** Encrypted, with its blind index: the plain address is never stored. */
      email: { ciphertext: string; index: string } | null;
      scopes: string[];
      externalAccountId: string | null;
      accessTokenCiphertext: string;
      refreshTokenCiphertext: string | null;
      connectedAt: string;
    },
  ): Promise<void> {
    const updated = await transactionOf(unit)<ConnectionRow>('platform_connections')
      .where({ verification_id: verificationId, platform })
      .update({
        account_email: null,
        account_email_ciphertext: grant.email?.ciphertext ?? null,
        account_email_index: grant.email?.index ?? null,
        scopes: JSON.stringify(grant.scopes),
        external_account_id: grant.externalAccountId,
        access_token_ciphertext: grant.accessTokenCiphertext,
        refresh_token_ciphertext: grant.refreshTokenCiphertext,
        connected_at: grant.connectedAt,
      });
    if (updated !== 1) throw new Error(`no connection of ${platform} to store the grant on`);
  }

  /**
   * A sandbox creation's synthetic accounts (P35), stored as a grant's account is but without
   * tokens (nothing is revoked at a provider for them), in one statement: the address the platforms
   * share, sealed once, and each platform's scopes, account id and connection time. Only connected
   * rows without an account take theirs, so a tape scored again changes nothing. Answers how many
   * did.
   */
  async saveSandboxAccounts(
    unit: UnitOfWork,
    verificationId: string,
    email: { ciphertext: string; index: string },
    accounts: ReadonlyArray<{ platform: string; scopes: string[]; externalAccountId: string | null; connectedAt: string }>,
  ): Promise<number> {
    if (accounts.length === 0) return 0;
    const statement = SAVE_SANDBOX_ACCOUNTS.get(accounts.length);
    if (!statement) throw new Error(`${accounts.length} sandbox accounts for one verification: a platform is listed twice`);
    const byPlatform = (value: (account: (typeof accounts)[number]) => string | null) => accounts.flatMap((account) => [account.platform, value(account)]);
    const rows = await runNamed(transactionOf(unit), statement, [
      email.ciphertext,
      email.index,
      ...byPlatform((account) => JSON.stringify(account.scopes)),
      ...byPlatform((account) => account.externalAccountId),
      ...byPlatform((account) => account.connectedAt),
      verificationId,
      ...accounts.map((account) => account.platform),
    ]);
    return rows.length;
  }

  async connectionsWithTokens(verificationId: string): Promise<ConnectionWithTokens[]> {
    const rows = await this.knex<ConnectionRow>('platform_connections').where({ verification_id: verificationId });
    return rows.map((r) => ({
      platform: r.platform,
      status: r.status,
      externalAccountId: r.external_account_id,
      accessTokenCiphertext: r.access_token_ciphertext,
      refreshTokenCiphertext: r.refresh_token_ciphertext,
      connectedAt: r.connected_at,
    }));
  }

  /** A grant's tokens renewed for a later read (P33), kept encrypted as at consent. */
  async replaceTokens(
    verificationId: string,
    platform: string,
    tokens: { accessTokenCiphertext: string; refreshTokenCiphertext: string | null },
  ): Promise<void> {
    await this.knex<ConnectionRow>('platform_connections')
      .where({ verification_id: verificationId, platform })
      .whereNotNull('access_token_ciphertext')
      .update({ access_token_ciphertext: tokens.accessTokenCiphertext, refresh_token_ciphertext: tokens.refreshTokenCiphertext });
  }

  /**
   * Connections stored before emails were encrypted keep them in plain text: encrypt and index
   * them, and clear the plain column. Runs at start-up; a second run finds nothing to do.
   */
  async protectPlainEmails(protect: (email: string) => { ciphertext: string; index: string }): Promise<number> {
    const rows = await this.knex<ConnectionRow>('platform_connections').whereNotNull('account_email').select('verification_id', 'platform', 'account_email');
    for (const row of rows) {
      const email = protect(row.account_email!);
      await this.knex<ConnectionRow>('platform_connections')
        .where({ verification_id: row.verification_id, platform: row.platform })
        .update({ account_email: null, account_email_ciphertext: email.ciphertext, account_email_index: email.index });
    }
    return rows.length;
  }

  /** The verifications whose connected account has this email, by its blind index. */
  async verificationIdsByEmailIndex(index: string): Promise<string[]> {
    const rows = await this.knex<ConnectionRow>('platform_connections').where({ account_email_index: index }).distinct('verification_id');
    return rows.map((r) => r.verification_id);
  }

  async connectionsOf(verificationIds: string[]): Promise<SubjectConnection[]> {
    if (verificationIds.length === 0) return [];
    const rows = await this.knex<ConnectionRow>('platform_connections').whereIn('verification_id', verificationIds).orderBy(['verification_id', 'platform']);
    return rows.map((r) => ({
      verificationId: r.verification_id,
      platform: r.platform,
      status: r.status,
      externalAccountId: r.external_account_id,
      emailCiphertext: r.account_email_ciphertext,
      scopes: r.scopes ? (JSON.parse(r.scopes) as string[]) : [],
      connectedAt: r.connected_at,
      revokedAt: r.revoked_at,
    }));
  }

  /** The grants (tokens) held for these verifications, to revoke at the providers before erasure. */
  async grantsOf(verificationIds: string[]): Promise<StoredGrant[]> {
    if (verificationIds.length === 0) return [];
    const rows = await this.knex<ConnectionRow>('platform_connections').whereIn('verification_id', verificationIds).whereNotNull('access_token_ciphertext');
    return rows.map((r) => ({
      platform: r.platform,
      externalAccountId: r.external_account_id,
      accessTokenCiphertext: r.access_token_ciphertext,
      refreshTokenCiphertext: r.refresh_token_ciphertext,
    }));
  }

  /** Erases the creator's side of these verifications in the erasure's unit of work: pending OAuth requests, connections and tokens. */
  async erase(unit: UnitOfWork, verificationIds: string[]): Promise<{ platform_connections: number; oauth_tokens: number }> {
    const trx = transactionOf(unit);
    const tokens = await trx('platform_connections')
      .whereIn('verification_id', verificationIds)
      .whereNotNull('access_token_ciphertext')
      .count<{ n: number | string }>({ n: '*' })
      .first();
    await trx('oauth_requests').whereIn('verification_id', verificationIds).delete();
    const connections = await trx('platform_connections').whereIn('verification_id', verificationIds).delete();
    return { platform_connections: connections, oauth_tokens: Number(tokens?.n ?? 0) };
  }

  /** A grant whose revocation the provider refused: kept (encrypted, with nothing else of the creator) until a retry succeeds. */
  /** Retries run as durable jobs, so a refused revocation survives restarts. */
  async recordPendingRevocation(unit: UnitOfWork, revocation: PendingRevocation & { lastError: string; createdAt: string }): Promise<void> {
    await transactionOf(unit)<RevocationRow>('provider_revocations').insert({
      id: revocation.id,
      platform: revocation.platform,
      access_token_ciphertext: revocation.accessTokenCiphertext,
      refresh_token_ciphertext: revocation.refreshTokenCiphertext,
      external_account_id_ciphertext: revocation.externalAccountIdCiphertext,
      attempts: 1,
      last_error: revocation.lastError.slice(0, 500),
      created_at: revocation.createdAt,
    });
    const payload: ConsentJobPayloads['consent.revoke_grant'] = { revocationId: revocation.id };
    const now = new Date(revocation.createdAt);
    await this.jobs.enqueue(
      transactionOf(unit),
      { kind: 'consent.revoke_grant' satisfies keyof ConsentJobPayloads, subjectId: revocation.id, runAt: now, payload },
      now,
    );
  }

  /** Monitoring ended (P33): in its unit of work, a job to revoke the verification's grants. */
  async scheduleGrantsEnd(unit: UnitOfWork, verificationId: string, now: Date): Promise<void> {
    const payload: ConsentJobPayloads['consent.end_grants'] = {};
    await this.jobs.enqueue(
      transactionOf(unit),
      { kind: 'consent.end_grants' satisfies keyof ConsentJobPayloads, subjectId: verificationId, runAt: now, payload },
      now,
    );
  }

  /** The grant of one platform was revoked at its provider: its tokens are of no use any more, and go. */
  async forgetTokens(verificationId: string, platform: string, at: string): Promise<void> {
    await this.knex<ConnectionRow>('platform_connections')
      .where({ verification_id: verificationId, platform })
      .update({ access_token_ciphertext: null, refresh_token_ciphertext: null, status: 'revoked', revoked_at: at });
  }

  async findPendingRevocation(id: string): Promise<PendingRevocation | null> {
    const row = await this.knex<RevocationRow>('provider_revocations').where({ id }).first();
    if (!row) return null;
    return {
      id: row.id,
      platform: row.platform,
      accessTokenCiphertext: row.access_token_ciphertext,
      refreshTokenCiphertext: row.refresh_token_ciphertext,
      externalAccountIdCiphertext: row.external_account_id_ciphertext,
    };
  }

  async completeRevocation(id: string): Promise<void> {
    await this.knex('provider_revocations').where({ id }).delete();
  }

  async recordRevocationFailure(id: string, error: string): Promise<void> {
    await this.knex<RevocationRow>('provider_revocations')
      .where({ id })
      .update({ last_error: error.slice(0, 500) })
      .increment('attempts', 1);
  }
}
