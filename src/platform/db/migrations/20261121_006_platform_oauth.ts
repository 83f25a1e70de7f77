import type { Knex } from 'knex';

// Creator connections by OAuth: the pending authorization requests (state and PKCE verifier, bound
// to one consent session), the tokens (encrypted at rest) and account email of each connection, and
// the income each platform reported.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('oauth_requests', (t) => {
    t.string('state_hash', 64).primary();
    t.string('verification_id', 40).notNullable().references('id').inTable('verifications').onDelete('CASCADE');
    t.string('platform', 20).notNullable();
    t.text('code_verifier_ciphertext').nullable();
    // The consent link to return to; its token is a secret, so it is kept encrypted like one.
    t.text('consent_token_ciphertext').notNullable();
    t.string('expires_at', 30).notNullable();
  });
  await knex.schema.alterTable('platform_connections', (t) => {
    t.string('account_email', 320).nullable();
    t.string('external_account_id', 100).nullable();
    t.text('access_token_ciphertext').nullable();
    t.text('refresh_token_ciphertext').nullable();
    t.string('connected_at', 30).nullable();
  });
  await knex.schema.createTable('income_records', (t) => {
    t.string('verification_id', 40).notNullable().references('id').inTable('verifications').onDelete('CASCADE');
    t.string('platform', 20).notNullable();
    t.string('month', 7).notNullable();
    t.string('source_currency', 3).notNullable();
    t.double('source_amount').notNullable();
    t.double('amount_eur').nullable();
    t.primary(['verification_id', 'platform', 'month', 'source_currency']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('income_records');
  await knex.schema.alterTable('platform_connections', (t) => {
    for (const column of ['account_email', 'external_account_id', 'access_token_ciphertext', 'refresh_token_ciphertext', 'connected_at']) t.dropColumn(column);
  });
  await knex.schema.dropTable('oauth_requests');
}
