import type { Knex } from 'knex';

// Peer benchmarks: each counter is split into shards (docs/performance.md). Every completed tape
// added one to the same few bucket rows and its lender's row, and on PostgreSQL the row lock of an
// upsert is held until its transaction commits, so creations of one product type ran one after the
// other however many connections the pool had. A transaction now counts in one shard, chosen at
// random; a cohort sums the shards; the member row remembers its shard, to take the tape out of it.
//
// Shard 0 is the existing tables, and the others live in new ones, so this migration only adds: the
// previous version, running beside this one during a rolling deploy, goes on counting in (and
// taking its members out of) shard 0, which is where every member it wrote says it is counted.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('benchmark_members', (t) => {
    t.integer('shard').notNullable().defaultTo(0);
  });
  await knex.schema.createTable('benchmark_bucket_shards', (t) => {
    t.string('product_type', 40).notNullable();
    t.string('metric', 60).notNullable();
    t.integer('bucket').notNullable();
    t.integer('shard').notNullable();
    t.integer('tapes').notNullable();
    t.primary(['product_type', 'metric', 'bucket', 'shard']);
  });
  await knex.schema.createTable('benchmark_lender_shards', (t) => {
    t.string('product_type', 40).notNullable();
    t.string('lender_id', 40).notNullable();
    t.integer('shard').notNullable();
    t.integer('tapes').notNullable();
    t.primary(['product_type', 'lender_id', 'shard']);
  });
}

/** Folds the other shards back into shard 0, which the previous version reads alone. */
export async function down(knex: Knex): Promise<void> {
  const folds: Array<[string, string, string[]]> = [
    ['benchmark_buckets', 'benchmark_bucket_shards', ['product_type', 'metric', 'bucket']],
    ['benchmark_lenders', 'benchmark_lender_shards', ['product_type', 'lender_id']],
  ];
  for (const [table, shards, key] of folds) {
    const columns = key.join(', ');
    // "where true": SQLite reads ON after a bare SELECT as a join's.
    await knex.raw(
      `insert into ${table} (${columns}, tapes) select ${columns}, sum(tapes) from ${shards} where true group by ${columns} on conflict (${columns}) do update set tapes = ${table}.tapes + excluded.tapes`,
    );
    await knex.schema.dropTable(shards);
  }
  await knex.schema.alterTable('benchmark_members', (t) => {
    t.dropColumn('shard');
  });
}
