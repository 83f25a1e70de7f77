import type { Knex } from 'knex';

// Webhook endpoints (secrets encrypted at rest), one delivery row per event and endpoint (written
// in the transaction of the state change, D14) and the log of every attempt.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('webhook_endpoints', (t) => {
    t.string('id', 40).primary();
    t.string('lender_id', 40).notNullable().references('id').inTable('lender_accounts').onDelete('CASCADE');
    t.string('url', 2048).notNullable();
    t.text('events').notNullable();
    t.text('secret_ciphertext').notNullable();
    t.string('created_at', 30).notNullable();
    t.string('deleted_at', 30).nullable();
    t.index(['lender_id']);
  });
  await knex.schema.createTable('webhook_deliveries', (t) => {
    t.string('id', 36).primary();
    t.string('webhook_id', 40).notNullable().references('id').inTable('webhook_endpoints').onDelete('CASCADE');
    t.string('lender_id', 40).notNullable();
    t.string('event_id', 40).notNullable().references('id').inTable('events').onDelete('CASCADE');
    t.string('event_name', 40).notNullable();
    t.string('verification_id', 40).notNullable();
    // The event's place in the outbox: deliveries of one verification to one endpoint go in this order.
    t.integer('event_sequence').notNullable();
    t.string('status', 20).notNullable();
    t.integer('attempts').notNullable().defaultTo(0);
    t.string('first_attempt_at', 30).nullable();
    t.string('next_attempt_at', 30).nullable();
    t.string('locked_by', 64).nullable();
    t.string('locked_until', 30).nullable();
    t.string('replay_of', 36).nullable();
    t.string('created_at', 30).notNullable();
    t.index(['status', 'next_attempt_at']);
    t.index(['webhook_id', 'verification_id', 'event_sequence']);
    t.index(['webhook_id', 'created_at']);
  });
  await knex.schema.createTable('webhook_delivery_attempts', (t) => {
    t.increments('id').primary();
    t.string('delivery_id', 36).notNullable().references('id').inTable('webhook_deliveries').onDelete('CASCADE');
    t.integer('attempt').notNullable();
    t.string('attempted_at', 30).notNullable();
    t.integer('status_code').nullable();
    t.integer('duration_ms').notNullable();
    t.text('error').nullable();
    t.index(['delivery_id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['webhook_delivery_attempts', 'webhook_deliveries', 'webhook_endpoints']) await knex.schema.dropTable(table);
}
