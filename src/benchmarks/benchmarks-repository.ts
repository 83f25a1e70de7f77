import { randomInt } from 'node:crypto';
import type { Knex } from 'knex';
import { chunks } from '../platform/db/chunks.ts';
import { namedStatement, runNamed, type NamedStatement } from '../platform/db/named-statements.ts';
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
  /** The tapes of each lender in the cohort, most first: what the dominance rule reads (P28). */
  tapesPerLender: number[];
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
 * (docs/performance.md). A transaction counts in the shard fewest of this process's open
 * transactions count in (from a random start, so processes spread too), and only just before it
 * commits, so few of them meet and none waits long; a cohort's read sums the shards, so it costs
 * more with each. SQLite has one writer and no row locks, so there a counter keeps one row. Shard 0
 * is the original tables, which the version before migration 018 reads and writes alone (a rolling
 * deploy runs both); the others are rows of the shard tables.
 */
export const COUNTER_SHARDS = 8;

/** Shard 0's counters: the tables from before migration 018. */
const ORIGINAL_TABLES = { buckets: 'benchmark_buckets', lenders: 'benchmark_lenders' } as const;
/** Every other shard's counters, one row per shard (migration 018). */
const SHARD_TABLES = { buckets: 'benchmark_bucket_shards', lenders: 'benchmark_lender_shards' } as const;
/** Each lender's own tapes per bucket, every shard a row of it (migration 022): subtracted from its peers. */
const LENDER_BUCKETS = 'benchmark_lender_buckets';

type CounterKind = 'buckets' | 'lenders' | 'lenderBuckets';

/** Where a shard's counters of a kind live, and what names the shard in their rows. */
function counterTable(shard: number, kind: CounterKind): { table: string; shardColumn: Record<string, number>; shardKey: string[] } {
  if (kind === 'lenderBuckets') return { table: LENDER_BUCKETS, shardColumn: { shard }, shardKey: ['shard'] };
  return shard === 0
    ? { table: ORIGINAL_TABLES[kind], shardColumn: {}, shardKey: [] }
    : { table: SHARD_TABLES[kind], shardColumn: { shard }, shardKey: ['shard'] };
}

/**
 * PostgreSQL: a first tape counted in one statement (every completed creation), a data-modifying
 * WITH written as one on purpose: its member row, then its bucket rows, its lender's own bucket rows
 * and its lender's row, four round trips of a creation's twelve before. Each counter step runs only
 * once the step before it has run whole (its `count(*)`, a one-time filter), so the rows are taken in
 * the order `CounterChanges.apply` takes them, buckets in the order given: a creation and an erasure
 * or a re-score in one shard never wait for each other in a cycle (a deadlock). A tape already
 * counted (a re-score) inserts no member row and so counts nothing here: `count` then replaces its
 * count as before. One statement for shard 0, whose bucket and lender counters are the tables from
 * before migration 018, and one for the other shards.
 */
