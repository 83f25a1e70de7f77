import type { Knex } from 'knex';

// PostgreSQL: the rate-limit counters skip the write-ahead log. Every API request updates them, and
// a logged update costs each request a WAL record and a wait for its flush at commit; a counter of
// the current second or minute is worthless after a crash anyway, which is when PostgreSQL empties an
// unlogged table. Quotas still hold across processes, as before (docs/performance.md).
export async function up(knex: Knex): Promise<void> {
  if ((knex.client as Knex.Client).config.client === 'pg') await knex.raw('alter table rate_limits set unlogged');
}

export async function down(knex: Knex): Promise<void> {
  if ((knex.client as Knex.Client).config.client === 'pg') await knex.raw('alter table rate_limits set logged');
}
