// Each product's rules, checked against its formula in docs/scoring.md applied to the tape's printed figures.
import assert from 'node:assert/strict';
import type { OverlayBlock } from '../../generated/tape.ts';
import { computeTape, type RiskTape } from './compute-tape.ts';
import type { ProductType } from './income.ts';
import { syntheticTapeInput, type SyntheticOptions, type SyntheticReference } from './synthetic-creators.ts';
import { input, NOW, platform } from '../../test/support/tape.ts';

const tape = (ref: SyntheticReference, productType: ProductType, extra: Partial<SyntheticOptions> = {}): RiskTape =>
  computeTape(syntheticTapeInput(ref, { now: NOW, verificationId: 'vrf_test0001', productType, ...extra }), { now: NOW });
const codes = (t: RiskTape) => t.eligibility.flags.map((f) => f.code);
const covenantCodes = (t: RiskTape) => t.eligibility.covenants.map((c) => c.code);
const cents = (x: number) => Math.round(x * 100) / 100;

const overlay = (status: string, observed_at: string, type: OverlayBlock['type'] = 'sharia_screening'): OverlayBlock => ({
  overlay_id: `ovl_${observed_at.replace(/\D/g, '').slice(0, 12)}`,
  type,
  provider: 'Amanah Screening Ltd',
  status,
  observed_at,
  data: {},
});

