import { randomInt } from 'node:crypto';
import type { Knex } from 'knex';
import { chunks } from '../platform/db/chunks.ts';
import { transactionOf, type UnitOfWork } from '../platform/db/unit-of-work.ts';
import type { BenchmarkMetricName, Distribution } from './scales.ts';

/** A completed tape as its cohort counts it. */
export interface Member {
  verificationId: string;
  lenderId: string;
  productType: string;
  buckets: Partial<Record<BenchmarkMetricName, number>>;
}

export interface Cohort {
  tapes: number;
  lenders: number;
  distributions: Partial<Record<BenchmarkMetricName, Distribution>>;
}

interface MemberRow {
  verification_id: string;
  lender_id: string;
  product_type: string;
  buckets: string;
  shard: number;
}

/**
 * How many rows each counter is split into on PostgreSQL. Every completed tape of a product type
 * adds one to the same bucket rows, and an upsert holds its row's lock until its transaction
 * commits: with one row per counter, creations ran one at a time whatever the pool's size
 * (docs/performance.md). A transaction counts in one shard, chosen at random, so few of them meet:
 * 4, 8, 16 and 64 shards measured the same creation rate with one process's pool of 10, and a
 * cohort's read sums the shards, so it costs more with each. SQLite has one writer and no row locks,
 * so there a counter keeps one row.
 */
export const COUNTER_SHARDS = 8;

/** The only code that reads or writes the benchmark aggregates. */
export class BenchmarksRepository {
  private readonly shards: number;

  constructor(
    private readonly knex: Knex,
    shards?: number,
  ) {
    this.shards = shards ?? ((knex.client as Knex.Client).config.client === 'pg' ? COUNTER_SHARDS : 1);
  }

  /** Counts the tape in its cohort, in place of what it counted as before (a tape scored again). */
  async record(unit: UnitOfWork, member: Member): Promise<void> {
    const trx = transactionOf(unit);
    // A first tape (every creation) is counted by the add alone, without first looking for a count
    // to take back; only a tape counted before meets its own member row and is replaced.
    if ((await this.add(trx, [member])) === 1) return;
    await this.remove(trx, [member.verificationId]);
    await this.add(trx, [member]);
  }

  /** Takes erased tapes out of their cohorts. */
  async erase(unit: UnitOfWork, verificationIds: string[]): Promise<Record<string, number>> {
    await this.remove(transactionOf(unit), verificationIds);
    return {};
  }

  /** Adds many members at once (a catch-up, or a benchmark run); those already counted are skipped. */
  async addMany(members: Member[]): Promise<void> {
    await this.knex.transaction((trx) => this.add(trx, members));
  }

  /** Completed tapes not yet counted (stored before benchmarks existed): counted once at start-up. */
  async uncountedTapes(limit: number): Promise<Array<{ verificationId: string; lenderId: string; tape: string }>> {
    const rows = await this.knex('verifications as v')
      .join('tapes as t', 't.verification_id', 'v.id')
      .leftJoin('benchmark_members as m', 'm.verification_id', 'v.id')
      .where('v.status', 'completed')
      .whereNull('m.verification_id')
      .limit(limit)
      .select<Array<{ id: string; lender_id: string; tape: string }>>('v.id', 'v.lender_id', 't.tape');
    return rows.map((r) => ({ verificationId: r.id, lenderId: r.lender_id, tape: r.tape }));
  }

  /** The cohort of a product type: a few hundred bucket rows and one row per lender, each in up to `shards` rows, however many tapes it holds. */
  async cohort(productType: string): Promise<Cohort> {
    const lendersWithTapes = this.knex('benchmark_lender_shards')
      .where({ product_type: productType })
      .groupBy('lender_id')
      .havingRaw('sum(tapes) > 0')
      .select('lender_id')
      .sum({ tapes: 'tapes' });
    const lenders = (await this.knex.from(lendersWithTapes.as('lenders')).count({ lenders: '*' }).sum({ tapes: 'tapes' }).first()) as
      { lenders: number | string; tapes: number | string | null } | undefined;
    const rows: Array<{ metric: BenchmarkMetricName; bucket: number | string; tapes: number | string }> = await this.knex('benchmark_bucket_shards')
      .where({ product_type: productType })
      .groupBy('metric', 'bucket')
      .havingRaw('sum(tapes) > 0')
      .select('metric', 'bucket')
      .sum({ tapes: 'tapes' });
    const distributions: Partial<Record<BenchmarkMetricName, { counts: Map<number, number>; total: number }>> = {};
    for (const row of rows) {
      const distribution = (distributions[row.metric] ??= { counts: new Map(), total: 0 });
      distribution.counts.set(Number(row.bucket), Number(row.tapes));
      distribution.total += Number(row.tapes);
    }
    return { tapes: Number(lenders?.tapes ?? 0), lenders: Number(lenders?.lenders ?? 0), distributions };
  }

