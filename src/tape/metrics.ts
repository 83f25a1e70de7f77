// Revenue metrics of section 2.3, computed on the combined monthly series of the connected platforms.
import type { PlatformBreakdown } from '../../generated/tape.ts';
import { type ConnectionStatus, type Platform, type PlatformIncome, type Trend, monthIndex, monthOfDate } from './income.ts';
import { cents, clamp, ratio } from './round.ts';

/** Every constant a metric depends on; docs/scoring.md states each one. */
export const METRIC_RULES = {
  windowMonths: 12,
  cvMinMonths: 2,
  drawdownMinMonths: 2,
  slopeMinMonths: 3,
  trend3mMinMonths: 6,
  /** Relative change of the last 3 months against the 3 before that labels trend_3m. */
  trend3mChange: 0.1,
  incomeTrendMinMonths: 6,
  /** Slope in percent of the monthly average that labels income_trend. */
  incomeTrendPctPerMonth: 2,
  /** Latest reported month this many complete months old or more: DATA_STALE. */
  staleAfterMonths: 2,
  stability: {
    weights: { volatility: 0.35, drawdown: 0.2, history: 0.2, trend: 0.15, diversification: 0.1 },
    fullHistoryMonths: 24,
    /** CV at which the volatility component reaches 0. */
    cvAtZero: 1,
    /** Trend (percent of average per month) at which the trend component reaches 0. */
    trendPctAtZero: -5,
    /** 1 - HHI at which the diversification component reaches 1 (an even split of two platforms). */
    fullDiversification: 0.5,
  },
} as const;

export interface PlatformUse {
  platform: Platform;
  status: ConnectionStatus;
  connectedAt: string | null;
  /** Complete months with at least one figure converted to euro. */
  monthsReported: number;
  /** Figures left out because their currency could not be converted. */
  unconvertible: number;
  /** Currency of the latest figure, when it is a well-formed ISO 4217 code. */
  sourceCurrency: string | null;
}

export interface IncomeMetrics {
  /** Latest complete month any connected platform reported; without data, the last complete month. */
  asOfMonth: number;
  /** Complete months between the as-of month and the month before `now`. */
  lagMonths: number;
  monthsObserved: number;
  windowMonths: number;
  revenue3mTotal: number;
  revenue12mTotal: number;
  monthlyAvg: number;
  /** Average of the last 3 months (or fewer): revenue3mTotal divided by their number. */
  recent3mAvg: number;
  perPlatform: PlatformBreakdown[];
  cv: number | null;
  maxDrawdownPct: number | null;
  hhi: number | null;
  slope: number | null;
  /** slope as percent of monthlyAvg, from the printed figures; null when either is missing or avg <= 0. */
  slopePct: number | null;
  trend3m: Trend;
  incomeTrend: Trend;
  stabilityScore: number;
  negativeMonths: number;
  platforms: PlatformUse[];
}

const CURRENCY = /^[A-Z]{3}$/;

