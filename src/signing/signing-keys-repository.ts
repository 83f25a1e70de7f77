import type { Knex } from 'knex';

export interface SigningKeyRow {
  kid: string;
  algorithm: string;
  /** The public JWK as JSON text. */
  publicJwk: string;
  /** The private JWK as JSON text, encrypted under the service's encryption key. */
  privateJwkCiphertext: string;
  createdAt: string;
  retiredAt: string | null;
}

interface Row {
  kid: string;
  algorithm: string;
  public_jwk: string;
  private_jwk_ciphertext: string;
  created_at: string;
  retired_at: string | null;
}

const toKey = (row: Row): SigningKeyRow => ({
  kid: row.kid,
  algorithm: row.algorithm,
  publicJwk: row.public_jwk,
  privateJwkCiphertext: row.private_jwk_ciphertext,
  createdAt: row.created_at,
  retiredAt: row.retired_at,
});

/** The keys that sign Risk Tapes (P26): the only code that reads or writes `tape_signing_keys`. */
export class SigningKeysRepository {
  constructor(private readonly knex: Knex) {}

  /** Keys not retired, the signing one (newest) first. */
  async listActive(): Promise<SigningKeyRow[]> {
    const rows = await this.knex<Row>('tape_signing_keys')
      .whereNull('retired_at')
      .orderBy([
        { column: 'created_at', order: 'desc' },
        { column: 'kid', order: 'desc' },
      ]);
    return rows.map(toKey);
  }

  /** Every key, retired ones included, newest first: for the operator. */
  async listAll(): Promise<SigningKeyRow[]> {
    const rows = await this.knex<Row>('tape_signing_keys').orderBy([
      { column: 'created_at', order: 'desc' },
      { column: 'kid', order: 'desc' },
    ]);
    return rows.map(toKey);
  }

  async insert(key: SigningKeyRow): Promise<void> {
    await this.knex<Row>('tape_signing_keys').insert({
      kid: key.kid,
      algorithm: key.algorithm,
      public_jwk: key.publicJwk,
      private_jwk_ciphertext: key.privateJwkCiphertext,
      created_at: key.createdAt,
      retired_at: key.retiredAt,
    });
  }

  /** Retires a key not yet retired; false when there is no such key. */
  async retire(kid: string, at: string): Promise<boolean> {
    const changed = await this.knex<Row>('tape_signing_keys').where({ kid }).whereNull('retired_at').update({ retired_at: at });
    return changed > 0;
  }

  async find(kid: string): Promise<SigningKeyRow | null> {
    const row = await this.knex<Row>('tape_signing_keys').where({ kid }).first();
    return row ? toKey(row) : null;
  }
}