function firstTapeStatement(original: boolean): NamedStatement {
  const buckets = original ? ORIGINAL_TABLES.buckets : SHARD_TABLES.buckets;
  const lenders = original ? ORIGINAL_TABLES.lenders : SHARD_TABLES.lenders;
  const shardColumn = original ? '' : ', "shard"';
  const shardValue = original ? '' : ', ?';
  const counted = '(select count(*) from "member") = 1';
  const increment = (table: string) => `do update set "tapes" = "${table}"."tapes" + excluded."tapes" returning 1`;
  return namedStatement(
    `count_first_tape${original ? '' : '_in_shard'}`,
    `with "member" as (
      insert into "benchmark_members" ("verification_id", "lender_id", "product_type", "buckets", "shard") values (?, ?, ?, ?, ?)
      on conflict ("verification_id") do nothing returning 1
    ), "buckets" as (
      insert into "${buckets}" ("product_type", "metric", "bucket"${shardColumn}, "tapes")
      select ?, b.metric, b.bucket${shardValue}, 1 from unnest(?::text[], ?::int[]) with ordinality as b(metric, bucket, n)
      where ${counted} order by b.n
      on conflict ("product_type", "metric", "bucket"${shardColumn}) ${increment(buckets)}
    ), "lender_buckets" as (
      insert into "${LENDER_BUCKETS}" ("product_type", "lender_id", "metric", "bucket", "shard", "tapes")
      select ?, ?, b.metric, b.bucket, ?, 1 from unnest(?::text[], ?::int[]) with ordinality as b(metric, bucket, n)
      where ${counted} and (select count(*) from "buckets") >= 0 order by b.n
      on conflict ("product_type", "lender_id", "metric", "bucket", "shard") ${increment(LENDER_BUCKETS)}
    ), "lender" as (
      insert into "${lenders}" ("product_type", "lender_id"${shardColumn}, "tapes")
      select ?, ?${shardValue}, 1 where ${counted} and (select count(*) from "lender_buckets") >= 0
      on conflict ("product_type", "lender_id"${shardColumn}) ${increment(lenders)}
    )
    select (select count(*) from "member") as "counted", (select count(*) from "lender") as "lenders"`,
  );
}
const COUNT_FIRST_TAPE = { original: firstTapeStatement(true), sharded: firstTapeStatement(false) };

/** A member's buckets in the order `CounterChanges` takes their rows. */
function bucketsInOrder(buckets: Member['buckets']): { metrics: string[]; buckets: number[] } {
  const entries = Object.entries(buckets)
    .map(([metric, bucket]) => ({ metric, bucket: Number(bucket), key: bucketName(metric, bucket) }))
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return { metrics: entries.map((e) => e.metric), buckets: entries.map((e) => e.bucket) };
}

function bucketName(metric: string, bucket: number | string): string {
  return `${metric}\u0000${String(bucket).padStart(6, '0')}`;
}

/** The only code that reads or writes the benchmark aggregates. */
export class BenchmarksRepository {
  private readonly shards: number;
  /** How many of this process's open transactions count in each shard. */
  private readonly countingIn: number[];
  private readonly shardOfUnit = new WeakMap<UnitOfWork, number>();
  /** The tapes each open unit of work has recorded, counted just before it commits. */
  private readonly recordedIn = new WeakMap<UnitOfWork, Map<string, Member>>();

  /** PostgreSQL: a creation's tape counted in one statement rather than four (`firstTapeStatement`). */
  private readonly firstTapesInOneStatement: boolean;

  constructor(
    private readonly knex: Knex,
    shards?: number,
    options: { firstTapesInOneStatement?: boolean } = {},
  ) {
    const postgres = (knex.client as Knex.Client).config.client === 'pg';
    this.shards = shards ?? (postgres ? COUNTER_SHARDS : 1);
    this.firstTapesInOneStatement = postgres && (options.firstTapesInOneStatement ?? true);
    this.countingIn = new Array<number>(this.shards).fill(0);
  }

  /**
   * Counts the tape in its cohort, in place of what it counted as before (a tape scored again), in
   * the unit of work just before it commits: the counters' row locks are then held for the commit
   * alone, not for the rest of the unit's statements. Every tape a unit records is counted in one
   * pass, so its counters change in the order of their keys however many tapes it records.
   */
  async record(unit: UnitOfWork, member: Member): Promise<void> {
    const recorded = this.recordedIn.get(unit);
    if (recorded) {
      recorded.set(member.verificationId, member);
      return;
    }
    const members = new Map([[member.verificationId, member]]);
    this.recordedIn.set(unit, members);
    unit.beforeCommit(() => {
      // A tape recorded after this step has begun (by a later before-commit step) gets a step of its own.
      this.recordedIn.delete(unit);
      return this.count(transactionOf(unit), this.shardFor(unit), [...members.values()]);
    });
  }

