import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { assertError } from './assertions.ts';
import { forEachTarget, requireKey, requireSandbox, type Target } from './harness.ts';
import { createVerification, randomReference, type Verification } from './sandbox.ts';

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
      const created = await createVerification(target, { obligor_reference: 'demo-yt-mid', creator_platforms: ['youtube'], product_type: 'term_loan' });
      const verification = created.json as Verification;
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
