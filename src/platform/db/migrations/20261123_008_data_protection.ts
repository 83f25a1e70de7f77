import type { Knex } from 'knex';

// Data protection: a connection's account email is kept encrypted and found through a keyed hash
// (blind index), never in plain text; the scopes a creator granted and when access ended are kept
// for the access report; grants whose revocation a provider refused wait in their own table (tokens
// encrypted, nothing else of the creator); every data-protection request leaves an audit row
// without the creator's identifiers.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('platform_connections', (t) => {
    t.text('account_email_ciphertext').nullable();
    t.string('account_email_index', 64).nullable().index();
    t.text('scopes').nullable();
    t.string('revoked_at', 30).nullable();
  });
  await knex.schema.createTable('provider_revocations', (t) => {
    t.string('id', 40).primary();
    t.string('platform', 20).notNullable();
    t.text('access_token_ciphertext').nullable();
    t.text('refresh_token_ciphertext').nullable();
    t.text('external_account_id_ciphertext').nullable();
    t.integer('attempts').notNullable().defaultTo(0);
    t.string('last_error', 500).nullable();
    t.string('created_at', 30).notNullable();
  });
  await knex.schema.createTable('gdpr_audit', (t) => {
    t.increments('id').primary();
    t.string('lender_id', 40).notNullable().index();
    t.string('key_id', 40).notNullable();
    t.string('operation', 20).notNullable();
    t.string('at', 30).notNullable();
    t.text('identifier_kinds').notNullable();
    t.text('counts').notNullable();
    t.string('receipt_id', 80).nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('gdpr_audit');
  await knex.schema.dropTable('provider_revocations');
  await knex.schema.alterTable('platform_connections', (t) => {
    for (const column of ['account_email_ciphertext', 'account_email_index', 'scopes', 'revoked_at']) t.dropColumn(column);
  });
}
