// Property tests over random income data: bad data never breaks the engine, and the tape's invariants hold.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { OverlayBlock } from '../../generated/tape.ts';
import { computeTape } from './compute-tape.ts';
import { TIER_A_FIELDS } from './data-quality.ts';
import { policyKeys, validatePolicyOverrides } from './eligibility/policy.ts';
import {
  convertToEuro,
  DEFAULT_RATE_TABLE,
  monthOfDate,
  monthString,
  PRODUCT_TYPES,
  SCHEMA_VERSIONS,
  type PlatformIncome,
  type ProductType,
  type TapeInput,
} from './income.ts';
import { renderTape, TapeVersionUnsupported } from './render.ts';
import { numbersIn, schemaErrors } from '../../test/support/tape.ts';

const amount = fc.oneof(
  fc.constant(0),
  fc.integer({ min: -2_000, max: 60_000 }),
  fc.double({ min: -5_000, max: 1_000_000, noNaN: true, noDefaultInfinity: true }),
);
const currency = fc.constantFrom('EUR', 'EUR', 'EUR', 'USD', 'gbp', 'XYZ', '');

// A creator's series ending at or shortly before the last complete month: level, trend and noise.
const realistic = (lastComplete: number) =>
  fc
    .record({
      lag: fc.constantFrom(0, 0, 0, 0, 1, 3),
      level: fc.integer({ min: 20, max: 40_000 }),
      trend: fc.double({ min: -0.05, max: 0.05, noNaN: true }),
      spread: fc.double({ min: 0, max: 0.6, noNaN: true }),
      noise: fc.array(fc.double({ min: -1, max: 1, noNaN: true }), { maxLength: 36, size: 'max' }),
      currency: fc.constantFrom('EUR', 'EUR', 'USD', 'GBP'),
    })
    .map(({ lag, level, trend, spread, noise, currency }) =>
      noise.map((k, i) => ({
        month: monthString(lastComplete - lag - noise.length + 1 + i),
        currency,
        amount: Math.round(level * (1 + spread * k) * (1 + trend) ** i * 100) / 100,
      })),
    );
// Bad data: gaps, duplicate months, the running and future months, refunds, unconvertible currencies.
const scattered = (lastComplete: number) =>
  fc.array(fc.record({ month: fc.integer({ min: lastComplete - 40, max: lastComplete + 3 }).map(monthString), currency, amount }), {
    maxLength: 30,
  });
const wild = (lastComplete: number) =>
  fc
    .record({ end: fc.integer({ min: lastComplete - 6, max: lastComplete + 2 }), currency, amounts: fc.array(amount, { maxLength: 36 }) })
    .map(({ end, currency, amounts }) => amounts.map((a, i) => ({ month: monthString(end - amounts.length + 1 + i), currency, amount: a })));

const platformIncome = (platform: PlatformIncome['platform'], lastComplete: number) =>
  fc.record({
    platform: fc.constant(platform),
    status: fc.oneof({ weight: 6, arbitrary: fc.constant('connected' as const) }, fc.constantFrom('not_connected', 'revoked', 'error')),
    connectedAt: fc.constantFrom(null, '2026-01-02T03:04:05Z'),
    months: fc
      .oneof({ weight: 4, arbitrary: realistic(lastComplete) }, scattered(lastComplete), wild(lastComplete))
      .map((rows) => convertToEuro(DEFAULT_RATE_TABLE, rows)),
  }) as fc.Arbitrary<PlatformIncome>;

const overlay: fc.Arbitrary<OverlayBlock> = fc.record({
  overlay_id: fc.constant('ovl_abcdefgh'),
  type: fc.constantFrom('sharia_screening', 'credit_bureau', 'kyb', 'aml'),
  provider: fc.constant('Provider Ltd'),
  status: fc.constantFrom('compliant', 'non_compliant', 'pending', 'clear'),
  observed_at: fc.constantFrom('2026-01-01T00:00:00Z', '2026-02-01T00:00:00Z'),
  data: fc.constant({}),
});

/** A few in-range overrides for the product, kept only when the merged policy is valid. */
const overridesFor = (productType: ProductType) => {
  const specs = Object.entries(policyKeys(productType));
  return fc
    .array(
      fc
        .constantFrom(...specs)
        .chain(([key, s]) =>
          (s.integer ? fc.integer({ min: s.min, max: s.max }) : fc.double({ min: s.min, max: s.max, noNaN: true })).map((v) => [key, v] as const),
        ),
      { maxLength: 3 },
    )
    .map((pairs) => Object.fromEntries(pairs))
    .filter((o) => validatePolicyOverrides(productType, o).ok);
};

