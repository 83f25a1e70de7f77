import type { Knex } from 'knex';

// Peer benchmarks: each counter is split into shards (docs/performance.md). Every completed tape
// added one to the same few bucket rows and its lender's row, and on PostgreSQL the row lock of an
// upsert is held until its transaction commits, so creations of one product type ran one after the
// other however many connections the pool had. A transaction now counts in one shard, chosen at
// random; a cohort sums the shards. The member row remembers its shard, to take the tape out of it
// again. Counts made before this migration sit in shard 0.
const KEEP = { buckets: ['product_type', 'metric', 'bucket'], lenders: ['product_type', 'lender_id'] } as const;

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
    t.primary([...KEEP.buckets, 'shard']);
  });
  await knex.schema.createTable('benchmark_lender_shards', (t) => {
    t.string('product_type', 40).notNullable();
    t.string('lender_id', 40).notNullable();
    t.integer('shard').notNullable();
    t.integer('tapes').notNullable();
    t.primary([...KEEP.lenders, 'shard']);
  });
  await knex.raw(
    `insert into benchmark_bucket_shards (${KEEP.buckets.join(', ')}, shard, tapes) select ${KEEP.buckets.join(', ')}, 0, tapes from benchmark_buckets`,
  );
  await knex.raw(
    `insert into benchmark_lender_shards (${KEEP.lenders.join(', ')}, shard, tapes) select ${KEEP.lenders.join(', ')}, 0, tapes from benchmark_lenders`,
  );
  await knex.schema.dropTable('benchmark_buckets');
  await knex.schema.dropTable('benchmark_lenders');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.createTable('benchmark_buckets', (t) => {
    t.string('product_type', 40).notNullable();
    t.string('metric', 60).notNullable();
    t.integer('bucket').notNullable();
    t.integer('tapes').notNullable();
    t.primary([...KEEP.buckets]);
  });
  await knex.schema.createTable('benchmark_lenders', (t) => {
    t.string('product_type', 40).notNullable();
    t.string('lender_id', 40).notNullable();
    t.integer('tapes').notNullable();
    t.primary([...KEEP.lenders]);
  });
  const columns = (keep: readonly string[]) => keep.join(', ');
  await knex.raw(
    `insert into benchmark_buckets (${columns(KEEP.buckets)}, tapes) select ${columns(KEEP.buckets)}, sum(tapes) from benchmark_bucket_shards group by ${columns(KEEP.buckets)}`,
  );
  await knex.raw(
    `insert into benchmark_lenders (${columns(KEEP.lenders)}, tapes) select ${columns(KEEP.lenders)}, sum(tapes) from benchmark_lender_shards group by ${columns(KEEP.lenders)}`,
  );
  await knex.schema.dropTable('benchmark_bucket_shards');
  await knex.schema.dropTable('benchmark_lender_shards');
  await knex.schema.alterTable('benchmark_members', (t) => {
    t.dropColumn('shard');
  });
}
