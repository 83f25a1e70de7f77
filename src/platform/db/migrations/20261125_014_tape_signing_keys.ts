import type { Knex } from 'knex';

// Keys that sign Risk Tapes (P26). The private key is stored encrypted under the service's
// encryption key, like webhook secrets; the public key in clear, since it is published. The newest
// key not retired signs; every key not retired is published at /.well-known/jwks.json.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('tape_signing_keys', (t) => {
    t.string('kid', 64).primary();
    t.string('algorithm', 16).notNullable();
    t.text('public_jwk').notNullable();
    t.text('private_jwk_ciphertext').notNullable();
    t.string('created_at', 30).notNullable();
    t.string('retired_at', 30).nullable();
    t.index(['retired_at', 'created_at'], 'tape_signing_keys_active_idx');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('tape_signing_keys');
}
