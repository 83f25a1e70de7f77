import type { Knex } from 'knex';

// Per-key rate limit overrides (D8), and on PostgreSQL the shared counters table of
// rate-limiter-flexible (its own layout), so several server processes share one quota. SQLite
// deployments are single-process and count in memory.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('api_keys', (t) => {
    t.integer('rate_limit_per_minute').nullable();
    t.integer('rate_limit_burst').nullable();
  });
  if ((knex.client as Knex.Client).config.client === 'pg') {
    await knex.raw('create table if not exists rate_limits (key varchar(255) primary key, points integer not null default 0, expire bigint)');
  }
}

export async function down(knex: Knex): Promise<void> {
  if ((knex.client as Knex.Client).config.client === 'pg') await knex.schema.dropTableIfExists('rate_limits');
  await knex.schema.alterTable('api_keys', (t) => {
    t.dropColumn('rate_limit_per_minute');
    t.dropColumn('rate_limit_burst');
  });
}
