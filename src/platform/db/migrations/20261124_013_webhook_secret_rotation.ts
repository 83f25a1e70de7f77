import type { Knex } from 'knex';

// Secret rotation: the secret rotated out keeps signing beside the new one until its overlap ends
// (encrypted like the current one), so a receiver can switch secrets without missing an event.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('webhook_endpoints', (t) => {
    t.text('previous_secret_ciphertext').nullable();
    t.string('previous_secret_expires_at', 30).nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('webhook_endpoints', (t) => {
    t.dropColumn('previous_secret_ciphertext');
    t.dropColumn('previous_secret_expires_at');
  });
}
