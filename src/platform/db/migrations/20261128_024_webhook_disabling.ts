import type { Knex } from 'knex';

// Disabling a webhook endpoint (PATCH /webhooks/{id}, P29): when it was disabled, null while it
// is enabled, so every endpoint registered before stays enabled. A timestamp rather than a boolean:
// the sender's claim tests it in the same SQL on both databases, where a boolean is 0/1 on SQLite
// and `true` on PostgreSQL.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('webhook_endpoints', (t) => {
    t.string('disabled_at', 30).nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('webhook_endpoints', (t) => {
    t.dropColumn('disabled_at');
  });
}
