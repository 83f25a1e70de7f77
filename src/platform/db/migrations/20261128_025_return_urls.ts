import type { Knex } from 'knex';

// A way back to the lender's app after consent (POST /verifications `return_url`): the origins a
// lender registered (a JSON array, as its IP allowlist; every lender starts with none, so no
// creation can name a return URL until its operator or admin registers one), and each
// verification's URL, null when the creation gave none.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('lender_accounts', (t) => {
    t.text('return_origins').notNullable().defaultTo('[]');
  });
  await knex.schema.alterTable('verifications', (t) => {
    t.text('return_url').nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('verifications', (t) => {
    t.dropColumn('return_url');
  });
  await knex.schema.alterTable('lender_accounts', (t) => {
    t.dropColumn('return_origins');
  });
}
