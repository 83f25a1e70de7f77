import type { Knex } from 'knex';

export interface OAuthRequest {
  verificationId: string;
  platform: string;
  codeVerifierCiphertext: string | null;
  consentTokenCiphertext: string;
  expiresAt: string;
}

export interface ConnectionWithTokens {
  platform: string;
  status: string;
  externalAccountId: string | null;
  accessTokenCiphertext: string | null;
  connectedAt: string | null;
}

interface OAuthRequestRow {
  state_hash: string;
  verification_id: string;
  platform: string;
  code_verifier_ciphertext: string | null;
  consent_token_ciphertext: string;
  expires_at: string;
}

interface ConnectionRow {
  verification_id: string;
  platform: string;
  status: string;
  external_account_id: string | null;
  access_token_ciphertext: string | null;
  connected_at: string | null;
}

/**
 * The only code that reads or writes the creator's side of a connection: pending OAuth requests,
 * and the account and tokens (encrypted before they arrive here) of each connected platform. The
 * connection's status as lenders see it is the lifecycle's; this repository sets it only when the
 * creator connects.
 */
export class ConsentRepository {
  constructor(private readonly knex: Knex) {}

  /** A creator's pending authorization at a provider: single use, bound to one consent session. */
  async insertOAuthRequest(request: OAuthRequest & { stateHash: string }): Promise<void> {
    await this.knex<OAuthRequestRow>('oauth_requests').insert({
      state_hash: request.stateHash,
      verification_id: request.verificationId,
      platform: request.platform,
      code_verifier_ciphertext: request.codeVerifierCiphertext,
      consent_token_ciphertext: request.consentTokenCiphertext,
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
        expiresAt: row.expires_at,
      };
    });
  }

  /** The sandbox's simulated provider step (D10): the platform is connected, with no account or tokens. */
  async markConnected(verificationId: string, platform: string, at: string): Promise<void> {
    await this.knex('platform_connections')
      .insert({ verification_id: verificationId, platform, status: 'connected', updated_at: at })
      .onConflict(['verification_id', 'platform'])
      .merge(['status', 'updated_at']);
  }

  /** Stores a connection made by OAuth; its tokens arrive encrypted. */
  async saveConnection(
    verificationId: string,
    platform: string,
    connection: {
      email: string | null;
      externalAccountId: string | null;
      accessTokenCiphertext: string;
      refreshTokenCiphertext: string | null;
      connectedAt: string;
    },
  ): Promise<void> {
    await this.knex('platform_connections')
      .insert({
        verification_id: verificationId,
        platform,
        status: 'connected',
        updated_at: connection.connectedAt,
        account_email: connection.email,
        external_account_id: connection.externalAccountId,
        access_token_ciphertext: connection.accessTokenCiphertext,
        refresh_token_ciphertext: connection.refreshTokenCiphertext,
        connected_at: connection.connectedAt,
      })
      .onConflict(['verification_id', 'platform'])
      .merge();
  }

  async connectionsWithTokens(verificationId: string): Promise<ConnectionWithTokens[]> {
    const rows = await this.knex<ConnectionRow>('platform_connections').where({ verification_id: verificationId });
    return rows.map((r) => ({
      platform: r.platform,
      status: r.status,
      externalAccountId: r.external_account_id,
      accessTokenCiphertext: r.access_token_ciphertext,
      connectedAt: r.connected_at,
    }));
  }
}