  /**
   * Counts the members not counted yet; one already counted (another process's catch-up got there
   * first) is left as it is. Returns how many it counted.
   */
  private async add(trx: Knex, candidates: Member[]): Promise<number> {
    const shard = randomInt(this.shards);
    const inserted = new Set<string>();
    for (const chunk of chunks(candidates, 200)) {
      const rows = await trx('benchmark_members')
        .insert(
          chunk.map((m) => ({
            verification_id: m.verificationId,
            lender_id: m.lenderId,
            product_type: m.productType,
            buckets: JSON.stringify(m.buckets),
            shard,
          })),
        )
        .onConflict('verification_id')
        .ignore()
        .returning<Array<{ verification_id: string }>>('verification_id');
      for (const row of rows) inserted.add(row.verification_id);
    }
    const members = candidates.filter((m) => inserted.has(m.verificationId));
    if (members.length === 0) return 0;
    const buckets = new Map<string, { productType: string; metric: string; bucket: number; tapes: number }>();
    const lenders = new Map<string, { productType: string; lenderId: string; tapes: number }>();
    for (const member of members) {
      for (const [metric, bucket] of Object.entries(member.buckets)) {
        const key = `${member.productType}\u0000${metric}\u0000${bucket}`;
        const entry = buckets.get(key) ?? { productType: member.productType, metric, bucket, tapes: 0 };
        entry.tapes++;
        buckets.set(key, entry);
      }
      const lenderKey = `${member.productType}\u0000${member.lenderId}`;
      const lender = lenders.get(lenderKey) ?? { productType: member.productType, lenderId: member.lenderId, tapes: 0 };
      lender.tapes++;
      lenders.set(lenderKey, lender);
    }
    // One upsert for many counters (chunked under SQLite's limit of bound values), not one per counter.
    for (const chunk of chunks([...buckets.values()], 200)) {
      await trx('benchmark_bucket_shards')
        .insert(chunk.map((b) => ({ product_type: b.productType, metric: b.metric, bucket: b.bucket, shard, tapes: b.tapes })))
        .onConflict(['product_type', 'metric', 'bucket', 'shard'])
        .merge({ tapes: trx.raw('benchmark_bucket_shards.tapes + excluded.tapes') });
    }
    for (const chunk of chunks([...lenders.values()], 200)) {
      await trx('benchmark_lender_shards')
        .insert(chunk.map((l) => ({ product_type: l.productType, lender_id: l.lenderId, shard, tapes: l.tapes })))
        .onConflict(['product_type', 'lender_id', 'shard'])
        .merge({ tapes: trx.raw('benchmark_lender_shards.tapes + excluded.tapes') });
    }
    return members.length;
  }

  private async remove(trx: Knex, verificationIds: string[]): Promise<void> {
    if (verificationIds.length === 0) return;
    const members = await trx<MemberRow>('benchmark_members').whereIn('verification_id', verificationIds);
    if (members.length === 0) return;
    for (const member of members) {
      const buckets = JSON.parse(member.buckets) as Record<string, number>;
      for (const [metric, bucket] of Object.entries(buckets)) {
        await trx('benchmark_bucket_shards').where({ product_type: member.product_type, metric, bucket, shard: member.shard }).decrement('tapes', 1);
      }
      await trx('benchmark_lender_shards').where({ product_type: member.product_type, lender_id: member.lender_id, shard: member.shard }).decrement('tapes', 1);
    }
    await trx('benchmark_members').whereIn('verification_id', verificationIds).delete();
  }
}
