// The bad inputs the issue names: each gives a valid tape with the right ND codes and flags.
import assert from 'node:assert/strict';
import { computeTape, type RiskTape } from './compute-tape.ts';
import { SCHEMA_VERSIONS, type TapeInput } from './income.ts';
import { renderTape } from './render.ts';
import { input, NOW, numbersIn, platform, schemaErrors } from '../../test/support/tape.ts';

function valid(tapeInput: TapeInput): RiskTape {
  const tape = computeTape(tapeInput, { now: NOW });
  for (const [path, n] of numbersIn(tape)) assert.ok(Number.isFinite(n), `${path} = ${n}`);
  for (const version of SCHEMA_VERSIONS) assert.equal(schemaErrors(renderTape(tape, version), version), '', version);
  return tape;
}
const flagCodes = (t: RiskTape) => t.eligibility.flags.map((f) => f.code);

describe('tape/bad input', () => {
  it('zero months', () => {
    const t = valid(input([platform('youtube', [])]));
    assert.deepEqual(flagCodes(t), ['MISSING_PLATFORM_DATA', 'NO_REVENUE_DATA']);
    assert.equal(t.eligibility.tier, 'ineligible');
    assert.deepEqual([t.cashflow_summary.months_observed, t.cashflow_summary.monthly_revenue_avg_eur, t.eligibility.income_stability_score], [0, 0, 0]);
    assert.ok(t.data_quality.nd_codes.includes('ND_NO_REVENUE_DATA'));
  });

  it('all-zero revenue', () => {
    const t = valid(input([platform('youtube', Array(12).fill(0))]));
    assert.deepEqual(
      [t.risk_profile.revenue_volatility_cv, t.risk_profile.max_drawdown_pct, t.risk_profile.platform_hhi, t.risk_profile.trend_slope_eur_per_month],
      [null, null, null, 0],
    );
    for (const code of ['ND_CV_NONPOSITIVE_MEAN', 'ND_DRAWDOWN_NO_POSITIVE_PEAK', 'ND_HHI_NO_POSITIVE_REVENUE', 'ND_INCOME_TREND_UNDEFINED'])
      assert.ok(t.data_quality.nd_codes.includes(code), code);
    assert.equal(t.metrics.trend_3m, 'stable');
    assert.ok(flagCodes(t).includes('LOW_REVENUE'));
    assert.equal(t.eligibility.income_stability_score, 0.1); // only history: 0.20 x 12/24
  });

  it('refunds that make a month negative', () => {
    const t = valid(input([platform('stripe', [900, 950, -300, 1000, 980, 1020])]));
    assert.ok(flagCodes(t).includes('NEGATIVE_REVENUE_MONTH'));
    assert.equal(t.risk_profile.max_drawdown_pct, 100);
    assert.equal(t.cashflow_summary.revenue_3m_total_eur, 3000);
  });

  it('one requested platform missing', () => {
    const t = valid(input([platform('youtube', Array(12).fill(1000)), platform('stripe', [], { status: 'not_connected' })]));
    assert.deepEqual(t.platforms, ['youtube']);
    assert.deepEqual(t.obligor.connected_platforms, ['youtube']);
    assert.deepEqual(t.platform_connections[1]!.nd_codes, ['ND_PLATFORM_NOT_CONNECTED']);
    assert.ok(t.eligibility.flags.some((f) => f.code === 'MISSING_PLATFORM_DATA' && f.severity === 'warning' && f.message.includes('stripe')));
    assert.equal(t.data_quality.score, 80);
    assert.ok(t.eligibility.eligible, 'the connected platform still carries the decision');
  });

  it('an unconvertible currency', () => {
    const yt = platform('youtube', Array(12).fill(1000));
    const mixed = platform('youtube', [500, 500], { currency: 'ZZZ' }).months;
    const t = valid(input([{ ...yt, months: [...yt.months, ...mixed] }]));
    assert.equal(t.cashflow_summary.revenue_12m_total_eur, 12000, 'the unconvertible figures are left out');
    assert.deepEqual(t.platform_connections[0]!.nd_codes, ['ND_CURRENCY_UNCONVERTIBLE']);
    assert.ok(flagCodes(t).includes('CURRENCY_UNCONVERTIBLE'));
  });

  it('a single month', () => {
    const t = valid(input([platform('youtube', [500])]));
    assert.equal(t.eligibility.tier, 'ineligible');
    assert.ok(flagCodes(t).includes('INSUFFICIENT_HISTORY'));
    for (const code of ['ND_CV_INSUFFICIENT_HISTORY', 'ND_DRAWDOWN_INSUFFICIENT_HISTORY', 'ND_TREND_INSUFFICIENT_HISTORY', 'ND_HISTORY_UNDER_3_MONTHS'])
      assert.ok(t.data_quality.nd_codes.includes(code), code);
    // Accepting one month takes two overrides: the history minimum and the score cut-off, since the
    // only score component one month has is history (0.20 x 1/24 = 0.0083).
    const shortOnly = valid(input([platform('youtube', [500])], { policyOverrides: { min_months_history: 1 } }));
    assert.equal(shortOnly.eligibility.income_stability_score, 0.0083);
    assert.equal(shortOnly.eligibility.flags.find((f) => f.code === 'LOW_STABILITY_SCORE')?.severity, 'critical');
    const lenient = valid(input([platform('youtube', [500])], { policyOverrides: { min_months_history: 1, subprime_min_score: 0 } }));
    assert.equal(lenient.eligibility.tier, 'subprime');
    assert.ok(flagCodes(lenient).includes('TREND_UNKNOWN'));
    assert.equal(lenient.eligibility.max_advance_eur, 1500); // 6 x 500 x 0.5
  });
});
