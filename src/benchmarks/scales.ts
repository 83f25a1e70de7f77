import type { RiskTape200 } from '../../generated/tape.ts';

/**
 * The benchmarked metrics, each with fixed bucket edges. Peers are counted per bucket, never kept as
 * values: a published quantile is a bucket edge, so it moves in steps, and no answer can carry one
 * lender's exact figure (docs/benchmarks.md).
 */
export const BENCHMARK_METRICS = [
  'monthly_revenue_avg_eur',
  'revenue_volatility_cv',
  'platform_hhi',
  'max_drawdown_pct',
  'income_stability_score',
  'trend_slope_eur_per_month',
] as const;
export type BenchmarkMetricName = (typeof BENCHMARK_METRICS)[number];

const linear = (from: number, to: number, step: number) =>
  Array.from({ length: Math.round((to - from) / step) + 1 }, (_, i) => Math.round((from + i * step) * 1e6) / 1e6);
/** Eight buckets a decade: about 33% apart, fine enough to place a creator, coarse enough to hide one. */
const logarithmic = (fromExponent: number, toExponent: number) =>
  Array.from({ length: (toExponent - fromExponent) * 8 + 1 }, (_, i) => Number((10 ** (fromExponent + i / 8)).toPrecision(3)));

const positiveEuro = [0, ...logarithmic(0, 7)];
const slopes = logarithmic(0, 6);

/** Sorted edges; a value falls in the bucket after the last edge at or below it (bucket 0 is below the first edge). */
export const BUCKET_EDGES: Record<BenchmarkMetricName, readonly number[]> = {
  monthly_revenue_avg_eur: positiveEuro,
  revenue_volatility_cv: linear(0, 3, 0.05),
  platform_hhi: linear(0, 1, 0.02),
  max_drawdown_pct: linear(0, 100, 2),
  income_stability_score: linear(0, 1, 0.02),
  trend_slope_eur_per_month: [...slopes.map((edge) => -edge).reverse(), 0, ...slopes],
};

export function bucketOf(metric: BenchmarkMetricName, value: number): number {
  const edges = BUCKET_EDGES[metric];
  let low = 0;
  let high = edges.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if (edges[middle]! <= value) low = middle + 1;
    else high = middle;
  }
  return low;
}

/** The metric's value on a tape (2.0.0), or null where the tape has no data for it. */
export function metricOf(tape: RiskTape200, metric: BenchmarkMetricName): number | null {
  switch (metric) {
    case 'monthly_revenue_avg_eur':
      return tape.metrics.monthly_revenue_avg_eur;
    case 'revenue_volatility_cv':
      return tape.risk_profile.revenue_volatility_cv;
    case 'platform_hhi':
      return tape.risk_profile.platform_hhi;
    case 'max_drawdown_pct':
      return tape.risk_profile.max_drawdown_pct;
    case 'income_stability_score':
      return tape.eligibility.income_stability_score ?? null;
    case 'trend_slope_eur_per_month':
      return tape.risk_profile.trend_slope_eur_per_month;
  }
}

/** A tape's place in each metric's buckets: what it adds to (and on erasure takes from) its cohort. */
export function bucketsOf(tape: RiskTape200): Partial<Record<BenchmarkMetricName, number>> {
  const buckets: Partial<Record<BenchmarkMetricName, number>> = {};
  for (const metric of BENCHMARK_METRICS) {
    const value = metricOf(tape, metric);
    if (value !== null && Number.isFinite(value)) buckets[metric] = bucketOf(metric, value);
  }
  return buckets;
}

export interface Distribution {
  /** Tapes per bucket index. */
  counts: ReadonlyMap<number, number>;
  total: number;
}

/** The lower edge of a bucket (for bucket 0, the first edge): what a quantile in it is published as. */
const edgeOf = (metric: BenchmarkMetricName, bucket: number) => BUCKET_EDGES[metric][Math.max(0, bucket - 1)]!;

export function quantile(metric: BenchmarkMetricName, distribution: Distribution, q: number): number {
  const rank = q * distribution.total;
  let seen = 0;
  for (const bucket of [...distribution.counts.keys()].sort((a, b) => a - b)) {
    seen += distribution.counts.get(bucket)!;
    if (seen >= rank) return edgeOf(metric, bucket);
  }
  return edgeOf(metric, BUCKET_EDGES[metric].length);
}

/** Share of the cohort at or below the value's bucket (half of its own bucket counted), in steps of 5 percent. */
export function percentileOf(metric: BenchmarkMetricName, distribution: Distribution, value: number): number {
  if (distribution.total === 0) return 0;
  const own = bucketOf(metric, value);
  let below = 0;
  for (const [bucket, count] of distribution.counts) if (bucket < own) below += count;
  const share = (below + (distribution.counts.get(own) ?? 0) / 2) / distribution.total;
  return Math.round((share * 100) / 5) * 5;
}
