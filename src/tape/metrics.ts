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

/** A connected platform's usable figures: euro amounts of complete months, in input order. */
interface ReportedFigures {
  use: PlatformUse;
  months: number[];
  amountsEur: number[];
  firstMonth: number;
  lastMonth: number;
}

/** Section 2 "history": from the first reported month to the as-of month. */
interface History {
  firstMonth: number;
  asOfMonth: number;
  /** `n` in docs/scoring.md. */
  monthsObserved: number;
}

/** Section 2 "window": the last `w` months of the history. */
interface Window {
  /** `w` in docs/scoring.md. */
  length: number;
  /** Position of the window's first month in the history. */
  start: number;
  /** `k` in docs/scoring.md: how many months the 3-month figures cover. */
  recentMonths: number;
}

/** A platform's revenue per month of the window, oldest first. */
interface PlatformWindow {
  platform: Platform;
  series: Float64Array;
}

/** A platform's unrounded sums: `P_p` in docs/scoring.md is `twelveMonth`. */
interface PlatformSums {
  platform: Platform;
  threeMonth: number;
  twelveMonth: number;
}

export function computeMetrics(input: readonly PlatformIncome[], now: Date): IncomeMetrics {
  // Section 2, Months and windows.
  const lastCompleteMonth = monthOfDate(now) - 1;
  const { platforms, reporting } = readConnections(input, lastCompleteMonth);
  const history = historyOf(reporting, lastCompleteMonth);
  const window = windowOf(history.monthsObserved);
  const platformWindows = reporting.map((figures) => platformWindowOf(figures, history, window));
  const monthlyTotals = monthlyTotalsOf(platformWindows, window); // T_i over the window

  // Section 3, Metrics, in the order of its table.
  const revenue3mTotal = cents(threeMonthSum(monthlyTotals, window));
  const windowSum = twelveMonthSum(monthlyTotals, window);
  const revenue12mTotal = cents(windowSum);
  const windowMean = windowMeanOf(windowSum, window); // μ; A is its printed form
  const monthlyAvg = cents(windowMean);
  const recent3mAvg = recent3mAverage(revenue3mTotal, window); // A3
  const platformSums = platformWindows.map((p) => platformSumsOf(p, window));
  const shares = revenueShares(platformSums);
  const perPlatform = perPlatformBreakdown(platformSums, shares, window);
  const hhi = platformHhi(shares);
  const cv = volatilityCv(monthlyTotals, windowMean, window);
  const maxDrawdownPct = maxDrawdown(monthlyTotals, window);
  const slope = trendSlope(monthlyTotals, windowMean, window);
  const slopePct = trendPct(slope, monthlyAvg); // g
  const trend3m = trend3mOf(monthlyTotals, history);
  const incomeTrend = incomeTrendOf(slopePct, window);
  const stabilityScore = incomeStabilityScore(history.monthsObserved, cv, maxDrawdownPct, hhi, slopePct); // S

  return {
    asOfMonth: history.asOfMonth,
    lagMonths: lastCompleteMonth - history.asOfMonth,
    monthsObserved: history.monthsObserved,
    windowMonths: window.length,
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
    stabilityScore,
    negativeMonths: negativeMonthsOf(monthlyTotals),
    platforms,
  };
}

/**
 * One `PlatformUse` per requested platform (the first entry wins), and the usable figures of the
 * connected ones that reported something.
 */
function readConnections(input: readonly PlatformIncome[], lastCompleteMonth: number): { platforms: PlatformUse[]; reporting: ReportedFigures[] } {
  const platforms: PlatformUse[] = [];
  const reporting: ReportedFigures[] = [];
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
    const figures = completeMonthFigures(use, p, lastCompleteMonth);
    if (figures.months.length > 0) reporting.push(figures);
  }
  return { platforms, reporting };
}

/** Also records on `use` the figures left unconverted and the currency of the latest month. */
function completeMonthFigures(use: PlatformUse, income: PlatformIncome, lastCompleteMonth: number): ReportedFigures {
  const months: number[] = [];
  const amountsEur: number[] = [];
  let firstMonth = Infinity;
  let lastMonth = -Infinity;
  let latest = -Infinity;
  for (const r of income.months) {
    const month = monthIndex(r.month);
    if (month > lastCompleteMonth) continue; // the running month is incomplete and would read as a drop
    // `>=` so that, of several records of the latest month, the one listed last names the currency.
    if (month >= latest) {
      latest = month;
      use.sourceCurrency = CURRENCY.test(r.sourceCurrency) ? r.sourceCurrency : null;
    }
    const amountEur = r.amountEur;
    if (amountEur === null || !Number.isFinite(amountEur)) {
      use.unconvertible++;
      continue;
    }
    months.push(month);
    amountsEur.push(amountEur);
    if (month < firstMonth) firstMonth = month;
    if (month > lastMonth) lastMonth = month;
  }
  return { use, months, amountsEur, firstMonth, lastMonth };
}

