import type { Knex } from 'knex';

// Deactivation reaches the dashboard. A lender's access epoch moves at every deactivation and
// reactivation, and a dashboard session keeps the epoch it was opened under: a session opened
// before a deactivation stays over after the reactivation, with no clock to compare across the
// CLI's and the server's machines and no window between reading the account and writing the
// session. A dashboard user can be deactivated on its own.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('lender_accounts', (t) => {
    t.integer('access_epoch').notNullable().defaultTo(0);
  });
  await knex.schema.alterTable('dashboard_users', (t) => {
    t.string('deactivated_at', 30).nullable();
  });
  await knex.schema.alterTable('dashboard_sessions', (t) => {
    t.integer('lender_epoch').notNullable().defaultTo(0);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('dashboard_sessions', (t) => {
    t.dropColumn('lender_epoch');
  });
  await knex.schema.alterTable('dashboard_users', (t) => {
    t.dropColumn('deactivated_at');
  });
  await knex.schema.alterTable('lender_accounts', (t) => {
    t.dropColumn('access_epoch');
  });
}
