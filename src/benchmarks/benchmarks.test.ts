import assert from 'node:assert/strict';
import type { Knex } from 'knex';
import { readFileSync } from 'node:fs';
import { buildReferencePopulation, REFERENCE_POPULATION_FILE, serialise } from '../../scripts/reference-population.ts';
import { testDatabases, type TestDatabase } from '../../test/support/test-databases.ts';
import { openDatabase, type Database } from '../platform/db/database.ts';
import { migrations } from '../platform/db/migrations/index.ts';
import { inUnitOfWork } from '../platform/db/unit-of-work.ts';
import { BenchmarksRepository, COUNTER_SHARDS, type Member } from './benchmarks-repository.ts';
import { countUncountedTapes, peerBenchmark, loadReferencePopulation } from './peer-benchmark.ts';
import { BUCKET_EDGES, bucketOf, percentileOf, quantile } from './scales.ts';

describe('benchmark buckets', () => {
  it('place a value after the last edge at or below it, and publish quartiles as bucket edges', () => {
    assert.equal(bucketOf('platform_hhi', -1), 0);
    assert.equal(bucketOf('platform_hhi', 0), 1);
    assert.equal(bucketOf('platform_hhi', 0.019), 1);
    assert.equal(bucketOf('platform_hhi', 0.02), 2);
    assert.equal(bucketOf('platform_hhi', 5), BUCKET_EDGES.platform_hhi.length);
    const distribution = { counts: new Map([[bucketOf('platform_hhi', 0.5), 10]]), total: 10 };
    assert.equal(quantile('platform_hhi', distribution, 0.5), 0.5);
    assert.equal(percentileOf('platform_hhi', distribution, 0.5), 50);
    assert.equal(percentileOf('platform_hhi', distribution, 0.9), 100);
    assert.equal(percentileOf('platform_hhi', distribution, 0.1), 0);
  });

  it('the committed reference population is what scripts/reference-population.ts builds', () => {
    assert.equal(readFileSync(REFERENCE_POPULATION_FILE, 'utf8'), serialise(buildReferencePopulation()), 'run npm run generate:reference-population');
  });
});

