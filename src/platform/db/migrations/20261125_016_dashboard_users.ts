import type { Knex } from 'knex';

// The lender dashboard: its users (per lender account, created by an operator), their server-side
// sessions (stored by the SHA-256 of the cookie's value, so a read of the table signs nobody in),
// when each API key was last used (recorded at most once a minute per key and process), and the
// start of what a receiver answered to each webhook attempt.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('dashboard_users', (t) => {
    t.string('id', 40).primary();
    t.string('lender_id', 40).notNullable().references('id').inTable('lender_accounts').onDelete('CASCADE');
    // Lower-cased at creation: one sign-in name per person across the deployment.
    t.string('email', 254).notNullable().unique();
    t.string('role', 20).notNullable();
    t.text('password_hash').notNullable();
    t.string('created_at', 30).notNullable();
    t.index(['lender_id']);
  });
  await knex.schema.createTable('dashboard_sessions', (t) => {
    t.string('id_hash', 64).primary();
    t.string('user_id', 40).notNullable().references('id').inTable('dashboard_users').onDelete('CASCADE');
    t.string('created_at', 30).notNullable();
    t.string('last_seen_at', 30).notNullable();
    t.string('expires_at', 30).notNullable();
    t.string('revoked_at', 30).nullable();
    t.index(['user_id']);
  });
  await knex.schema.alterTable('api_keys', (t) => {
    t.string('last_used_at', 30).nullable();
  });
  await knex.schema.alterTable('webhook_delivery_attempts', (t) => {
    t.string('response_snippet', 300).nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('webhook_delivery_attempts', (t) => {
    t.dropColumn('response_snippet');
  });
  await knex.schema.alterTable('api_keys', (t) => {
    t.dropColumn('last_used_at');
  });
  await knex.schema.dropTable('dashboard_sessions');
  await knex.schema.dropTable('dashboard_users');
}
