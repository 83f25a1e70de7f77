import type { Knex } from 'knex';

// An OAuth round trip is bound to the browser that began it (RFC 9700, 4.7): the hash of a nonce
// kept in a short-lived cookie of that browser. Requests begun before this column existed have
// none, and their callbacks are refused: the creator starts again (the window is 15 minutes).
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('oauth_requests', (t) => {
    t.string('browser_binding_hash', 64).nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('oauth_requests', (t) => {
    t.dropColumn('browser_binding_hash');
  });
}