  /** Counts the unit's tapes (the latest score of each) in one pass of counter changes. */
  private async count(trx: Knex.Transaction, shard: number, members: Member[]): Promise<void> {
    // A first tape (every creation) is counted by its member row's insert alone, without first
    // looking for a count to take back; only a tape counted before meets its own member row and is
    // replaced, in the shard it was counted in: moved to another, two tapes re-scored at once could
    // each hold rows of the shard the other moves to, and PostgreSQL would abort one as a deadlock.
    const changes = new CounterChanges();
    const added =
      this.firstTapesInOneStatement && members.length === 1
        ? await this.countFirstTape(trx, shard, members[0]!)
        : await this.insertMembers(trx, shard, members, changes);
    const recounted = members.filter((member) => !added.has(member.verificationId));
    const counted = new Map<string, MemberRow>();
    if (recounted.length > 0) {
      const rows = await trx<MemberRow>('benchmark_members').whereIn(
        'verification_id',
        recounted.map((member) => member.verificationId),
      );
      for (const row of rows) counted.set(row.verification_id, row);
    }
    for (const member of recounted) {
      const before = counted.get(member.verificationId);
      if (!before) continue;
      changes.count(before.shard, before.product_type, before.lender_id, JSON.parse(before.buckets) as Member['buckets'], -1);
      changes.count(before.shard, member.productType, member.lenderId, member.buckets, +1);
    }
    await changes.apply(trx);
    for (const member of recounted.filter((m) => counted.has(m.verificationId))) {
      await trx('benchmark_members')
        .where({ verification_id: member.verificationId })
        .update({ lender_id: member.lenderId, product_type: member.productType, buckets: JSON.stringify(member.buckets) });
    }
  }

  /** Counts a tape not counted yet in one statement (`firstTapeStatement`); answers its id if it was counted now. */
  private async countFirstTape(trx: Knex.Transaction, shard: number, member: Member): Promise<Set<string>> {
    const { metrics, buckets } = bucketsInOrder(member.buckets);
    const { verificationId, lenderId, productType } = member;
    const shardValue = shard === 0 ? [] : [shard];
    const [result] = await runNamed<{ counted: number | string }>(trx, shard === 0 ? COUNT_FIRST_TAPE.original : COUNT_FIRST_TAPE.sharded, [
      ...[verificationId, lenderId, productType, JSON.stringify(member.buckets), shard],
      ...[productType, ...shardValue, metrics, buckets],
      ...[productType, lenderId, shard, metrics, buckets],
      ...[productType, lenderId, ...shardValue],
    ]);
    return new Set(Number(result?.counted) === 1 ? [verificationId] : []);
  }

  /** Takes erased tapes out of their cohorts. */
  async erase(unit: UnitOfWork, verificationIds: string[]): Promise<Record<string, number>> {
    // Tapes this unit recorded and has not counted yet are erased before they are counted.
    const recorded = this.recordedIn.get(unit);
    for (const id of verificationIds) recorded?.delete(id);
    await this.remove(transactionOf(unit), verificationIds);
    return {};
  }

  /**
   * The shard the transaction counts in: the one fewest of this process's open transactions count
   * in, looked for from a random start so that several processes spread as well. The transaction
   * keeps it until it ends, committed or rolled back, however many tapes it counts: counting in two
   * shards, it could hold rows of a shard another transaction holds rows of the other one of. (A
   * nested transaction, a savepoint, would count as one of its own; the service nests none.)
   */
  private shardFor(unit: UnitOfWork): number {
    const held = this.shardOfUnit.get(unit);
    if (held !== undefined) return held;
    const shard = this.takeShard();
    this.shardOfUnit.set(unit, shard);
    unit.afterEnd(() => void this.countingIn[shard]!--);
    return shard;
  }

  private takeShard(): number {
    const start = randomInt(this.shards);
    let shard = start;
    for (let step = 1; step < this.shards; step++) {
      const candidate = (start + step) % this.shards;
      if (this.countingIn[candidate]! < this.countingIn[shard]!) shard = candidate;
    }
    this.countingIn[shard]!++;
    return shard;
  }

