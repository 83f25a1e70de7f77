import type { Knex } from 'knex';

// The event feed (GET /api/v1/events): a lender's events newest first, read as one range of this
// index whatever the lender's share of the table, as the verification list reads its own.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('events', (t) => {
    t.index(['lender_id', 'sequence'], 'events_lender_sequence_idx');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('events', (t) => {
    t.dropIndex(['lender_id', 'sequence'], 'events_lender_sequence_idx');
  });
}
