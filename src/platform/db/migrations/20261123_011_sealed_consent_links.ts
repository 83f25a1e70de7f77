import type { Knex } from 'knex';

// The consent link's token, sealed (encrypted at rest): `consent_url` held the whole URL, token
// included, in plain text. The service seals the existing ones at start-up, when it has its key.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('verifications', (t) => {
    t.text('consent_token_sealed').nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('verifications', (t) => {
    t.dropColumn('consent_token_sealed');
  });
}
