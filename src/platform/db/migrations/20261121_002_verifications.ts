import type { Knex } from 'knex';

// Verifications and the state of each requested platform connection (D2). Every query on these
// tables is scoped by lender_id: a verification of another lender does not exist for a key.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('verifications', (t) => {
    t.string('id', 40).primary();
    t.string('lender_id', 40).notNullable().references('id').inTable('lender_accounts').onDelete('CASCADE');
    t.string('obligor_reference', 100).notNullable();
    t.text('creator_platforms').notNullable();
    t.string('lender_name', 200).notNullable();
    t.string('product_type', 40).notNullable();
    t.double('declared_monthly_obligations_eur').nullable();
    t.string('status', 20).notNullable();
    t.string('failure_reason', 40).nullable();
    t.string('consent_token_hash', 64).notNullable().unique();
    t.string('consent_url', 500).notNullable();
    t.string('expires_at', 30).notNullable();
    t.string('created_at', 30).notNullable();
    t.string('updated_at', 30).notNullable();
    t.string('completed_at', 30).nullable();
    t.string('tape_schema_version', 10).nullable();
    t.index(['lender_id', 'obligor_reference']);
    t.index(['status', 'expires_at']);
  });
  await knex.schema.createTable('platform_connections', (t) => {
    t.string('verification_id', 40).notNullable().references('id').inTable('verifications').onDelete('CASCADE');
    t.string('platform', 20).notNullable();
    t.string('status', 20).notNullable();
    t.string('updated_at', 30).notNullable();
    t.primary(['verification_id', 'platform']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('platform_connections');
  await knex.schema.dropTable('verifications');
}