/** [input, now]: the income is generated relative to `now`, so most series are current. */
const scenario: fc.Arbitrary<[TapeInput, Date]> = fc
  .tuple(fc.integer({ min: 0, max: 1_000 }), fc.constantFrom(...PRODUCT_TYPES))
  .chain(([day, productType]) => {
    const at = new Date(Date.UTC(2025, 5, 1) + day * 864e5 + 37_000_000);
    const last = monthOfDate(at) - 1;
    const input = fc.record({
      verificationId: fc.constant('vrf_property01'),
      obligorReference: fc.constant('obligor-prop'),
      productType: fc.constant(productType),
      jurisdiction: fc.constantFrom('eu_gdpr', 'uk_gdpr', 'difc', 'other'),
      platforms: fc.oneof(
        fc.tuple(platformIncome('youtube', last)),
        fc.tuple(platformIncome('stripe', last)),
        fc.tuple(platformIncome('youtube', last), platformIncome('stripe', last)),
        fc.tuple(platformIncome('stripe', last), platformIncome('youtube', last)),
      ),
      policyOverrides: fc.option(overridesFor(productType), { nil: undefined, freq: 3 }),
      declaredMonthlyObligationsEur: fc.option(fc.double({ min: 0, max: 20_000, noNaN: true }), { nil: undefined }),
      overlays: fc.array(overlay, { maxLength: 3 }),
    });
    return fc.tuple(input, fc.constant(at));
  });
const V1 = new Set(['rbf', 'term_loan', 'securitization_pool']);