  /** Adds many members at once (a catch-up, or a benchmark run); those already counted are skipped. */
  async addMany(members: Member[]): Promise<void> {
    const shard = this.takeShard();
    try {
      await this.knex.transaction(async (trx) => {
        const changes = new CounterChanges();
        await this.insertMembers(trx, shard, members, changes);
        await changes.apply(trx);
      });
    } finally {
      this.countingIn[shard]!--;
    }
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

  /**
   * The cohort of a product type as `lenderId` sees it: everyone's tapes but its own (P28). A few
   * hundred bucket rows, as many of the lender's own, and one row per lender, each in up to `shards`
   * rows, however many tapes they hold.
   */
  async cohort(productType: string, lenderId?: string): Promise<Cohort> {
    const everyShard = (columns: string[], table: 'buckets' | 'lenders') =>
      this.knex
        .select(...columns, 'tapes')
        .from(ORIGINAL_TABLES[table])
        .where({ product_type: productType })
        .unionAll(
          (shards) =>
            void shards
              .select(...columns, 'tapes')
              .from(SHARD_TABLES[table])
              .where({ product_type: productType }),
        )
        .as('counters');
    const lenderRows: Array<{ lender_id: string; tapes: number | string }> = await this.knex
      .from(everyShard(['lender_id'], 'lenders'))
      .groupBy('lender_id')
      .havingRaw('sum(tapes) > 0')
      .select('lender_id')
      .sum({ tapes: 'tapes' });
    const rows: Array<{ metric: BenchmarkMetricName; bucket: number | string; tapes: number | string }> = await this.knex
      .from(everyShard(['metric', 'bucket'], 'buckets'))
      .groupBy('metric', 'bucket')
      .havingRaw('sum(tapes) > 0')
      .select('metric', 'bucket')
      .sum({ tapes: 'tapes' });
    const own: Array<{ metric: BenchmarkMetricName; bucket: number | string; tapes: number | string }> =
      lenderId === undefined
        ? []
        : await this.knex(LENDER_BUCKETS)
            .where({ product_type: productType, lender_id: lenderId })
            .groupBy('metric', 'bucket')
            .select('metric', 'bucket')
            .sum({ tapes: 'tapes' });
    const counts = new Map<BenchmarkMetricName, Map<number, number>>();
    const add = (metric: BenchmarkMetricName, bucket: number, tapes: number) => {
      const buckets = counts.get(metric) ?? counts.set(metric, new Map()).get(metric)!;
      buckets.set(bucket, (buckets.get(bucket) ?? 0) + tapes);
    };
    for (const row of rows) add(row.metric, Number(row.bucket), Number(row.tapes));
    for (const row of own) add(row.metric, Number(row.bucket), -Number(row.tapes));
    const distributions: Partial<Record<BenchmarkMetricName, { counts: Map<number, number>; total: number }>> = {};
    for (const [metric, buckets] of counts) {
      const distribution = { counts: new Map<number, number>(), total: 0 };
      // Never below zero, should a count of its own outrun the cohort's (a tape counted by a version
      // before migration 022 and erased by this one).
      for (const [bucket, tapes] of buckets) {
        if (tapes <= 0) continue;
        distribution.counts.set(bucket, tapes);
        distribution.total += tapes;
      }
      if (distribution.total > 0) distributions[metric] = distribution;
    }
    const tapesPerLender = lenderRows
      .filter((row) => row.lender_id !== lenderId)
      .map((row) => Number(row.tapes))
      .sort((a, b) => b - a);
    return { tapes: tapesPerLender.reduce((a, b) => a + b, 0), lenders: tapesPerLender.length, tapesPerLender, distributions };
  }

  /**
   * Inserts the member rows of the candidates not counted yet, in the transaction's shard, and adds
   * them to `changes`; one already counted (another process's catch-up got there first, or a tape
   * scored again) is left as it is. Returns the ids of those it inserted.
   */
  private async insertMembers(trx: Knex.Transaction, shard: number, candidates: Member[], changes: CounterChanges): Promise<Set<string>> {
    const inserted = new Set<string>();
    for (const chunk of chunks(candidates, 200)) {
      const rows: Array<{ verification_id: string }> = await trx('benchmark_members')
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
        .returning('verification_id');
      for (const row of rows) inserted.add(row.verification_id);
    }
    for (const member of candidates) if (inserted.has(member.verificationId)) changes.count(shard, member.productType, member.lenderId, member.buckets, +1);
    return inserted;
  }

  /** Takes the members out of the shards they were counted in. */
  private async remove(trx: Knex.Transaction, verificationIds: string[]): Promise<void> {
    if (verificationIds.length === 0) return;
    const members = await trx<MemberRow>('benchmark_members').whereIn('verification_id', verificationIds);
    if (members.length === 0) return;
    const changes = new CounterChanges();
    for (const member of members) changes.count(member.shard, member.product_type, member.lender_id, JSON.parse(member.buckets) as Member['buckets'], -1);
    await changes.apply(trx);
    await trx('benchmark_members').whereIn('verification_id', verificationIds).delete();
  }
}

/**
 * Changes to counters, made in one pass in the order of their keys (shard, then the bucket rows, then
 * the lenders' own bucket rows, then the lender rows): on PostgreSQL each change holds its row's lock until commit, and two transactions
 * that took the same rows in different orders (two tapes re-scored at once, one from bucket p to q
 * and the other from q to p; a catch-up and a creation) would each wait for the other until
 * PostgreSQL aborted one as a deadlock. Consecutive increments of one table are one upsert (a
 * creation's are two statements), taking its rows in the order given.
 */
class CounterChanges {
  private readonly changes = new Map<string, { shard: number; kind: CounterKind; row: Record<string, string | number>; delta: number }>();

