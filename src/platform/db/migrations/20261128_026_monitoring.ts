import type { Knex } from 'knex';

// Ongoing monitoring (P33). On the verification: the months the creation asked for (null for a
// one-time verification), the monitoring's state and end, its schedule and its failures. The latest
// tape stays in `tapes`, the row the polling lender's read finds by its key, now with an id, why it
// was made and when it was stored; a tape it replaces moves to `tape_history`, so the hot read and
// the benchmarks (which count the latest tape) see one row per verification as before.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('verifications', (t) => {
    t.integer('monitoring_months').nullable();
    t.string('monitoring_state', 10).nullable();
    t.string('monitoring_end_reason', 40).nullable();
    t.string('monitoring_starts_at', 30).nullable();
    t.string('monitoring_ends_at', 30).nullable();
    t.string('last_refresh_at', 30).nullable();
    t.string('next_refresh_at', 30).nullable();
    t.string('refresh_requested_at', 30).nullable();
    t.string('last_demanded_refresh_at', 30).nullable();
    t.integer('refreshes').notNullable().defaultTo(0);
    t.integer('failed_refreshes').notNullable().defaultTo(0);
  });
  await knex.schema.alterTable('tapes', (t) => {
    t.string('tape_id', 40).nullable();
    t.string('reason', 40).nullable();
    t.string('stored_at', 30).nullable();
  });
  // The tapes stored so far get an id derived from their verification's, which is unique as it is.
  await knex('tapes').update({ tape_id: knex.raw(`'tap_' || substr(verification_id, 5)`), reason: 'completion', stored_at: knex.ref('generated_at') });
  await knex.schema.createTable('tape_history', (t) => {
    t.string('tape_id', 40).primary();
    t.string('verification_id', 40).notNullable().references('id').inTable('verifications').onDelete('CASCADE');
    t.text('tape').notNullable();
    t.string('generated_at', 30).notNullable();
    t.string('reason', 40).notNullable();
    t.string('stored_at', 30).notNullable();
    t.string('tier', 20).notNullable();
    t.double('max_advance_eur').notNullable();
    t.index(['verification_id', 'stored_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('tape_history');
  await knex.schema.alterTable('tapes', (t) => {
    for (const column of ['tape_id', 'reason', 'stored_at']) t.dropColumn(column);
  });
  await knex.schema.alterTable('verifications', (t) => {
    for (const column of [
      'monitoring_months',
      'monitoring_state',
      'monitoring_end_reason',
      'monitoring_starts_at',
      'monitoring_ends_at',
      'last_refresh_at',
      'next_refresh_at',
      'refresh_requested_at',
      'last_demanded_refresh_at',
      'refreshes',
      'failed_refreshes',
    ])
      t.dropColumn(column);
  });
}