for (const factory of testDatabases()) {
  describe(`peer benchmark cohorts on ${factory.name} (P22)`, () => {
    let testDb: TestDatabase;
    let db: Database;
    let repository: BenchmarksRepository;
    let sequence = 0;

    beforeEach(async () => {
      testDb = await factory.create();
      db = openDatabase(testDb.url);
      await db.migrate();
      repository = new BenchmarksRepository(db.knex);
    });
    afterEach(async () => {
      await db.close();
      await testDb.drop();
    });

    /** Verifications (the members' foreign key) with tapes whose HHI is `hhi`, spread over `lenders` lenders. */
    const members = async (count: number, lenders: number, hhi = 0.5): Promise<Member[]> => {
      const created: Member[] = [];
      for (let i = 0; i < count; i++) {
        const lenderId = `lnd_bench${i % lenders}`;
        const id = `vrf_bench${sequence++}`;
        await db
          .knex('lender_accounts')
          .insert({ id: lenderId, name: lenderId, plan: 'pilot', jurisdiction: 'other', ip_allowlist: '[]', created_at: 'x', updated_at: 'x' })
          .onConflict('id')
          .ignore();
        await db.knex('verifications').insert({
          id,
          lender_id: lenderId,
          obligor_reference: id,
          creator_platforms: '["youtube"]',
          lender_name: lenderId,
          product_type: 'rbf',
          status: 'completed',
          consent_token_hash: id,
          consent_url: 'x',
          expires_at: 'x',
          created_at: 'x',
          updated_at: 'x',
        });
        created.push({ verificationId: id, lenderId, productType: 'rbf', buckets: { platform_hhi: bucketOf('platform_hhi', hhi) } });
      }
      return created;
    };
    /** `count` tapes of one lender, each with HHI `hhi`. */
    const tapesOf = async (lenderId: string, count: number, hhi: number): Promise<Member[]> =>
      (await members(count, 1, hhi)).map((member) => ({ ...member, lenderId }));
    const benchmarkOf = async (tapeHhi: number, askingLender = 'lnd_asking') =>
      peerBenchmark(
        {
          lifecycle: {
            findTapeForLender: async () => ({
              status: 'completed' as const,
              tape: {
                eligibility: { product_type: 'rbf', income_stability_score: 0.5 },
                metrics: { monthly_revenue_avg_eur: 100 },
                risk_profile: { platform_hhi: tapeHhi, revenue_volatility_cv: 0.2, max_drawdown_pct: 10, trend_slope_eur_per_month: 1 },
              } as never,
            }),
          },
          benchmarks: repository,
          reference: loadReferencePopulation(),
          now: () => new Date(),
        },
        askingLender,
        'vrf_any',
      );

    // The floor of P22: 30 tapes of at least 3 lenders.
    it('a cohort of 29 tapes falls back to the reference population; 30 are shown', async () => {
      await repository.addMany(await members(29, 3));
      const small = await benchmarkOf(0.5);
      assert.equal(small.cohort.source, 'reference');
      assert.ok(small.cohort.size >= 1000, 'the reference population, not the peers');
      await repository.addMany(await members(1, 3));
      const floor = await benchmarkOf(0.5);
      assert.deepEqual([floor.cohort.source, floor.cohort.size], ['peers', 30]);
      assert.deepEqual([floor.metrics.platform_hhi.median, floor.metrics.platform_hhi.percentile], [0.5, 50]);
    });

    it('peers from fewer than 3 lenders fall back to the reference population, however many tapes', async () => {
      await repository.addMany(await members(100, 2));
      assert.equal((await benchmarkOf(0.5)).cohort.source, 'reference');
    });

    it("a lender with 29 of 31 tapes cannot place the median on another lender's single tape by adding its own (P28)", async () => {
      // The attack: A's tapes split between the two ends, B's and C's single tapes in between, so the
      // cohort's median falls on B's bucket; one more tape of A's at the bottom moves it to A's.
      const [low, high] = [0.1, 0.9];
      await repository.addMany([
        ...(await tapesOf('lnd_a', 15, low)),
        ...(await tapesOf('lnd_a', 14, high)),
        ...(await tapesOf('lnd_b', 1, 0.5)),
        ...(await tapesOf('lnd_c', 1, 0.7)),
      ]);
      const before = await benchmarkOf(0.5, 'lnd_a');
      await repository.addMany(await tapesOf('lnd_a', 1, low));
      const after = await benchmarkOf(0.5, 'lnd_a');
      for (const answer of [before, after]) {
        assert.ok(![0.5, 0.7].includes(answer.metrics.platform_hhi.median), `the median ${answer.metrics.platform_hhi.median} shows B's or C's tape`);
      }
      assert.deepEqual([after.cohort, after.metrics], [before.cohort, before.metrics], "A's own tape moved its answer");
      assert.equal(before.cohort.source, 'reference', 'the peers of A are two tapes of two lenders: below the floor');
      // B's peers: 30 tapes but of two lenders, one of them with 30 of 31.
      assert.equal((await benchmarkOf(0.5, 'lnd_b')).cohort.source, 'reference');
    });

    it("a lender's own tapes never move its answer, and peers are shown from 30 tapes of 3 other lenders", async () => {
      await repository.addMany([...(await tapesOf('lnd_d', 10, 0.3)), ...(await tapesOf('lnd_e', 10, 0.5)), ...(await tapesOf('lnd_f', 10, 0.7))]);
      await repository.addMany(await tapesOf('lnd_q', 10, 0.5));
      const before = await benchmarkOf(0.5, 'lnd_q');
      assert.deepEqual([before.cohort.source, before.cohort.size], ['peers', 30]);
      assert.deepEqual([before.metrics.platform_hhi.p25, before.metrics.platform_hhi.median, before.metrics.platform_hhi.p75], [0.3, 0.5, 0.7]);
      await repository.addMany(await tapesOf('lnd_q', 25, 0.9));
      const after = await benchmarkOf(0.5, 'lnd_q');
      assert.deepEqual([after.cohort, after.metrics], [before.cohort, before.metrics]);
      // D's peers: E, F and Q, with Q at 35 of 55 tapes, more than half.
      assert.equal((await benchmarkOf(0.5, 'lnd_d')).cohort.source, 'reference');
    });

    it('falls back to the reference population while one lender holds more than half of the peers (P28)', async () => {
      await repository.addMany([...(await tapesOf('lnd_d', 16, 0.3)), ...(await tapesOf('lnd_e', 7, 0.5)), ...(await tapesOf('lnd_f', 7, 0.7))]);
      assert.equal((await benchmarkOf(0.5)).cohort.source, 'reference', '16 of 30');
      await repository.addMany(await tapesOf('lnd_e', 2, 0.5));
      const half = await benchmarkOf(0.5);
      assert.deepEqual([half.cohort.source, half.cohort.size], ['peers', 30], '16 of 32');
    });

    it('publishes the size in steps of 10, so one more tape does not show', async () => {
      await repository.addMany(await members(34, 4));
      const before = await benchmarkOf(0.5);
      await repository.addMany(await members(1, 4, 0.9));
      const after = await benchmarkOf(0.5);
      assert.deepEqual([before.cohort.size, after.cohort.size], [30, 30]);
      assert.equal(after.metrics.platform_hhi.p75, before.metrics.platform_hhi.p75, 'one tape at the top does not move the upper quartile');
    });

    it('an erased or re-scored tape leaves its old buckets, and the cohort counts it once', async () => {
      const cohort = await members(40, 4);
      await repository.addMany(cohort);
      await inUnitOfWork(db.knex, (unit) =>
        repository.erase(
          unit,
          cohort.slice(0, 15).map((m) => m.verificationId),
        ),
      );
      assert.equal((await repository.cohort('rbf')).tapes, 25);
      await inUnitOfWork(db.knex, (unit) => repository.record(unit, { ...cohort[20]!, buckets: { platform_hhi: bucketOf('platform_hhi', 0.9) } }));
      const rescored = await repository.cohort('rbf');
      assert.equal(rescored.tapes, 25);
      assert.equal(rescored.distributions.platform_hhi!.total, 25);
      assert.equal(rescored.distributions.platform_hhi!.counts.get(bucketOf('platform_hhi', 0.9)), 1);
    });

    /** Each counter row of every shard ("shard metric bucket" → tapes), and what the member rows say they should hold. */
    const shardCounts = async () => {
      const rows = [
        ...(await db.knex('benchmark_buckets').select('metric', 'bucket', 'tapes')).map((row: object) => ({ ...row, shard: 0 })),
        ...(await db.knex('benchmark_bucket_shards').select('metric', 'bucket', 'tapes', 'shard')),
      ] as Array<{ metric: string; bucket: number; tapes: number; shard: number }>;
      const stored = Object.fromEntries(
        rows.filter((row) => Number(row.tapes) !== 0).map((row) => [`${row.shard} ${row.metric} ${row.bucket}`, Number(row.tapes)]),
      );
      const expected: Record<string, number> = {};
      for (const member of await db.knex('benchmark_members').select<Array<{ shard: number; buckets: string }>>('shard', 'buckets')) {
        for (const [metric, bucket] of Object.entries(JSON.parse(member.buckets) as Record<string, number>)) {
          const key = `${member.shard} ${metric} ${bucket}`;
          expected[key] = (expected[key] ?? 0) + 1;
        }
      }
      return { stored, expected, negative: rows.filter((row) => Number(row.tapes) < 0) };
    };
    /** Each lender's own bucket counters ("shard lender metric bucket" → tapes), and what the member rows say they should hold. */
    const lenderCounts = async () => {
      const rows: Array<{ shard: number; lender_id: string; metric: string; bucket: number; tapes: number }> = await db
        .knex('benchmark_lender_buckets')
        .select('shard', 'lender_id', 'metric', 'bucket', 'tapes');
      const stored = Object.fromEntries(
        rows.filter((row) => Number(row.tapes) !== 0).map((row) => [`${row.shard} ${row.lender_id} ${row.metric} ${row.bucket}`, Number(row.tapes)]),
      );
      const expected: Record<string, number> = {};
      for (const member of await db
        .knex('benchmark_members')
        .select<Array<{ shard: number; lender_id: string; buckets: string }>>('shard', 'lender_id', 'buckets')) {
        for (const [metric, bucket] of Object.entries(JSON.parse(member.buckets) as Record<string, number>)) {
          const key = `${member.shard} ${member.lender_id} ${metric} ${bucket}`;
          expected[key] = (expected[key] ?? 0) + 1;
        }
      }
      return { stored, expected };
    };
    const shardOf = async (verificationId: string) =>
      Number((await db.knex('benchmark_members').where({ verification_id: verificationId }).first('shard')).shard);

    it('counts each tape in a shard of its counters, takes it out of that shard, and a cohort sums the shards', async () => {
      const cohort = await members(60, 5);
      // Sharded on either database (SQLite keeps one shard in the service).
      repository = new BenchmarksRepository(db.knex, COUNTER_SHARDS);
      // One unit of work each, as creations count: each picks its shard.
      for (const member of cohort) await inUnitOfWork(db.knex, (unit) => repository.record(unit, member));
      const counted = await shardCounts();
      assert.ok(Object.keys(counted.stored).length > 1, 'sixty tapes all counted in one shard');
      assert.deepEqual(counted.stored, counted.expected);
      assert.deepEqual([(await repository.cohort('rbf')).tapes, (await repository.cohort('rbf')).lenders], [60, 5]);
      // A lender whose tapes are all erased is no longer a peer, whichever shards held them.
      await inUnitOfWork(db.knex, (unit) =>
        repository.erase(
          unit,
          cohort.filter((m) => m.lenderId === 'lnd_bench0').map((m) => m.verificationId),
        ),
      );
      // Scored again: counted again in the shard it was in.
      const rescored = cohort[1]!;
      const shardBefore = await shardOf(rescored.verificationId);
      await inUnitOfWork(db.knex, (unit) => repository.record(unit, { ...rescored, buckets: { platform_hhi: bucketOf('platform_hhi', 0.9) } }));
      assert.equal(await shardOf(rescored.verificationId), shardBefore);
      const left = await shardCounts();
      assert.deepEqual(left.stored, left.expected);
      assert.deepEqual(left.negative, []);
      const own = await lenderCounts();
      assert.deepEqual(own.stored, own.expected);
      const after = await repository.cohort('rbf');
      assert.deepEqual([after.tapes, after.lenders, after.distributions.platform_hhi!.total], [48, 4, 48]);
      assert.equal(after.distributions.platform_hhi!.counts.get(bucketOf('platform_hhi', 0.9)), 1);
      assert.equal(after.distributions.platform_hhi!.counts.get(bucketOf('platform_hhi', 0.5)), 47);
    });

    it('re-scores tapes at once in opposite directions, one bucket to another and back, without a deadlock', async () => {
      // One shard, so that every change meets every other.
      repository = new BenchmarksRepository(db.knex, 1);
      const cohort = await members(8, 4);
      const [low, high] = [bucketOf('platform_hhi', 0.1), bucketOf('platform_hhi', 0.9)];
      const scored = (member: Member, i: number, round: number) => ({ ...member, buckets: { platform_hhi: (i + round) % 2 ? high : low } });
      for (const [i, member] of cohort.entries()) await inUnitOfWork(db.knex, (unit) => repository.record(unit, scored(member, i, 0)));
      for (let round = 1; round <= 12; round++) {
        await Promise.all(cohort.map((member, i) => inUnitOfWork(db.knex, (unit) => repository.record(unit, scored(member, i, round)))));
      }
      const counted = await shardCounts();
      assert.deepEqual(counted.stored, counted.expected);
      const own = await lenderCounts();
      assert.deepEqual(own.stored, own.expected);
      assert.deepEqual(
        (await repository.cohort('rbf')).distributions.platform_hhi!.counts,
        new Map([
          [low, 4],
          [high, 4],
        ]),
      );
    });

    it('counts every tape a unit records once, at its latest score, a first tape and a re-scored one alike', async () => {
      const [first, rescored] = await members(2, 2);
      await inUnitOfWork(db.knex, (unit) => repository.record(unit, { ...rescored!, buckets: { platform_hhi: bucketOf('platform_hhi', 0.1) } }));
      await inUnitOfWork(db.knex, async (unit) => {
        await repository.record(unit, { ...first!, buckets: { platform_hhi: bucketOf('platform_hhi', 0.1) } });
        await repository.record(unit, { ...rescored!, buckets: { platform_hhi: bucketOf('platform_hhi', 0.9) } });
        await repository.record(unit, { ...first!, buckets: { platform_hhi: bucketOf('platform_hhi', 0.5) } });
      });
      const counted = await shardCounts();
      assert.deepEqual(counted.stored, counted.expected);
      assert.deepEqual(
        (await repository.cohort('rbf')).distributions.platform_hhi!.counts,
        new Map([
          [bucketOf('platform_hhi', 0.5), 1],
          [bucketOf('platform_hhi', 0.9), 1],
        ]),
      );
    });

    it('counts a tape a unit records after its counting began, and not one it erases before it commits', async () => {
      const [erased, late, kept] = await members(3, 3);
      await inUnitOfWork(db.knex, async (unit) => {
        await repository.record(unit, erased!);
        await repository.record(unit, kept!);
        // Registered after the counting step the first record asked for: it records once that step ran.
        unit.beforeCommit(() => repository.record(unit, late!));
        await repository.erase(unit, [erased!.verificationId]);
      });
      const counted = await db.knex('benchmark_members').orderBy('verification_id').pluck('verification_id');
      assert.deepEqual(counted, [late!.verificationId, kept!.verificationId].sort());
      const shards = await shardCounts();
      assert.deepEqual(shards.stored, shards.expected);
    });

    it('counts a first tape in one statement on PostgreSQL, taking its counter rows in the order the other counting steps take them', async function () {
      if (db.dialect !== 'postgres') return this.skip();
      // One shard: the statement on the tables from before migration 018; the other shards' is built alike.
      repository = new BenchmarksRepository(db.knex, 1);
      const buckets = { platform_hhi: bucketOf('platform_hhi', 0.5), revenue_volatility_cv: bucketOf('revenue_volatility_cv', 0.2) };
      const [first, ...later] = (await members(4, 1)).map((member) => ({ ...member, buckets }));
      await inUnitOfWork(db.knex, (unit) => repository.record(unit, first!));
      const lender = first!.lenderId;
      // The rows a second tape of the lender counts in, in the order CounterChanges.apply takes them.
      const steps = [
        (k: Knex) => k('benchmark_buckets').where({ product_type: 'rbf', metric: 'platform_hhi' }),
        (k: Knex) => k('benchmark_lender_buckets').where({ product_type: 'rbf', lender_id: lender, metric: 'platform_hhi' }),
        (k: Knex) => k('benchmark_lenders').where({ product_type: 'rbf', lender_id: lender }),
      ];
      /** Whether another transaction holds a lock on the step's row. */
      const locked = async (step: (k: Knex) => Knex.QueryBuilder) => {
        try {
          await db.knex.transaction((trx) => step(trx).forUpdate().noWait().select('tapes'));
          return false;
        } catch (error) {
          if ((error as { code?: string }).code === '55P03') return true;
          throw error;
        }
      };
      for (const [held, step] of steps.entries()) {
        const holder = await db.knex.transaction();
        await step(holder).forUpdate().select('tapes');
        const counting = inUnitOfWork(db.knex, (unit) => repository.record(unit, later[held]!));
        const seen: Record<number, boolean> = {};
        try {
          const deadline = Date.now() + 5000;
          while (!(await db.knex.raw(`select 1 from pg_stat_activity where wait_event_type = 'Lock' and query like 'with "member"%'`)).rows.length) {
            assert.ok(Date.now() < deadline, `the counting statement never waited for the row of step ${held}`);
            await new Promise((resolve) => setTimeout(resolve, 20));
          }
          for (const [other, otherStep] of steps.entries()) if (other !== held) seen[other] = await locked(otherStep);
        } finally {
          await holder.commit();
          await counting;
        }
        const expected = Object.fromEntries(Object.keys(seen).map((other) => [other, Number(other) < held]));
        assert.deepEqual(seen, expected, `rows locked (by step) while the row of step ${held} is held`);
      }
      const cohort = await repository.cohort('rbf');
      assert.deepEqual([cohort.tapes, cohort.distributions.platform_hhi!.total, cohort.distributions.revenue_volatility_cv!.total], [4, 4, 4]);
      const own = await lenderCounts();
      assert.deepEqual(own.stored, own.expected);
    });

    it('counts first tapes, erasures and re-scores of the same counters at once without a deadlock, as the counting steps would', async () => {
      // One shard, so that every change meets every other; on PostgreSQL first tapes count in one statement.
      const twoMetrics = (member: Member, hhi: number) => ({
        ...member,
        buckets: { platform_hhi: bucketOf('platform_hhi', hhi), revenue_volatility_cv: bucketOf('revenue_volatility_cv', 1 - hhi) },
      });
      const counts = async (inOneStatement: boolean) => {
        await db.knex('benchmark_members').delete();
        for (const table of ['benchmark_buckets', 'benchmark_lender_buckets', 'benchmark_lenders']) await db.knex(table).delete();
        repository = new BenchmarksRepository(db.knex, 1, { firstTapesInOneStatement: inOneStatement });
        const cohort = (await members(24, 3)).map((member, i) => twoMetrics(member, i % 2 ? 0.9 : 0.1));
        for (const member of cohort.slice(0, 12)) await inUnitOfWork(db.knex, (unit) => repository.record(unit, member));
        await Promise.all(
          cohort.map((member, i) =>
            inUnitOfWork(db.knex, async (unit) => {
              // Four erased, eight re-scored the other way, twelve counted for the first time.
              if (i < 4) await repository.erase(unit, [member.verificationId]);
              else await repository.record(unit, i < 12 ? twoMetrics(member, i % 2 ? 0.1 : 0.9) : member);
            }),
          ),
        );
        const own = await lenderCounts();
        assert.deepEqual(own.stored, own.expected);
        const shards = await shardCounts();
        assert.deepEqual(shards.stored, shards.expected);
        const { tapes, lenders, distributions } = await repository.cohort('rbf');
        return { tapes, lenders, distributions };
      };
      const inSteps = await counts(false);
      assert.equal(inSteps.tapes, 20);
      assert.deepEqual(await counts(true), inSteps);
    });

    it('gives transactions open at once a shard each while shards are free, one shard for all the tapes a transaction counts', async function () {
      // SQLite's single writer runs one transaction at a time: none are open at once to spread.
      if (db.dialect !== 'postgres') return this.skip();
      repository = new BenchmarksRepository(db.knex, 8);
      const cohort = await members(16, 4);
      let counting = 0;
      let everyoneCounted!: () => void;
      const allHoldTheirShards = new Promise<void>((resolve) => (everyoneCounted = resolve));
      await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          inUnitOfWork(db.knex, async (unit) => {
            await repository.record(unit, cohort[2 * i]!);
            await repository.record(unit, cohort[2 * i + 1]!);
            // After the counting (asked for first): every transaction holds its shard here. Two in
            // one shard would wait for each other's row locks, so the wait ends after 5 s anyway.
            unit.beforeCommit(async () => {
              if (++counting === 8) everyoneCounted();
              await Promise.race([allHoldTheirShards, new Promise((resolve) => setTimeout(resolve, 5000))]);
            });
          }),
        ),
      );
      const shards = await Promise.all(cohort.map((member) => shardOf(member.verificationId)));
      const [firstTapes, secondTapes] = [shards.filter((_, i) => i % 2 === 0), shards.filter((_, i) => i % 2 === 1)];
      assert.deepEqual(secondTapes, firstTapes, "a transaction's two tapes counted in different shards");
      // Chosen at random, eight transactions would take eight different shards 0.24 % of the time.
      assert.equal(new Set(firstTapes).size, 8, `shards taken: ${firstTapes.join(', ')}`);
      const counted = await shardCounts();
      assert.deepEqual(counted.stored, counted.expected);
    });

    it('counts beside the version before the shards (a rolling deploy), which reads and writes shard 0 alone', async () => {
      const cohort = await members(30, 3);
      repository = new BenchmarksRepository(db.knex, COUNTER_SHARDS);
      for (const member of cohort.slice(0, 20)) await inUnitOfWork(db.knex, (unit) => repository.record(unit, member));
      // What the version before migration 018 writes for a completed tape.
      for (const member of cohort.slice(20)) {
        await db.knex.transaction(async (trx) => {
          await trx('benchmark_members').insert({
            verification_id: member.verificationId,
            lender_id: member.lenderId,
            product_type: 'rbf',
            buckets: JSON.stringify(member.buckets),
          });
          for (const [metric, bucket] of Object.entries(member.buckets)) {
            await trx('benchmark_buckets')
              .insert({ product_type: 'rbf', metric, bucket, tapes: 1 })
              .onConflict(['product_type', 'metric', 'bucket'])
              .merge({ tapes: trx.raw('benchmark_buckets.tapes + excluded.tapes') });
          }
          await trx('benchmark_lenders')
            .insert({ product_type: 'rbf', lender_id: member.lenderId, tapes: 1 })
            .onConflict(['product_type', 'lender_id'])
            .merge({ tapes: trx.raw('benchmark_lenders.tapes + excluded.tapes') });
        });
      }
      assert.equal((await repository.cohort('rbf')).tapes, 30);
      await inUnitOfWork(db.knex, (unit) => repository.erase(unit, [cohort[25]!.verificationId, cohort[5]!.verificationId]));
      const left = await shardCounts();
      assert.deepEqual(left.stored, left.expected);
      assert.deepEqual([(await repository.cohort('rbf')).tapes, (await repository.cohort('rbf')).distributions.platform_hhi!.total], [28, 28]);
    });

    it('keeps its counts through the sharding migration, down and up again, and takes a tape out after it', async () => {
      const cohort = await members(30, 3);
      repository = new BenchmarksRepository(db.knex, COUNTER_SHARDS);
      for (const member of cohort) await inUnitOfWork(db.knex, (unit) => repository.record(unit, member));
      await db.knex.migrate.down({ migrationSource: migrations, name: '20261127_018_benchmark_counter_shards' });
      assert.deepEqual(await db.knex('benchmark_buckets').where({ product_type: 'rbf', metric: 'platform_hhi' }).select('bucket', 'tapes'), [
        { bucket: bucketOf('platform_hhi', 0.5), tapes: 30 },
      ]);
      await db.migrate();
      assert.equal((await repository.cohort('rbf')).tapes, 30);
      await inUnitOfWork(db.knex, (unit) => repository.erase(unit, [cohort[0]!.verificationId]));
      const after = await repository.cohort('rbf');
      assert.deepEqual([after.tapes, after.distributions.platform_hhi!.total], [29, 29]);
    });

    it("counts the tapes of before migration 022 in their lenders' own buckets, in the shards they are counted in", async () => {
      const cohort = await members(30, 3);
      repository = new BenchmarksRepository(db.knex, COUNTER_SHARDS);
      for (const member of cohort) await inUnitOfWork(db.knex, (unit) => repository.record(unit, member));
      await db.knex.migrate.down({ migrationSource: migrations, name: '20261128_022_benchmark_lender_buckets' });
      await db.migrate();
      const own = await lenderCounts();
      assert.ok(Object.keys(own.stored).length >= 3);
      assert.deepEqual(own.stored, own.expected);
      await inUnitOfWork(db.knex, (unit) => repository.erase(unit, [cohort[0]!.verificationId]));
      const left = await lenderCounts();
      assert.deepEqual(left.stored, left.expected);
      const seen = await repository.cohort('rbf', cohort[0]!.lenderId);
      assert.deepEqual([seen.tapes, seen.lenders, seen.distributions.platform_hhi!.total], [20, 2, 20]);
    });
  });
}

