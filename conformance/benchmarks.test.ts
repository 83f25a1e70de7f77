import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { assertError } from './assertions.ts';
import { forEachTarget, requireKey, requireSandbox, type KeyName, type Target } from './harness.ts';
import { created, createVerification, randomReference, type Verification } from './sandbox.ts';

/** GET /api/v1/benchmarks/{verification_id} (4.4): every status, and the shape of a benchmark. */

interface Benchmark {
  verification_id: string;
  cohort: { source: string; size: number; product_type: string };
  metrics: Record<string, { value: number | null; percentile: number | null; p25: number; median: number; p75: number }>;
}

const METRICS = ['monthly_revenue_avg_eur', 'revenue_volatility_cv', 'platform_hhi', 'max_drawdown_pct', 'income_stability_score', 'trend_slope_eur_per_month'];

forEachTarget((target: Target) => {
  const benchmarkPath = (id: string) => `/api/v1/benchmarks/${id}`;

  describe('happy: a peer benchmark (4.4) [op:getBenchmark 200]', () => {
    it('places a completed tape among its product type: every metric with value, percentile and quartiles', async function () {
      requireSandbox(this, target);
      // A tape of each other lender: the first lender's peers are never empty, and no one of them
      // holds more than half, so only the floor keeps them from being shown.
      for (const key of ['otherLender', 'thirdLender'] as const) {
        if (target.keys[key]) await created(target, { obligor_reference: 'demo-yt-nano', creator_platforms: ['youtube'], product_type: 'term_loan' }, { key });
      }
      const response0 = await createVerification(target, { obligor_reference: 'demo-yt-mid', creator_platforms: ['youtube'], product_type: 'term_loan' });
      const verification = response0.json as Verification;
      const response = await target.api.get(benchmarkPath(verification.verification_id), { key: 'lender' });
      assert.equal(response.status, 200, response.text);
      const benchmark = response.json as Benchmark;
      assert.equal(benchmark.verification_id, verification.verification_id);
      assert.equal(benchmark.cohort.product_type, 'term_loan');
      assert.ok(['peers', 'reference'].includes(benchmark.cohort.source));
      if (benchmark.cohort.source === 'peers')
        assert.ok(benchmark.cohort.size >= 30 && benchmark.cohort.size % 10 === 0, 'a peer cohort is shown from 30 tapes, its size in steps of 10');
      assert.deepEqual(Object.keys(benchmark.metrics).sort(), [...METRICS].sort());
      for (const [name, metric] of Object.entries(benchmark.metrics)) {
        assert.ok(metric.p25 <= metric.median && metric.median <= metric.p75, `${name}: quartiles in order`);
        if (metric.percentile !== null) assert.equal(metric.percentile % 5, 0, `${name}: the percentile moves in steps of 5`);
      }
    });
  });

  describe('happy: peer benchmarks leave out the asking lender, and no one lender holds more than half of its peers (P28) [op:getBenchmark 200]', () => {
    /** `count` completed tapes of the synthetic creator `reference`, made with `key` (or a key the test made). */
    const tapes = async (key: KeyName | { apiKey: string }, productType: string, reference: string, count: number): Promise<string[]> => {
      const ids: string[] = [];
      for (let i = 0; i < count; i++) {
        const response = await createVerification(
          target,
          { obligor_reference: reference, creator_platforms: ['youtube'], product_type: productType },
          typeof key === 'string' ? { key } : key,
        );
        assert.equal(response.status, 201, response.text);
        ids.push((response.json as Verification).verification_id);
      }
      return ids;
    };
    const benchmarkOf = async (id: string, key: KeyName = 'lender'): Promise<Benchmark> => {
      const response = await target.api.get(benchmarkPath(id), { key });
      assert.equal(response.status, 200, response.text);
      return response.json as Benchmark;
    };
    /** What a lender learns from an answer, without its time. */
    const learned = (benchmark: Benchmark) => ({ cohort: benchmark.cohort, metrics: benchmark.metrics });
    // Synthetic creators by maximum drawdown (spec/examples/tapes): 4 %, 23.69 %, 34.08 % and 77.78 %.
    const [LOW, B_MID, C_MID, HIGH] = ['short_history_5mo', 'demo-stripe-micro', 'demo_subprime_multi', 'volatile_subprime'];
    /** The lower edge of a drawdown's bucket: buckets are 2 points wide (docs/benchmarks.md). */
    const drawdownBucket = (value: number) => Math.floor(value / 2) * 2;

    it("a lender with 29 of 31 tapes cannot place a quartile on another lender's single tape by adding one of its own", async function () {
      requireSandbox(this, target);
      requireKey(this, target, 'otherLender');
      requireKey(this, target, 'thirdLender');
      this.timeout(120_000);
      // A splits its tapes between the two ends; B's and C's single tapes lie between. Counted among
      // A's peers, the median of the drawdown sat on B's bucket, and moved to A's own with its next
      // tape at the bottom: the difference of the two answers showed B's tape.
      const [own] = await tapes('lender', 'venture_debt', LOW, 15);
      await tapes('lender', 'venture_debt', HIGH, 14);
      const [b] = await tapes('otherLender', 'venture_debt', B_MID, 1);
      const [c] = await tapes('thirdLender', 'venture_debt', C_MID, 1);
      const before = await benchmarkOf(own!);
      await tapes('lender', 'venture_debt', LOW, 1);
      const after = await benchmarkOf(own!);
      const drawdown = (benchmark: Benchmark) => benchmark.metrics['max_drawdown_pct']!;
      const others = [drawdown(await benchmarkOf(b!, 'otherLender')).value!, drawdown(await benchmarkOf(c!, 'thirdLender')).value!];
      for (const answer of [before, after]) {
        const median = drawdown(answer).median;
        assert.ok(!others.map(drawdownBucket).includes(median), `A's median drawdown, ${median}, is the bucket of B's or C's tape (${others.join(', ')})`);
      }
      assert.deepEqual(learned(after), learned(before), "A's own tape changed A's answer");
      // A's peers are B's and C's tapes: two lenders, below the floor.
      assert.equal(before.cohort.source, 'reference');
    });

    it("a lender's own tapes never move its answer, even at half of the cohort", async function () {
      requireSandbox(this, target);
      requireKey(this, target, 'otherLender');
      requireKey(this, target, 'thirdLender');
      this.timeout(120_000);
      // A holds 15 of 31 tapes, then 16 of 32, never more than half. Counted among its own peers, its
      // 16th tape at the bottom moved the median drawdown from C's bucket to B's.
      const [own] = await tapes('lender', 'hpp', LOW, 7);
      await tapes('lender', 'hpp', HIGH, 8);
      await tapes('otherLender', 'hpp', B_MID, 8);
      await tapes('thirdLender', 'hpp', C_MID, 8);
      const before = await benchmarkOf(own!);
      await tapes('lender', 'hpp', LOW, 1);
      const after = await benchmarkOf(own!);
      assert.deepEqual(learned(after), learned(before), "A's own tape changed A's answer");
      // A's peers are 16 tapes of two lenders, below the floor.
      assert.equal(before.cohort.source, 'reference');
    });

    it('falls back to the reference population while one lender holds more than half of the peers', async function () {
      requireSandbox(this, target);
      for (const key of ['otherLender', 'thirdLender', 'fourthLender'] as const) requireKey(this, target, key);
      this.timeout(120_000);
      // The asking lender's peers: D with 16 of 30 tapes, B and C with 7 each.
      const [own] = await tapes('lender', 'revenue_loan', LOW, 1);
      await tapes('fourthLender', 'revenue_loan', HIGH, 16);
      await tapes('otherLender', 'revenue_loan', B_MID, 7);
      await tapes('thirdLender', 'revenue_loan', C_MID, 7);
      assert.equal((await benchmarkOf(own!)).cohort.source, 'reference', 'D holds 16 of the 30 peer tapes');
      await tapes('otherLender', 'revenue_loan', B_MID, 2);
      const shown = await benchmarkOf(own!);
      // 32 peers are published as 30: the size moves in steps of 10.
      assert.deepEqual([shown.cohort.source, shown.cohort.size], ['peers', 30], 'D holds 16 of 32: half, not more');
    });

    it('shows peers from 30 tapes of 3 other lenders, and not from 30 of 2 lenders or 29 of 3', async function () {
      requireSandbox(this, target);
      for (const key of ['otherLender', 'thirdLender', 'fourthLender'] as const) requireKey(this, target, key);
      this.timeout(180_000);
      // Below the floor of lenders: 30 tapes of B and C, neither over half.
      const [ownPool] = await tapes('lender', 'securitization_pool', LOW, 1);
      await tapes('otherLender', 'securitization_pool', B_MID, 15);
      await tapes('thirdLender', 'securitization_pool', C_MID, 15);
      assert.equal((await benchmarkOf(ownPool!)).cohort.source, 'reference', '30 peer tapes of 2 lenders');
      await tapes('fourthLender', 'securitization_pool', HIGH, 1);
      const pool = await benchmarkOf(ownPool!);
      assert.deepEqual([pool.cohort.source, pool.cohort.size], ['peers', 30], '31 peer tapes of 3 lenders, published as 30');
      // Below the floor of tapes: 29 of B, C and D, none over half; then the 30th.
      const [ownMurabaha] = await tapes('lender', 'murabaha', LOW, 1);
      const [b] = await tapes('otherLender', 'murabaha', B_MID, 10);
      const [c] = await tapes('thirdLender', 'murabaha', C_MID, 10);
      const [d] = await tapes('fourthLender', 'murabaha', HIGH, 9);
      assert.equal((await benchmarkOf(ownMurabaha!)).cohort.source, 'reference', '29 peer tapes of 3 lenders');
      await tapes('fourthLender', 'murabaha', HIGH, 1);
      const murabaha = await benchmarkOf(ownMurabaha!);
      assert.deepEqual([murabaha.cohort.source, murabaha.cohort.size], ['peers', 30], '30 peer tapes of 3 lenders');
      // The quartiles are the peers' own: of 10 tapes each of B, C and D, in that order of drawdown,
      // the lower quartile lies in B's bucket, the median in C's and the upper quartile in D's.
      const drawdownOf = async (id: string, key: KeyName) => (await benchmarkOf(id, key)).metrics['max_drawdown_pct']!.value!;
      const buckets = [await drawdownOf(b!, 'otherLender'), await drawdownOf(c!, 'thirdLender'), await drawdownOf(d!, 'fourthLender')].map(drawdownBucket);
      const { p25, median, p75 } = murabaha.metrics['max_drawdown_pct']!;
      assert.deepEqual([p25, median, p75], buckets, "the peers' quartiles of the maximum drawdown");
    });
  });

  describe('errors: peer benchmarks (4.4, section 7) [op:getBenchmark 404 not_found]', () => {
    it('an unknown verification, or one that is not completed: 404 not_found', async () => {
      assertError(await target.api.get(benchmarkPath(`vrf_${randomUUID().replace(/-/g, '')}`), { key: 'lender' }), 404, 'not_found');
      const created = await createVerification(target, { obligor_reference: randomReference('conformance-benchmark-'), creator_platforms: ['stripe'] });
      const pending = created.json as Verification;
      assertError(await target.api.get(benchmarkPath(pending.verification_id), { key: 'lender' }), 404, 'not_found', /pending_consent/);
    });

    it("another lender's verification: 404 not_found, as for one that never existed", async function () {
      requireKey(this, target, 'otherLender');
      requireSandbox(this, target);
      const created = await createVerification(target, { obligor_reference: 'demo-yt-mid', creator_platforms: ['youtube'] });
      const verification = created.json as Verification;
      const response = await target.api.get(benchmarkPath(verification.verification_id), { key: 'otherLender' });
      assertError(response, 404, 'not_found');
      assert.doesNotMatch(response.text, /completed/);
    });

    it('a gdpr_admin key: 403 forbidden', async function () {
      requireKey(this, target, 'gdpr');
      assertError(await target.api.get(benchmarkPath(`vrf_${randomUUID().replace(/-/g, '')}`), { key: 'gdpr' }), 403, 'forbidden');
    });
  });
});