export function computeMetrics(input: readonly PlatformIncome[], now: Date): IncomeMetrics {
  const lastComplete = monthOfDate(now) - 1;
  const platforms: PlatformUse[] = [];
  const records: { use: PlatformUse; idx: number[]; eur: number[] }[] = [];
  let first = Infinity;
  let last = -Infinity;
  for (const p of input) {
    if (platforms.some((u) => u.platform === p.platform)) continue;
    const use: PlatformUse = {
      platform: p.platform,
      status: p.status,
      connectedAt: p.connectedAt ?? null,
      monthsReported: 0,
      unconvertible: 0,
      sourceCurrency: null,
    };
    platforms.push(use);
    // Data of a connection that is not live was not fetched under consent, so it is not used.
    if (p.status !== 'connected') continue;
    const idx: number[] = [];
    const eur: number[] = [];
    let latest = -Infinity;
    for (const r of p.months) {
      const i = monthIndex(r.month);
      if (i > lastComplete) continue; // the running month is incomplete and would read as a drop
      if (i >= latest) {
        latest = i;
        use.sourceCurrency = CURRENCY.test(r.sourceCurrency) ? r.sourceCurrency : null;
      }
      const a = r.amountEur;
      if (a === null || !Number.isFinite(a)) {
        use.unconvertible++;
        continue;
      }
      idx.push(i);
      eur.push(a);
      if (i < first) first = i;
      if (i > last) last = i;
    }
    records.push({ use, idx, eur });
  }

  // One series from the first reported month to the as-of month; a month a platform did not report
  // counts as zero revenue for it (the conservative reading of a gap).
  const n = last >= first ? last - first + 1 : 0;
  const asOfMonth = n > 0 ? last : lastComplete;
  const total = new Float64Array(n);
  const w = Math.min(n, METRIC_RULES.windowMonths);
  const start = n - w;
  const k3 = Math.min(n, 3);
  const used: { platform: Platform; sum3: number; sum12: number }[] = [];
  for (const { use, idx, eur } of records) {
    if (idx.length === 0) continue;
    const series = new Float64Array(n);
    const seen = new Uint8Array(n);
    for (let j = 0; j < idx.length; j++) {
      const at = idx[j]! - first;
      series[at]! += eur[j]!;
      if (seen[at] === 0) {
        seen[at] = 1;
        use.monthsReported++;
      }
    }
    let sum3 = 0;
    let sum12 = 0;
    for (let i = start; i < n; i++) {
      total[i]! += series[i]!;
      sum12 += series[i]!;
      if (i >= n - k3) sum3 += series[i]!;
    }
    used.push({ platform: use.platform, sum3, sum12 });
  }

  let sum12 = 0;
  let sum3 = 0;
  let negativeMonths = 0;
  for (let i = start; i < n; i++) {
    sum12 += total[i]!;
    if (i >= n - k3) sum3 += total[i]!;
    if (total[i]! < 0) negativeMonths++;
  }
  const revenue12mTotal = cents(sum12);
  const revenue3mTotal = cents(sum3);
  const mean = w > 0 ? sum12 / w : 0;
  const monthlyAvg = cents(mean);
  const recent3mAvg = k3 > 0 ? cents(revenue3mTotal / k3) : 0;

  // Shares use the positive part of each platform's 12-month total: a platform whose refunds exceed
  // its sales contributes nothing rather than a negative share.
  let positive = 0;
  for (const u of used) positive += Math.max(0, u.sum12);
  let hhiSum = 0;
  const perPlatform = used.map((u): PlatformBreakdown => {
    const share = positive > 0 ? Math.max(0, u.sum12) / positive : 0;
    hhiSum += share * share;
    return {
      platform: u.platform,
      revenue_3m_total_eur: cents(u.sum3),
      revenue_12m_total_eur: cents(u.sum12),
      monthly_revenue_avg_eur: cents(u.sum12 / w),
      share_of_revenue: ratio(share),
    };
  });
  const hhi = positive > 0 ? ratio(hhiSum) : null;

  let cv: number | null = null;
  if (w >= METRIC_RULES.cvMinMonths && mean > 0) {
    let ss = 0;
    for (let i = start; i < n; i++) ss += (total[i]! - mean) ** 2;
    cv = ratio(Math.sqrt(ss / w) / mean);
  }

  let maxDrawdownPct: number | null = null;
  if (w >= METRIC_RULES.drawdownMinMonths) {
    let peak = 0;
    let worst = 0;
    for (let i = start; i < n; i++) {
      const x = total[i]!;
      if (x > peak) peak = x;
      else if (peak > 0) worst = Math.max(worst, (peak - Math.max(0, x)) / peak);
    }
    if (peak > 0) maxDrawdownPct = cents(worst * 100);
  }

  let slope: number | null = null;
  if (w >= METRIC_RULES.slopeMinMonths) {
    const xMean = (w - 1) / 2;
    let sxy = 0;
    let sxx = 0;
    for (let i = 0; i < w; i++) {
      sxy += (i - xMean) * (total[start + i]! - mean);
      sxx += (i - xMean) ** 2;
    }
    slope = cents(sxy / sxx);
  }
  const slopePct = slope !== null && monthlyAvg > 0 ? cents((slope / monthlyAvg) * 100) : null;

  let trend3m: Trend = 'insufficient_data';
  if (n >= METRIC_RULES.trend3mMinMonths) {
    const recent = (total[n - 1]! + total[n - 2]! + total[n - 3]!) / 3;
    const before = (total[n - 4]! + total[n - 5]! + total[n - 6]!) / 3;
    const change = before !== 0 ? ratio((recent - before) / Math.abs(before)) : Math.sign(recent);
    trend3m = label(change, METRIC_RULES.trend3mChange);
  }
  const incomeTrend: Trend =
    w >= METRIC_RULES.incomeTrendMinMonths && slopePct !== null ? label(slopePct, METRIC_RULES.incomeTrendPctPerMonth) : 'insufficient_data';

  return {
    asOfMonth,
    lagMonths: lastComplete - asOfMonth,
    monthsObserved: n,
    windowMonths: w,
    revenue3mTotal,
    revenue12mTotal,
    monthlyAvg,
    recent3mAvg,
    perPlatform,
    cv,
    maxDrawdownPct,
    hhi,
    slope,
    slopePct,
    trend3m,
    incomeTrend,
    stabilityScore: stabilityScore(n, cv, maxDrawdownPct, hhi, slopePct),
    negativeMonths,
    platforms,
  };
}

const label = (x: number, threshold: number): Trend => (x >= threshold ? 'growing' : x <= -threshold ? 'declining' : 'stable');

/** Weighted sum of five components in [0, 1]; a component whose metric is missing scores 0. */
function stabilityScore(months: number, cv: number | null, drawdownPct: number | null, hhi: number | null, slopePct: number | null): number {
  const s = METRIC_RULES.stability;
  const volatility = cv === null ? 0 : clamp(1 - cv / s.cvAtZero, 0, 1);
  const drawdown = drawdownPct === null ? 0 : 1 - drawdownPct / 100;
  const history = Math.min(months, s.fullHistoryMonths) / s.fullHistoryMonths;
  const trend = slopePct === null ? 0 : clamp(1 - slopePct / s.trendPctAtZero, 0, 1);
  const diversification = hhi === null ? 0 : clamp((1 - hhi) / s.fullDiversification, 0, 1);
  const w = s.weights;
  return ratio(w.volatility * volatility + w.drawdown * drawdown + w.history * history + w.trend * trend + w.diversification * diversification);
}