describe('counting tapes stored before benchmarks existed', () => {
  it('counts each completed tape once, however often (or by however many processes) the catch-up runs', async () => {
    const [factory] = testDatabases();
    const testDb = await factory!.create();
    const db = openDatabase(testDb.url);
    await db.migrate();
    const repository = new BenchmarksRepository(db.knex);
    await db
      .knex('lender_accounts')
      .insert({ id: 'lnd_old', name: 'Old', plan: 'pilot', jurisdiction: 'other', ip_allowlist: '[]', created_at: 'x', updated_at: 'x' });
    const tape = JSON.parse(readFileSync(new URL('../../spec/examples/tapes/demo-yt-mid.json', import.meta.url), 'utf8')) as {
      eligibility: { product_type: string };
    };
    for (const n of [1, 2, 3]) {
      await db.knex('verifications').insert({
        id: `vrf_old${n}`,
        lender_id: 'lnd_old',
        obligor_reference: `old-${n}`,
        creator_platforms: '["youtube"]',
        lender_name: 'Old',
        product_type: tape.eligibility.product_type,
        status: 'completed',
        consent_token_hash: `old${n}`,
        consent_url: '',
        expires_at: 'x',
        created_at: 'x',
        updated_at: 'x',
      });
      await db.knex('tapes').insert({ verification_id: `vrf_old${n}`, tape: JSON.stringify(tape), generated_at: 'x' });
    }
    const counted = await Promise.all([countUncountedTapes(repository), countUncountedTapes(repository)]);
    assert.ok(counted.every((n) => n === 3 || n === 0) && counted.includes(3));
    assert.equal(await countUncountedTapes(repository), 0);
    assert.equal((await repository.cohort(tape.eligibility.product_type)).tapes, 3);
    await db.close();
    await testDb.drop();
  });
});
