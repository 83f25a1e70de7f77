import type { Knex } from 'knex';

// The verification lifecycle: every state move (timestamped), the events they emit (an outbox the
// webhook worker reads), the tapes, idempotency records and the durable job queue.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('verification_transitions', (t) => {
    t.increments('id').primary();
    t.string('verification_id', 40).notNullable().references('id').inTable('verifications').onDelete('CASCADE');
    t.string('from_status', 20).nullable();
    t.string('to_status', 20).notNullable();
    t.string('trigger', 40).notNullable();
    t.string('reason', 40).nullable();
    t.string('at', 30).notNullable();
    t.index(['verification_id']);
  });
  await knex.schema.createTable('events', (t) => {
    // Insertion order is the delivery order per verification (section 6.1).
    t.increments('sequence').primary();
    t.string('id', 40).notNullable().unique();
    t.string('lender_id', 40).notNullable().references('id').inTable('lender_accounts').onDelete('CASCADE');
    t.string('verification_id', 40).notNullable().references('id').inTable('verifications').onDelete('CASCADE');
    t.string('name', 40).notNullable();
    t.text('payload').notNullable();
    t.string('occurred_at', 30).notNullable();
    t.index(['verification_id', 'sequence']);
  });
  await knex.schema.createTable('tapes', (t) => {
    t.string('verification_id', 40).primary().references('id').inTable('verifications').onDelete('CASCADE');
    t.text('tape').notNullable();
    t.string('generated_at', 30).notNullable();
  });
  await knex.schema.createTable('idempotency_keys', (t) => {
    t.string('lender_id', 40).notNullable().references('id').inTable('lender_accounts').onDelete('CASCADE');
    t.string('idempotency_key', 36).notNullable();
    t.string('request_fingerprint', 64).notNullable();
    t.integer('response_status').nullable();
    t.text('response_body').nullable();
    t.string('verification_id', 40).nullable();
    t.string('created_at', 30).notNullable();
    t.string('expires_at', 30).notNullable();
    t.primary(['lender_id', 'idempotency_key']);
  });
  await knex.schema.createTable('jobs', (t) => {
    t.increments('id').primary();
    t.string('kind', 40).notNullable();
    t.string('subject_id', 40).notNullable();
    t.text('payload').notNullable().defaultTo('{}');
    t.string('run_at', 30).notNullable();
    t.string('status', 20).notNullable().defaultTo('pending');
    t.integer('attempts').notNullable().defaultTo(0);
    t.string('locked_by', 64).nullable();
    t.string('locked_until', 30).nullable();
    t.text('last_error').nullable();
    t.string('created_at', 30).notNullable();
    t.index(['status', 'run_at']);
    t.index(['subject_id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['jobs', 'idempotency_keys', 'tapes', 'events', 'verification_transitions']) await knex.schema.dropTable(table);
}
