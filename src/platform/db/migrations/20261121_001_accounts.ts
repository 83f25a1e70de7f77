import type { Knex } from 'knex';

// Lender accounts, their per-product policy overrides and their API keys (D9). Keys are stored only
// as SHA-256 hashes; `key_prefix` lets an operator recognise a key without being able to use it.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('lender_accounts', (t) => {
    t.string('id', 40).primary();
    t.string('name', 200).notNullable();
    t.string('plan', 20).notNullable();
    t.string('jurisdiction', 20).notNullable();
    t.integer('rate_limit_per_minute').nullable();
    t.integer('rate_limit_burst').nullable();
    t.text('ip_allowlist').notNullable().defaultTo('[]');
    t.string('created_at', 30).notNullable();
    t.string('updated_at', 30).notNullable();
  });
  await knex.schema.createTable('lender_policies', (t) => {
    t.string('lender_id', 40).notNullable().references('id').inTable('lender_accounts').onDelete('CASCADE');
    t.string('product_type', 40).notNullable();
    t.text('overrides').notNullable();
    t.string('updated_at', 30).notNullable();
    t.primary(['lender_id', 'product_type']);
  });
  await knex.schema.createTable('api_keys', (t) => {
    t.string('id', 40).primary();
    t.string('lender_id', 40).notNullable().references('id').inTable('lender_accounts').onDelete('CASCADE');
    t.string('role', 20).notNullable();
    t.string('key_hash', 64).notNullable().unique();
    t.string('key_prefix', 24).notNullable();
    t.string('created_at', 30).notNullable();
    t.string('revoked_at', 30).nullable();
    t.index(['lender_id']);
  });
  // Service-wide settings, e.g. the encryption key a sandbox generates on first start (D22).
  await knex.schema.createTable('service_settings', (t) => {
    t.string('name', 100).primary();
    t.text('value').notNullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('service_settings');
  await knex.schema.dropTable('api_keys');
  await knex.schema.dropTable('lender_policies');
  await knex.schema.dropTable('lender_accounts');
}
