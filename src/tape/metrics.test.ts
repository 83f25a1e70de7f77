// Expected values are worked out by hand from the formulas in docs/scoring.md.
import assert from 'node:assert/strict';
import { computeTape } from './compute-tape.ts';
import { computeMetrics } from './metrics.ts';
import { input, NOW, platform } from '../../test/support/tape.ts';

describe('tape/metrics', () => {
  it('computes totals, average, CV, drawdown, slope, HHI and the stability score of a rising series', () => {
    const m = computeMetrics([platform('youtube', [100, 200, 300, 400])], NOW);
    assert.equal(m.monthsObserved, 4);
    assert.equal(m.revenue3mTotal, 900);
    assert.equal(m.revenue12mTotal, 1000);
    assert.equal(m.monthlyAvg, 250);
    assert.equal(m.recent3mAvg, 300);
    assert.equal(m.cv, 0.4472); // sqrt(50000 / 4) / 250
    assert.equal(m.maxDrawdownPct, 0);
    assert.equal(m.slope, 100); // 500 / 5
    assert.equal(m.slopePct, 40);
    assert.equal(m.hhi, 1);
    assert.equal(m.trend3m, 'insufficient_data');
    assert.equal(m.incomeTrend, 'insufficient_data');
    // 0.35 * (1 - 0.4472) + 0.20 * 1 + 0.20 * 4/24 + 0.15 * 1 + 0.10 * 0
    assert.equal(m.stabilityScore, 0.5768);
  });

  it('measures the deepest fall from a running peak', () => {
    assert.equal(computeMetrics([platform('youtube', [1000, 500, 2000, 400, 1500])], NOW).maxDrawdownPct, 80);
  });

  it('keeps refunds: a negative month counts at its value, and a fall below zero is a 100% drawdown', () => {
    const m = computeMetrics([platform('stripe', [1000, -200, 800])], NOW);
    assert.equal(m.revenue12mTotal, 1600);
    assert.equal(m.negativeMonths, 1);
    assert.equal(m.maxDrawdownPct, 100);
    assert.equal(m.cv, 0.9843);
  });

  it('shares revenue by 12-month totals and gives a refund-only platform a zero share', () => {
    const split = computeMetrics([platform('youtube', [100, 100, 100]), platform('stripe', [50, 25, 25])], NOW);
    assert.deepEqual(
      split.perPlatform.map((p) => p.share_of_revenue),
      [0.75, 0.25],
    );
    assert.equal(split.hhi, 0.625);
    const refunds = computeMetrics([platform('youtube', [100, 100, 100]), platform('stripe', [-20, -10, -20])], NOW);
    assert.deepEqual(
      refunds.perPlatform.map((p) => p.share_of_revenue),
      [1, 0],
    );
    assert.equal(refunds.hhi, 1);
    assert.equal(refunds.revenue12mTotal, 250);
    assert.equal(refunds.perPlatform[1]!.revenue_12m_total_eur, -50);
  });

  it('reads a month without a report as zero revenue, from the first reported month to the as-of month', () => {
    const yt = platform('youtube', [500, 0, 500]);
    const m = computeMetrics([{ ...yt, months: yt.months.filter((r) => r.month !== '2026-09') }], NOW);
    assert.equal(m.monthsObserved, 3);
    assert.equal(m.platforms[0]!.monthsReported, 2);
    assert.equal(m.maxDrawdownPct, 100);
    const late = computeMetrics([platform('youtube', [100, 100, 100]), platform('stripe', [50], { lastMonth: '2026-08' })], NOW);
    assert.equal(late.monthsObserved, 3);
    assert.equal(late.revenue12mTotal, 350);
    assert.equal(late.revenue3mTotal, 350);
  });

  it('uses the last 12 months as the window and the whole span as history', () => {
    const m = computeMetrics(
      [
        platform(
          'youtube',
          Array.from({ length: 15 }, (_, i) => (i + 1) * 100),
        ),
      ],
      NOW,
    );
    assert.equal(m.monthsObserved, 15);
    assert.equal(m.windowMonths, 12);
    assert.equal(m.revenue12mTotal, 11400);
    assert.equal(m.monthlyAvg, 950);
    assert.equal(m.revenue3mTotal, 4200);
    assert.equal(m.slope, 100);
  });

  it('labels trend_3m by the last 3 months against the 3 before, at +/-10%', () => {
    const t = (a: number[]) => computeMetrics([platform('youtube', a)], NOW).trend3m;
    assert.equal(t([100, 100, 100, 120, 120, 120]), 'growing');
    assert.equal(t([100, 100, 100, 105, 105, 105]), 'stable');
    assert.equal(t([100, 100, 100, 85, 85, 85]), 'declining');
    assert.equal(t([100, 100, 100, 110, 110, 110]), 'growing');
    assert.equal(t([0, 0, 0, 10, 10, 10]), 'growing');
    assert.equal(t([-100, -100, -100, -50, -50, -50]), 'growing');
    assert.equal(t([100, 100, 120, 120, 120]), 'insufficient_data');
  });

  it('labels income_trend by the slope as a percent of the average, at +/-2% a month', () => {
    const m = computeMetrics([platform('youtube', [100, 110, 120, 130, 140, 150])], NOW);
    assert.equal(m.slope, 10);
    assert.equal(m.slopePct, 8);
    assert.equal(m.incomeTrend, 'growing');
    assert.equal(m.cv, 0.1366);
    assert.equal(computeMetrics([platform('youtube', [100, 100, 100, 100, 100, 100])], NOW).incomeTrend, 'stable');
    assert.equal(computeMetrics([platform('youtube', [150, 140, 130, 120, 110, 100])], NOW).incomeTrend, 'declining');
  });

  it('leaves out the running month, later months and the data of a connection that is not live', () => {
    const yt = platform('youtube', [100, 100, 100]);
    yt.months = [
      ...yt.months,
      { month: '2026-11', sourceCurrency: 'EUR', sourceAmount: 1, amountEur: 1 },
      { month: '2027-02', sourceCurrency: 'EUR', sourceAmount: 9, amountEur: 9 },
    ];
    const m = computeMetrics([yt, platform('stripe', [999, 999, 999], { status: 'revoked' })], NOW);
    assert.equal(m.revenue12mTotal, 300);
    assert.deepEqual(
      m.perPlatform.map((p) => p.platform),
      ['youtube'],
    );
    assert.equal(m.platforms[1]!.monthsReported, 0);
  });

  it('dates the tape by the latest reported month and counts the lag', () => {
    const m = computeMetrics([platform('youtube', [100, 100, 100], { lastMonth: '2026-07' })], NOW);
    assert.equal(m.lagMonths, 3);
    const tape = computeTape(input([platform('youtube', [100, 100, 100], { lastMonth: '2026-07' })]), { now: NOW });
    assert.equal(tape.as_of_date, '2026-07-31');
    assert.ok(tape.eligibility.flags.some((f) => f.code === 'DATA_STALE'));
    const fresh = computeTape(input([platform('youtube', [100, 100, 100], { lastMonth: '2026-09' })]), { now: NOW });
    assert.ok(!fresh.eligibility.flags.some((f) => f.code === 'DATA_STALE'));
  });
});
