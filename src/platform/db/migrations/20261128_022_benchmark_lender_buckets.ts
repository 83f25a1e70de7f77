import type { Knex } from 'knex';

// Peer benchmarks: each lender's own tapes per product type, metric and bucket, so that a lender's
// benchmark is computed from its peers alone: the cohort's buckets less the asking lender's
// (docs/benchmarks.md, decision P28). Without them a lender that supplied most of a cohort could add
// tapes of its own and watch a quartile land on another lender's single tape. Sharded as the other
// counters (migration 018), shard 0 included, since no earlier version reads this table.
//
// The tapes counted so far are counted here from their member rows, in the shard each member says
// it is counted in, which is where a later erasure or re-score takes it out. Processes of the
// previous version, running beside this one during a rolling deploy, do not count here: a tape they
// complete in that window stays in its lender's peers until it is scored again or erased.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('benchmark_lender_buckets', (t) => {
    t.string('product_type', 40).notNullable();
    t.string('lender_id', 40).notNullable();
    t.string('metric', 60).notNullable();
    t.integer('bucket').notNullable();
    t.integer('shard').notNullable();
    t.integer('tapes').notNullable();
    t.primary(['product_type', 'lender_id', 'metric', 'bucket', 'shard']);
  });
  const counts = new Map<string, { product_type: string; lender_id: string; metric: string; bucket: number; shard: number; tapes: number }>();
  let after = '';
  for (;;) {
    const members: Array<{ verification_id: string; lender_id: string; product_type: string; buckets: string; shard: number }> = await knex('benchmark_members')
      .where('verification_id', '>', after)
      .orderBy('verification_id')
      .limit(10_000)
      .select('verification_id', 'lender_id', 'product_type', 'buckets', 'shard');
    if (members.length === 0) break;
    after = members.at(-1)!.verification_id;
    for (const member of members) {
      for (const [metric, bucket] of Object.entries(JSON.parse(member.buckets) as Record<string, number>)) {
        const shard = Number(member.shard);
        const key = JSON.stringify([member.product_type, member.lender_id, metric, bucket, shard]);
        const counter = counts.get(key);
        if (counter) counter.tapes++;
        else counts.set(key, { product_type: member.product_type, lender_id: member.lender_id, metric, bucket, shard, tapes: 1 });
      }
    }
  }
  // Under SQLite's limit of bound values.
  const rows = [...counts.values()];
  for (let i = 0; i < rows.length; i += 150) await knex('benchmark_lender_buckets').insert(rows.slice(i, i + 150));
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('benchmark_lender_buckets');
}
