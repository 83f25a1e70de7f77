import type { Knex } from 'knex';

// An operator can deactivate a lender account: its keys stop at once (the per-request key lookup
// joins the account and skips a deactivated one) and start again on reactivation, unlike a
// revocation, which is per key and final.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('lender_accounts', (t) => {
    t.string('deactivated_at', 30).nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('lender_accounts', (t) => {
    t.dropColumn('deactivated_at');
  });
}
