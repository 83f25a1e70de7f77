// The golden tapes in spec/examples/tapes are reviewed data: the engine must reproduce them exactly.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { computeTape } from './compute-tape.ts';
import { SCHEMA_VERSIONS } from './income.ts';
import { renderTape } from './render.ts';
import { SYNTHETIC_CREATORS, syntheticTapeInput, type SyntheticReference } from './synthetic-creators.ts';
import { GOLDEN_NOW, goldenVerificationId } from '../../test/support/golden.ts';
import { ROOT, schemaErrors } from '../../test/support/tape.ts';

// Section 2.6 of the service description, copied here so the test does not trust the engine's own table.
const SPEC_TIERS: Record<string, string> = {
  demo_prime_multi: 'prime',
  single_platform_95: 'standard',
  volatile_subprime: 'subprime',
  short_history_5mo: 'subprime',
  seasonal_spikes: 'standard',
  demo_subprime_multi: 'subprime',
  'demo-yt-mid': 'standard',
  'demo-stripe-micro': 'standard',
  'demo-yt-nano': 'subprime',
};

const dir = join(ROOT, 'spec/examples/tapes');
const now = new Date(GOLDEN_NOW);
const golden = (ref: string) => JSON.parse(readFileSync(join(dir, `${ref}.json`), 'utf8'));
const series = (ref: SyntheticReference) => SYNTHETIC_CREATORS[ref].series as Record<string, { amounts: readonly number[] }>;

describe('tape/golden tapes', () => {
  it('there is one golden tape per synthetic creator of section 2.6, and no other', () => {
    assert.deepEqual(Object.keys(SYNTHETIC_CREATORS).sort(), Object.keys(SPEC_TIERS).sort());
    assert.deepEqual(
      readdirSync(dir).sort(),
      Object.keys(SPEC_TIERS)
        .map((r) => `${r}.json`)
        .sort(),
    );
  });

  for (const reference of Object.keys(SYNTHETIC_CREATORS) as SyntheticReference[])
    describe(reference, () => {
      const tape = computeTape(syntheticTapeInput(reference, { now, verificationId: goldenVerificationId(reference) }), { now });

      it('is reproduced exactly by the engine', () => {
        assert.deepEqual(JSON.parse(JSON.stringify(tape)), golden(reference));
      });

      it('validates at every schema version', () => {
        for (const version of SCHEMA_VERSIONS) assert.equal(schemaErrors(renderTape(golden(reference), version), version), '', version);
      });

      it(`scores the tier section 2.6 states (${SPEC_TIERS[reference]}) for rbf`, () => {
        assert.equal(golden(reference).eligibility.tier, SPEC_TIERS[reference]);
      });
    });

  it('each series is true to its profile', () => {
    const lengths = (ref: SyntheticReference) => Object.fromEntries(Object.entries(series(ref)).map(([p, s]) => [p, s.amounts.length]));
    assert.deepEqual(lengths('short_history_5mo'), { youtube: 5, stripe: 5 });
    const prime = lengths('demo_prime_multi');
    assert.ok(prime.youtube! >= 24 && prime.stripe! >= 24);
    assert.deepEqual(Object.keys(series('single_platform_95')), ['youtube']);
    assert.deepEqual(Object.keys(series('demo-yt-mid')), ['youtube']);
    assert.deepEqual(Object.keys(series('demo-stripe-micro')), ['stripe']);
    assert.deepEqual(Object.keys(series('demo_subprime_multi')).sort(), ['stripe', 'youtube']);
    assert.ok(lengths('demo-yt-nano').youtube! <= 4);
    assert.ok(lengths('volatile_subprime').youtube! < 12);

    const g = golden;
    assert.equal(g('single_platform_95').risk_profile.platform_hhi, 1);
    assert.ok(g('volatile_subprime').risk_profile.revenue_volatility_cv > 0.5);
    assert.ok(g('volatile_subprime').risk_profile.max_drawdown_pct > 50);
    assert.ok(g('seasonal_spikes').risk_profile.revenue_volatility_cv > 0.3);
    assert.equal(g('demo_subprime_multi').eligibility.income_trend, 'declining');
    assert.equal(g('demo_prime_multi').eligibility.income_trend, 'stable');
    assert.ok(g('demo_prime_multi').risk_profile.revenue_volatility_cv < 0.1);
    assert.ok(g('demo-stripe-micro').cashflow_summary.monthly_revenue_avg_eur < 500);
    assert.equal(g('demo-stripe-micro').platform_connections[0].source_currency, 'USD');
    assert.ok(g('demo-yt-nano').cashflow_summary.monthly_revenue_avg_eur < 100);
    const mid = g('demo-yt-mid').cashflow_summary.monthly_revenue_avg_eur;
    assert.ok(mid > 1000 && mid < 10000);
  });
});