/** Without any reported month the history is empty and the as-of month falls back to the last complete one. */
function historyOf(reporting: readonly ReportedFigures[], lastCompleteMonth: number): History {
  let firstMonth = Infinity;
  let lastMonth = -Infinity;
  for (const figures of reporting) {
    firstMonth = Math.min(firstMonth, figures.firstMonth);
    lastMonth = Math.max(lastMonth, figures.lastMonth);
  }
  const monthsObserved = lastMonth >= firstMonth ? lastMonth - firstMonth + 1 : 0;
  return { firstMonth, asOfMonth: monthsObserved > 0 ? lastMonth : lastCompleteMonth, monthsObserved };
}

function windowOf(monthsObserved: number): Window {
  const length = Math.min(monthsObserved, METRIC_RULES.windowMonths);
  return { length, start: monthsObserved - length, recentMonths: Math.min(monthsObserved, 3) };
}

/**
 * Reported months are counted over the whole history, not only the window, for `monthsReported`. A
 * month the platform did not report stays zero: the conservative reading of a gap.
 */
function platformWindowOf(figures: ReportedFigures, history: History, window: Window): PlatformWindow {
  const series = new Float64Array(window.length);
  const reported = new Uint8Array(history.monthsObserved);
  for (let j = 0; j < figures.months.length; j++) {
    const at = figures.months[j]! - history.firstMonth;
    if (at >= window.start) series[at - window.start]! += figures.amountsEur[j]!;
    if (reported[at] === 0) {
      reported[at] = 1;
      figures.use.monthsReported++;
    }
  }
  return { platform: figures.use.platform, series };
}

/** `T_i` over the window; platforms are added in input order, which fixes the float rounding. */
function monthlyTotalsOf(platformWindows: readonly PlatformWindow[], window: Window): Float64Array {
  const totals = new Float64Array(window.length);
  for (const { series } of platformWindows) {
    for (let i = 0; i < window.length; i++) totals[i]! += series[i]!;
  }
  return totals;
}

// The 3- and 12-month sums are unrounded and each added oldest month first: the order fixes the float rounding.
function threeMonthSum(windowSeries: Float64Array, window: Window): number {
  let sum = 0;
  for (let i = window.length - window.recentMonths; i < window.length; i++) sum += windowSeries[i]!;
  return sum;
}

function twelveMonthSum(windowSeries: Float64Array, window: Window): number {
  let sum = 0;
  for (let i = 0; i < window.length; i++) sum += windowSeries[i]!;
  return sum;
}

/** μ in docs/scoring.md: volatility and trend need it unrounded. */
const windowMeanOf = (windowSum: number, window: Window): number => (window.length > 0 ? windowSum / window.length : 0);

/** A3 divides the printed 3-month total, so a credit team recomputing it by hand gets the same cents. */
const recent3mAverage = (revenue3mTotal: number, window: Window): number => (window.recentMonths > 0 ? cents(revenue3mTotal / window.recentMonths) : 0);

const platformSumsOf = ({ platform, series }: PlatformWindow, window: Window): PlatformSums => ({
  platform,
  threeMonth: threeMonthSum(series, window),
  twelveMonth: twelveMonthSum(series, window),
});

/**
 * `s_p`, unrounded, in platform order; null when no platform has a positive 12-month sum. Shares use
 * the positive part of each sum: a platform whose refunds exceed its sales contributes nothing rather
 * than a negative share.
 */
function revenueShares(platformSums: readonly PlatformSums[]): number[] | null {
  let positiveTotal = 0;
  for (const p of platformSums) positiveTotal += Math.max(0, p.twelveMonth);
  // Negated so that a NaN total (sums overflowing to opposite infinities) also means no positive revenue.
  if (!(positiveTotal > 0)) return null;
  const shares: number[] = [];
  for (const p of platformSums) shares.push(Math.max(0, p.twelveMonth) / positiveTotal);
  return shares;
}

function perPlatformBreakdown(platformSums: readonly PlatformSums[], shares: readonly number[] | null, window: Window): PlatformBreakdown[] {
  return platformSums.map((p, i): PlatformBreakdown => ({
    platform: p.platform,
    revenue_3m_total_eur: cents(p.threeMonth),
    revenue_12m_total_eur: cents(p.twelveMonth),
    monthly_revenue_avg_eur: cents(p.twelveMonth / window.length),
    share_of_revenue: ratio(shares === null ? 0 : shares[i]!),
  }));
}

/** From the unrounded shares; recomputing from the printed ones agrees only to within 0.0001. */
function platformHhi(shares: readonly number[] | null): number | null {
  if (shares === null) return null;
  let sumOfSquares = 0;
  for (const share of shares) sumOfSquares += share * share;
  return ratio(sumOfSquares);
}

