import type { Knex } from 'knex';

// Indexes that `npm run bench:scale` showed missing at 10^6 verifications (docs/performance.md, "Scale"):
//
// - An endpoint's delivery log (GET /webhooks/{id}/deliveries) lists its deliveries newest first and
//   pages by the keyset (created_at, id). The index ended in created_at, and the page query's OR
//   form could not use it as a range, so a page after a cursor read every delivery of the endpoint
//   newer than the cursor: a deep page's p50 went from 8 to 29 ms between 10^3 and 10^6 rows. With
//   id in the index, a page is one range of it in list order, as the verification list's (012). It
//   replaces (webhook_id, created_at), a prefix of it.
// - A creator's access report and erasure find deliveries and stored idempotent answers by
//   verification id, which no index of either table led with: each read the whole table, and
//   erasure does so inside the writer's transaction.
//
// On PostgreSQL building an index holds writes to its table until it is built (as 012 did).
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('webhook_deliveries', (t) => {
    t.index(['webhook_id', 'created_at', 'id'], 'webhook_deliveries_log_idx');
    t.dropIndex(['webhook_id', 'created_at']);
    t.index(['verification_id']);
  });
  await knex.schema.alterTable('idempotency_keys', (t) => {
    t.index(['verification_id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('idempotency_keys', (t) => {
    t.dropIndex(['verification_id']);
  });
  await knex.schema.alterTable('webhook_deliveries', (t) => {
    t.dropIndex(['verification_id']);
    t.index(['webhook_id', 'created_at']);
    t.dropIndex(['webhook_id', 'created_at', 'id'], 'webhook_deliveries_log_idx');
  });
}
