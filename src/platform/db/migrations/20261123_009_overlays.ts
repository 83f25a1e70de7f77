import type { Knex } from 'knex';

// Third-party overlays attached to a completed verification's tape (D20), and the income a tape was
// scored from, so attaching an overlay scores the same income again rather than a new collection.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('overlays', (t) => {
    t.string('id', 80).primary();
    t.string('verification_id', 40).notNullable().references('id').inTable('verifications').onDelete('CASCADE');
    t.string('type', 40).notNullable();
    t.string('provider', 200).notNullable();
    t.string('reference', 200).nullable();
    t.string('status', 100).notNullable();
    t.string('observed_at', 40).notNullable();
    t.text('data').notNullable();
    t.string('created_at', 30).notNullable();
    t.index(['verification_id', 'created_at']);
  });
  await knex.schema.alterTable('tapes', (t) => {
    t.text('scoring_input').nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('tapes', (t) => {
    t.dropColumn('scoring_input');
  });
  await knex.schema.dropTable('overlays');
}
