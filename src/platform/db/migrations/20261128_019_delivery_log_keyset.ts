import type { Knex } from 'knex';

// An endpoint's delivery log (GET /webhooks/{id}/deliveries) lists its deliveries newest first and
// pages by the keyset (created_at, id). The index ended in created_at, so a page after a cursor read
// every delivery of the endpoint newer than the cursor before reaching its page: at 10^6 deliveries
// `npm run bench:scale` measured a deep page's p50 at 3.6 times the newest page's (docs/performance.md).
// With id in the index, a page is one range of it in list order, as the verification list's (012).
// It replaces (webhook_id, created_at), a prefix of it.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('webhook_deliveries', (t) => {
    t.index(['webhook_id', 'created_at', 'id'], 'webhook_deliveries_log_idx');
    t.dropIndex(['webhook_id', 'created_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('webhook_deliveries', (t) => {
    t.index(['webhook_id', 'created_at']);
    t.dropIndex(['webhook_id', 'created_at', 'id'], 'webhook_deliveries_log_idx');
  });
}