  /** Adds `delta` to every counter a tape counts in: its buckets, its lender's own buckets and its lender's, in `shard`. */
  count(shard: number | string, productType: string, lenderId: string, buckets: Member['buckets'], delta: number): void {
    for (const [metric, bucket] of Object.entries(buckets)) {
      const name = bucketName(metric, bucket);
      this.change(Number(shard), 'buckets', name, { product_type: productType, metric, bucket }, delta);
      this.change(Number(shard), 'lenderBuckets', `${lenderId}\u0000${name}`, { product_type: productType, lender_id: lenderId, metric, bucket }, delta);
    }
    this.change(Number(shard), 'lenders', lenderId, { product_type: productType, lender_id: lenderId }, delta);
  }

  private change(shard: number, kind: CounterKind, name: string, row: Record<string, string | number>, delta: number): void {
    const key = `${String(shard).padStart(4, '0')}\u0000${kind}\u0000${String(row.product_type)}\u0000${name}`;
    const existing = this.changes.get(key);
    if (existing) existing.delta += delta;
    else this.changes.set(key, { shard, kind, row, delta });
  }

  async apply(trx: Knex.Transaction): Promise<void> {
    // Consecutive increments of one table are one step; each decrement is a step of its own.
    const steps: Array<{ table: string; conflict: string[]; rows: Array<Record<string, string | number>>; delta: number }> = [];
    for (const [, { shard, kind, row, delta }] of [...this.changes].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      if (delta === 0) continue;
      const { table, shardColumn, shardKey } = counterTable(shard, kind);
      const counter = { ...row, ...shardColumn };
      const last = steps.at(-1);
      if (delta > 0 && last && last.delta > 0 && last.table === table) last.rows.push({ ...counter, tapes: delta });
      else steps.push({ table, conflict: [...Object.keys(row), ...shardKey], rows: [delta > 0 ? { ...counter, tapes: delta } : counter], delta });
    }
    for (const { table, conflict, rows, delta } of steps) {
      if (delta < 0) {
        await trx(table).where(rows[0]!).decrement('tapes', -delta);
        continue;
      }
      // Chunked under SQLite's limit of bound values.
      for (const chunk of chunks(rows, 200)) {
        await trx(table)
          .insert(chunk)
          .onConflict(conflict)
          .merge({ tapes: trx.raw('??.?? + excluded.??', [table, 'tapes', 'tapes']) });
      }
    }
  }
}