/** The population standard deviation (divided by `w`, not `w − 1`), as docs/scoring.md specifies. */
function volatilityCv(monthlyTotals: Float64Array, windowMean: number, window: Window): number | null {
  // Negated so that a NaN mean (sums overflowing to opposite infinities) also leaves CV undefined.
  if (!(window.length >= METRIC_RULES.cvMinMonths && windowMean > 0)) return null;
  let sumOfSquares = 0;
  for (let i = 0; i < window.length; i++) sumOfSquares += (monthlyTotals[i]! - windowMean) ** 2;
  return ratio(Math.sqrt(sumOfSquares / window.length) / windowMean);
}

/** A month below zero falls to zero, not beyond, so the result stays within [0, 100]. */
function maxDrawdown(monthlyTotals: Float64Array, window: Window): number | null {
  if (window.length < METRIC_RULES.drawdownMinMonths) return null;
  let peak = 0;
  let largestFall = 0;
  for (let i = 0; i < window.length; i++) {
    const month = monthlyTotals[i]!;
    if (month > peak) peak = month;
    else if (peak > 0) largestFall = Math.max(largestFall, (peak - Math.max(0, month)) / peak);
  }
  return peak > 0 ? cents(largestFall * 100) : null;
}

function trendSlope(monthlyTotals: Float64Array, windowMean: number, window: Window): number | null {
  if (window.length < METRIC_RULES.slopeMinMonths) return null;
  const monthMean = (window.length - 1) / 2; // x̄
  let sxy = 0;
  let sxx = 0;
  for (let i = 0; i < window.length; i++) {
    sxy += (i - monthMean) * (monthlyTotals[i]! - windowMean);
    sxx += (i - monthMean) ** 2;
  }
  return cents(sxy / sxx);
}

/** `g` in docs/scoring.md, from the printed slope and average so that decisions match the tape. */
const trendPct = (slope: number | null, monthlyAvg: number): number | null => (slope !== null && monthlyAvg > 0 ? cents((slope / monthlyAvg) * 100) : null);

/** Gated on `n` as docs/scoring.md states; 6 months of history put all six in the window, which is never shorter. */
function trend3mOf(monthlyTotals: Float64Array, history: History): Trend {
  if (history.monthsObserved < METRIC_RULES.trend3mMinMonths) return 'insufficient_data';
  const end = monthlyTotals.length;
  // Keep the newest-first order of these additions: another order can move the last bit, and the label with it.
  const last3 = (monthlyTotals[end - 1]! + monthlyTotals[end - 2]! + monthlyTotals[end - 3]!) / 3; // L
  const before3 = (monthlyTotals[end - 4]! + monthlyTotals[end - 5]! + monthlyTotals[end - 6]!) / 3; // B
  const change = before3 !== 0 ? ratio((last3 - before3) / Math.abs(before3)) : Math.sign(last3);
  return label(change, METRIC_RULES.trend3mChange);
}

const incomeTrendOf = (slopePct: number | null, window: Window): Trend =>
  window.length >= METRIC_RULES.incomeTrendMinMonths && slopePct !== null ? label(slopePct, METRIC_RULES.incomeTrendPctPerMonth) : 'insufficient_data';

/** Counted over the window only: NEGATIVE_REVENUE_MONTH speaks of window months. */
function negativeMonthsOf(monthlyTotals: Float64Array): number {
  let negativeMonths = 0;
  for (let i = 0; i < monthlyTotals.length; i++) if (monthlyTotals[i]! < 0) negativeMonths++;
  return negativeMonths;
}

const label = (x: number, threshold: number): Trend => (x >= threshold ? 'growing' : x <= -threshold ? 'declining' : 'stable');

/** Weighted sum of five components in [0, 1]; a component whose metric is missing scores 0. */
function incomeStabilityScore(months: number, cv: number | null, drawdownPct: number | null, hhi: number | null, slopePct: number | null): number {
  const s = METRIC_RULES.stability;
  const volatility = cv === null ? 0 : clamp(1 - cv / s.cvAtZero, 0, 1);
  const drawdown = drawdownPct === null ? 0 : 1 - drawdownPct / 100;
  const history = Math.min(months, s.fullHistoryMonths) / s.fullHistoryMonths;
  const trend = slopePct === null ? 0 : clamp(1 - slopePct / s.trendPctAtZero, 0, 1);
  const diversification = hhi === null ? 0 : clamp((1 - hhi) / s.fullDiversification, 0, 1);
  const w = s.weights;
  return ratio(w.volatility * volatility + w.drawdown * drawdown + w.history * history + w.trend * trend + w.diversification * diversification);
}