describe('tape/eligibility', () => {
  it('rbf: advance = multiple x 12-month average x tier factor, capped', () => {
    const t = tape('demo_prime_multi', 'rbf');
    assert.equal(t.eligibility.tier, 'prime');
    assert.equal(t.eligibility.max_advance_eur, cents(6 * t.cashflow_summary.monthly_revenue_avg_eur));
    const standard = tape('demo-yt-mid', 'rbf');
    assert.equal(standard.eligibility.max_advance_eur, cents(6 * standard.cashflow_summary.monthly_revenue_avg_eur * 0.75));
    const capped = tape('demo_prime_multi', 'rbf', { policyOverrides: { max_advance_eur: 20000 } });
    assert.equal(capped.eligibility.max_advance_eur, 20000);
    assert.deepEqual(covenantCodes(t), ['CONNECTIONS_MAINTAINED', 'REVENUE_SHARE_CEILING']);
  });

  it('term_loan: instalments within the revenue share of the lower of the 12- and 3-month averages', () => {
    const t = tape('demo_prime_multi', 'term_loan');
    const c = t.cashflow_summary;
    const basis = Math.min(c.monthly_revenue_avg_eur, cents(c.revenue_3m_total_eur / 3));
    assert.equal(t.eligibility.tier, 'prime');
    assert.equal(t.eligibility.max_advance_eur, cents(((basis * 30) / 100) * (24 / 1.25)));
    assert.equal(t.eligibility.max_revenue_share_pct, 30);
    const falling = tape('demo_subprime_multi', 'term_loan');
    assert.equal(falling.metrics.trend_3m, 'declining');
    assert.ok(codes(falling).includes('RECENT_DECLINE'));
    assert.equal(falling.eligibility.tier, 'subprime');
  });

  it('securitization_pool: refuses a loan whose data quality is below the pool minimum', () => {
    const full = tape('demo_prime_multi', 'securitization_pool');
    assert.equal(full.data_quality.score, 100);
    assert.equal(full.eligibility.tier, 'prime');
    const partial = syntheticTapeInput('demo_prime_multi', {
      now: NOW,
      verificationId: 'vrf_test0001',
      productType: 'securitization_pool',
    });
    partial.platforms = [partial.platforms[0]!, { platform: 'stripe', status: 'not_connected', months: [] }];
    const atMinimum = computeTape(partial, { now: NOW });
    assert.equal(atMinimum.data_quality.score, 80);
    assert.ok(atMinimum.eligibility.eligible && !codes(atMinimum).includes('POOL_DATA_QUALITY'), '80 meets the default minimum');
    const strict = computeTape({ ...partial, policyOverrides: { min_data_quality_score: 90 } }, { now: NOW });
    assert.equal(strict.data_quality.score, 80);
    assert.equal(strict.eligibility.tier, 'ineligible');
    assert.ok(codes(strict).includes('POOL_DATA_QUALITY'));
    assert.equal(tape('demo-yt-nano', 'securitization_pool').eligibility.tier, 'ineligible', '4 months is under the 12 a pool needs');
  });

  it('revenue_loan: advance recoverable within the term, and every requested platform must report', () => {
    const t = tape('demo_prime_multi', 'revenue_loan');
    const avg = t.cashflow_summary.monthly_revenue_avg_eur;
    assert.equal(t.eligibility.max_advance_eur, cents(Math.min(4 * avg, ((avg * 20) / 100) * (18 / 1.2))));
    const partial = syntheticTapeInput('demo_prime_multi', { now: NOW, verificationId: 'vrf_test0001', productType: 'revenue_loan' });
    partial.platforms = [partial.platforms[0]!, { platform: 'stripe', status: 'revoked', months: [] }];
    const missing = computeTape(partial, { now: NOW });
    assert.ok(codes(missing).includes('REPAYMENT_SOURCE_MISSING'));
    assert.equal(missing.eligibility.tier, 'subprime');
  });

  it('venture_debt: sized on the 3-month run-rate and refused without growth', () => {
    const t = tape('demo_prime_multi', 'venture_debt');
    assert.equal(t.eligibility.tier, 'prime');
    assert.equal(t.eligibility.max_advance_eur, cents(3 * cents(t.cashflow_summary.revenue_3m_total_eur / 3)));
    assert.ok(covenantCodes(t).includes('MINIMUM_REVENUE'));
    const declining = tape('demo_subprime_multi', 'venture_debt');
    assert.equal(declining.eligibility.tier, 'ineligible');
    assert.ok(codes(declining).includes('GROWTH_BELOW_MINIMUM'));
  });

  it('murabaha: pending until screened, refused when non-compliant, the latest verdict decides', () => {
    const pending = tape('demo_prime_multi', 'murabaha');
    assert.deepEqual(pending.islamic_compliance, { sharia_eligible: null, status: 'pending', screening_provider: null, screened_at: null });
    assert.ok(pending.eligibility.eligible);
    assert.ok(covenantCodes(pending).includes('SHARIA_SCREENING_REQUIRED'));
    assert.ok(pending.data_quality.nd_codes.includes('ND_SHARIA_SCREENING_PENDING'));

    const compliant = tape('demo_prime_multi', 'murabaha', { overlays: [overlay('compliant', '2026-11-01T09:00:00Z')] });
    assert.equal(compliant.islamic_compliance?.status, 'compliant');
    assert.equal(compliant.islamic_compliance?.screened_at, '2026-11-01T09:00:00Z');
    assert.ok(!covenantCodes(compliant).includes('SHARIA_SCREENING_REQUIRED'));
    assert.ok(!compliant.data_quality.nd_codes.includes('ND_SHARIA_SCREENING_PENDING'));

    const overturned = tape('demo_prime_multi', 'murabaha', {
      overlays: [
        overlay('non-compliant', '2026-11-05T09:00:00Z'),
        overlay('compliant', '2026-11-01T09:00:00Z'),
        overlay('clear', '2026-11-09T09:00:00Z', 'aml'),
      ],
    });
    assert.equal(overturned.islamic_compliance?.sharia_eligible, false);
    assert.equal(overturned.eligibility.tier, 'ineligible');
    assert.ok(codes(overturned).includes('SHARIA_NON_COMPLIANT'));
    assert.equal(overturned.overlay_blocks?.length, 3);
    assert.equal(tape('demo_prime_multi', 'rbf').islamic_compliance, undefined);
  });

  it('hpp: sized on net disposable income and needs affordability', () => {
    const undeclared = tape('demo_prime_multi', 'hpp');
    assert.ok(codes(undeclared).includes('AFFORDABILITY_REQUIRED'));
    assert.equal(undeclared.eligibility.tier, 'subprime');
    const declared = tape('demo_prime_multi', 'hpp', { declaredMonthlyObligationsEur: 1000 });
    assert.equal(declared.affordability?.affordability_tier, 'strong');
    assert.equal(declared.eligibility.tier, 'prime');
    assert.equal(declared.eligibility.max_advance_eur, cents(36 * declared.affordability.net_disposable_income));
    const unaffordable = tape('demo_prime_multi', 'hpp', { declaredMonthlyObligationsEur: 6000 });
    assert.equal(unaffordable.affordability?.affordability_tier, 'unaffordable');
    assert.equal(unaffordable.eligibility.tier, 'ineligible');
    assert.deepEqual(
      unaffordable.eligibility.flags.filter((f) => f.code.startsWith('AFFORDABILITY') || f.code === 'HIGH_DEBT_BURDEN').map((f) => [f.code, f.severity]),
      [
        ['HIGH_DEBT_BURDEN', 'warning'],
        ['AFFORDABILITY_REQUIRED', 'critical'],
      ],
    );
  });

  it('an ineligible tape advances nothing and carries no covenants', () => {
    const t = computeTape(input([platform('youtube', [10, 12])]), { now: NOW });
    assert.equal(t.eligibility.tier, 'ineligible');
    assert.deepEqual(
      codes(t).filter((c) => c === 'INSUFFICIENT_HISTORY' || c === 'LOW_REVENUE'),
      ['INSUFFICIENT_HISTORY', 'LOW_REVENUE'],
    );
    const e = t.eligibility;
    assert.deepEqual(
      [e.eligible, e.max_advance_eur, e.max_advance_amount, e.income_capacity_annual, e.max_revenue_share_pct, e.payback_cap_multiple, e.covenants],
      [false, 0, 0, 0, 0, 0, []],
    );
  });

  it('rates each limit by severity: ineligible critical, subprime warning, standard info', () => {
    const t = tape('volatile_subprime', 'rbf');
    const severity = Object.fromEntries(t.eligibility.flags.map((f) => [f.code, f.severity]));
    assert.deepEqual(severity, { SHORT_HISTORY: 'info', LOW_STABILITY_SCORE: 'warning', PLATFORM_CONCENTRATION: 'info' });
    const volatile = tape('volatile_subprime', 'rbf', { policyOverrides: { max_volatility_cv: 0.5 } });
    assert.equal(volatile.eligibility.tier, 'ineligible');
    assert.deepEqual(volatile.eligibility.flags.find((f) => f.code === 'HIGH_VOLATILITY')?.severity, 'critical');
  });

  it('per-lender overrides change the outcome', () => {
    assert.equal(tape('demo-yt-mid', 'rbf').eligibility.tier, 'standard');
    const diversified = tape('demo-yt-mid', 'rbf', { policyOverrides: { prime_max_hhi: 1 } });
    assert.equal(diversified.eligibility.tier, 'prime');
    const longer = tape('demo-yt-mid', 'rbf', { policyOverrides: { standard_min_months: 24, prime_min_months: 36 } });
    assert.equal(longer.eligibility.tier, 'subprime');
    const base = tape('demo_prime_multi', 'rbf');
    const doubled = tape('demo_prime_multi', 'rbf', { policyOverrides: { advance_multiple_of_monthly_avg: 12 } });
    assert.equal(doubled.eligibility.max_advance_eur, cents(2 * base.eligibility.max_advance_eur));
  });
});
