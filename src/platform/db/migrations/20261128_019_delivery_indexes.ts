import type { Knex } from 'knex';

// Indexes that `npm run bench:scale` and a review of it showed missing at 10^6 verifications
// (docs/performance.md, "Scale"):
//
// - An endpoint's delivery log (GET /webhooks/{id}/deliveries) lists its deliveries newest first and
//   pages by the keyset (created_at, id). The index ended in created_at, and the page query's OR
//   form could not use it as a range, so a page after a cursor read every delivery of the endpoint
//   newer than the cursor: a deep page's p50 went from 8 to 29 ms between 10^3 and 10^6 rows. With
//   id in the index, a page is one range of it in list order, as the verification list's (012). It
//   replaces (webhook_id, created_at), a prefix of it.
// - A creator's erasure finds deliveries and stored idempotent answers by verification id, and the
//   access report deliveries; no index of either table led with it, so each read the whole table,
//   erasure inside the writer's transaction.
// - Deleting an event (erasure) makes both databases look its deliveries up by event_id, and
//   deleting a verification its OAuth requests by verification_id (the foreign keys' check and
//   cascade): without an index, a whole-table read per deleted row. A test now requires an index on
//   every foreign key whose parent rows are deleted.
//
// On PostgreSQL building an index holds writes to its table until the migrations commit, and
// dropping one holds reads too: the drop comes last.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('idempotency_keys', (t) => {
    t.index(['verification_id']);
  });
  await knex.schema.alterTable('oauth_requests', (t) => {
    t.index(['verification_id']);
  });
  await knex.schema.alterTable('webhook_deliveries', (t) => {
    t.index(['verification_id']);
    t.index(['event_id']);
    t.index(['webhook_id', 'created_at', 'id'], 'webhook_deliveries_log_idx');
  });
  await knex.schema.alterTable('webhook_deliveries', (t) => {
    t.dropIndex(['webhook_id', 'created_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('webhook_deliveries', (t) => {
    t.index(['webhook_id', 'created_at']);
    t.dropIndex(['webhook_id', 'created_at', 'id'], 'webhook_deliveries_log_idx');
    t.dropIndex(['event_id']);
    t.dropIndex(['verification_id']);
  });
  await knex.schema.alterTable('oauth_requests', (t) => {
    t.dropIndex(['verification_id']);
  });
  await knex.schema.alterTable('idempotency_keys', (t) => {
    t.dropIndex(['verification_id']);
  });
}