describe('tape/properties', () => {
  it('any income data gives a tape of finite numbers that validates at every version it can be rendered at', () => {
    fc.assert(
      fc.property(scenario, ([input, at]) => {
        const tape = computeTape(input, { now: at });
        for (const [path, n] of numbersIn(tape)) assert.ok(Number.isFinite(n), `${path} = ${n}`);
        for (const version of SCHEMA_VERSIONS) {
          if (version !== '2.0.0' && !V1.has(input.productType)) {
            assert.throws(() => renderTape(tape, version), TapeVersionUnsupported);
            continue;
          }
          assert.equal(schemaErrors(renderTape(tape, version), version), '', version);
        }
        assert.deepEqual(computeTape(input, { now: at }), tape, 'deterministic');
      }),
      { numRuns: 300 },
    );
  });

  it('decision invariants: ineligible advances nothing, aliases equal originals', () => {
    fc.assert(
      fc.property(scenario, ([input, at]) => {
        const e = computeTape(input, { now: at }).eligibility;
        assert.equal(e.eligible, e.tier !== 'ineligible');
        if (!e.eligible) {
          assert.deepEqual([e.max_advance_eur, e.max_revenue_share_pct, e.payback_cap_multiple, e.covenants.length], [0, 0, 0, 0]);
          assert.ok(
            e.flags.some((f) => f.severity === 'critical'),
            'an ineligible tape says why',
          );
        }
        assert.equal(e.max_advance_amount, e.max_advance_eur);
        assert.equal(e.income_capacity_annual, e.max_advance_amount);
        assert.equal(e.recommended_monthly_ceiling_pct, e.max_revenue_share_pct);
        assert.ok(e.income_stability_score! >= 0 && e.income_stability_score! <= 1);
      }),
      { numRuns: 300 },
    );
  });

  it('metric invariants: HHI in [1/n, 1], shares and totals add up, shape A repeats shape B', () => {
    fc.assert(
      fc.property(scenario, ([input, at]) => {
        const t = computeTape(input, { now: at });
        const c = t.cashflow_summary;
        const r = t.risk_profile;
        const n = c.per_platform.length;
        if (r.platform_hhi !== null) {
          assert.ok(r.platform_hhi >= Math.round(10_000 / n) / 10_000 - 1e-9 && r.platform_hhi <= 1, `hhi ${r.platform_hhi} with ${n}`);
          assert.ok(Math.abs(c.per_platform.reduce((s, p) => s + p.share_of_revenue, 0) - 1) <= 1e-4 * n);
        }
        assert.ok(Math.abs(c.per_platform.reduce((s, p) => s + p.revenue_12m_total_eur, 0) - c.revenue_12m_total_eur) <= 0.01 * n + 1e-6);
        assert.deepEqual(
          t.platforms,
          c.per_platform.map((p) => p.platform),
        );
        assert.deepEqual(t.metrics, {
          monthly_revenue_avg_eur: c.monthly_revenue_avg_eur,
          revenue_volatility_cv: r.revenue_volatility_cv,
          platform_hhi: r.platform_hhi,
          trend_3m: t.metrics.trend_3m,
        });
        if (c.months_observed < 6) assert.equal(t.metrics.trend_3m, 'insufficient_data');
        if (c.months_observed < 2) assert.equal(r.revenue_volatility_cv, null);
        for (const [path, x] of numbersIn(t))
          if (/_eur$|_amount$|_annual$|_income$|obligations$/.test(path)) assert.ok(Math.abs(x * 100 - Math.round(x * 100)) < 1e-6, `${path} = ${x} in cents`);
      }),
      { numRuns: 300 },
    );
  });

  it('data-quality invariants: ND codes list the summary, Tier A counts and score agree', () => {
    fc.assert(
      fc.property(scenario, ([input, at]) => {
        const t = computeTape(input, { now: at });
        const dq = t.data_quality;
        assert.deepEqual(dq.nd_codes, [...new Set(dq.nd_code_summary.map((e) => e.code))]);
        for (const c of t.platform_connections) for (const code of c.nd_codes) assert.ok(dq.nd_codes.includes(code), code);
        assert.equal(dq.tier_a_fields_total, Object.keys(TIER_A_FIELDS).length);
        assert.equal(dq.tier_a_fields_complete === dq.tier_a_fields_total, dq.score === 100);
        if (t.cashflow_summary.months_observed === 0) assert.deepEqual([dq.score, t.eligibility.tier], [0, 'ineligible']);
        assert.equal(t.affordability === undefined, dq.nd_codes.includes('ND_AFFORDABILITY_NOT_DECLARED'));
      }),
      { numRuns: 200 },
    );
  });

  it('a stricter threshold never yields a better tier', () => {
    const rank = { ineligible: 0, subprime: 1, standard: 2, prime: 3 };
    fc.assert(
      fc.property(scenario, ([input, at]) => {
        const base = computeTape({ ...input, policyOverrides: undefined }, { now: at });
        const months = base.cashflow_summary.months_observed;
        if (months < 60) {
          const longer = Math.max(months + 1, 1);
          const stricter = computeTape(
            { ...input, policyOverrides: { min_months_history: longer, standard_min_months: Math.max(longer, 1), prime_min_months: 60 } },
            { now: at },
          );
          assert.equal(stricter.eligibility.tier, 'ineligible');
        }
        const avg = base.cashflow_summary.monthly_revenue_avg_eur;
        if (avg < 9_000_000) {
          const richer = computeTape({ ...input, policyOverrides: { min_monthly_avg_eur: Math.max(0, avg) + 1 } }, { now: at });
          assert.equal(richer.eligibility.tier, 'ineligible');
        }
        const noPrime = computeTape({ ...input, policyOverrides: { prime_min_score: 1, standard_min_score: 0.99, subprime_min_score: 0.98 } }, { now: at });
        assert.ok(rank[noPrime.eligibility.tier] <= rank[base.eligibility.tier]);
      }),
      { numRuns: 150 },
    );
  });

  it('refuses any unknown key or out-of-range value, naming the key', () => {
    fc.assert(
      fc.property(fc.constantFrom(...PRODUCT_TYPES), fc.string({ minLength: 1, maxLength: 12 }), fc.double({ noNaN: true }), (productType, key, value) => {
        const spec = policyKeys(productType)[key];
        const result = validatePolicyOverrides(productType, { [key]: value });
        if (spec && value >= spec.min && value <= spec.max) return;
        assert.equal(result.ok, false);
        assert.ok(!result.ok && result.error.problems.some((p) => p.key === key || p.key === '(overrides)'));
      }),
    );
    fc.assert(
      fc.property(fc.constantFrom(...PRODUCT_TYPES), (productType) => {
        for (const [key, spec] of Object.entries(policyKeys(productType)))
          for (const value of [spec.min - 0.001, spec.max + 1]) {
            const result = validatePolicyOverrides(productType, { [key]: value });
            assert.ok(!result.ok && result.error.problems[0]!.key === key && result.error.message.includes(key), `${key}=${value}`);
          }
      }),
    );
  });
});
