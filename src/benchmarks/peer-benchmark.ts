import { readFileSync } from 'node:fs';
import type { components } from '../../generated/api.ts';
import type { RiskTape200 } from '../../generated/tape.ts';
import type { UnitOfWork } from '../platform/db/unit-of-work.ts';
import { DomainError } from '../platform/domain-error.ts';
import type { VerificationLifecycle } from '../verifications/verification-lifecycle.ts';
import type { BenchmarksRepository, Cohort } from './benchmarks-repository.ts';
import { BENCHMARK_METRICS, bucketsOf, metricOf, percentileOf, quantile, type BenchmarkMetricName, type Distribution } from './scales.ts';

type Benchmark = components['schemas']['Benchmark'];

/**
 * Peers are shown only from 30 completed tapes of at least 3 lenders (P22), the asking lender's own
 * not counted (P28); below that the reference population stands in, so a small cohort never reveals
 * one lender's creators.
 */
const COHORT_FLOOR = { tapes: 30, lenders: 3 };
/**
 * The (1, 50 %) dominance rule of statistical disclosure control (P28): peers are shown only while
 * no one lender holds more than half of them. Otherwise the peers' quartiles would be mostly one
 * lender's book, and that lender, with the asking one, could place them on the few tapes of the
 * rest (docs/benchmarks.md).
 */
export const DOMINANCE = { lenders: 1, share: 0.5 };
/** A peer cohort's size is published rounded down to this step: adding one tape rarely shows. */
export const COHORT_SIZE_STEP = 10;

type Counts = Record<string, Record<string, Record<string, number>>>;

/** The built-in population (scripts/reference-population.ts): bucket counts per product type and metric. */
export function loadReferencePopulation(): Record<string, Cohort> {
  const counts = JSON.parse(readFileSync(new URL('./reference-population.json', import.meta.url), 'utf8')) as Counts;
  return Object.fromEntries(
    Object.entries(counts).map(([productType, metrics]) => {
      const distributions: Partial<Record<BenchmarkMetricName, Distribution>> = {};
      for (const [metric, buckets] of Object.entries(metrics)) {
        const map = new Map(Object.entries(buckets).map(([bucket, tapes]) => [Number(bucket), tapes]));
        distributions[metric as BenchmarkMetricName] = { counts: map, total: [...map.values()].reduce((a, b) => a + b, 0) };
      }
      const tapes = Math.max(0, ...Object.values(distributions).map((d) => d.total));
      return [productType, { tapes, lenders: 0, tapesPerLender: [], distributions }];
    }),
  );
}

export interface PeerBenchmarkDeps {
  lifecycle: Pick<VerificationLifecycle, 'findTapeForLender'>;
  benchmarks: Pick<BenchmarksRepository, 'cohort'>;
  reference: Record<string, Cohort>;
  now: () => Date;
}

/** GET /benchmarks/{verification_id}: the verification's metrics placed among the completed tapes of its product type. */
export async function peerBenchmark(deps: PeerBenchmarkDeps, lenderId: string, verificationId: string): Promise<Benchmark> {
  const found = await deps.lifecycle.findTapeForLender(lenderId, verificationId);
  if (!found) throw new DomainError('not_found', `No verification ${verificationId}.`);
  if (found.status !== 'completed' || !found.tape) {
    throw new DomainError('not_found', `Verification ${verificationId} is ${found.status}; its benchmark exists once it is completed.`);
  }
  const tape = found.tape;
  const productType = tape.eligibility.product_type;
  // The lender's own tapes are left out: adding tapes of its own then never moves its answer, so no
  // difference of two of its answers shows another lender's tape (P28).
  const peers = await deps.benchmarks.cohort(productType, lenderId);
  const usePeers = publishable(peers);
  const cohort = usePeers ? peers : deps.reference[productType]!;
  const metrics = Object.fromEntries(
    BENCHMARK_METRICS.map((metric) => {
      const value = metricOf(tape, metric);
      const distribution = cohort.distributions[metric] ?? { counts: new Map<number, number>(), total: 0 };
      return [
        metric,
        {
          value,
          percentile: value === null ? null : percentileOf(metric, distribution, value),
          p25: quantile(metric, distribution, 0.25),
          median: quantile(metric, distribution, 0.5),
          p75: quantile(metric, distribution, 0.75),
        },
      ];
    }),
  ) as Benchmark['metrics'];
  return {
    verification_id: verificationId,
    cohort: {
      source: usePeers ? 'peers' : 'reference',
      size: usePeers ? Math.floor(peers.tapes / COHORT_SIZE_STEP) * COHORT_SIZE_STEP : cohort.tapes,
      product_type: productType,
    },
    metrics,
    generated_at: deps.now().toISOString(),
  };
}

/** The floor (P22) and the dominance rule (P28), both on the peers the asking lender is compared with. */
export function publishable(peers: Pick<Cohort, 'tapes' | 'lenders' | 'tapesPerLender'>): boolean {
  const largest = peers.tapesPerLender.slice(0, DOMINANCE.lenders).reduce((a, b) => a + b, 0);
  return peers.tapes >= COHORT_FLOOR.tapes && peers.lenders >= COHORT_FLOOR.lenders && largest <= DOMINANCE.share * peers.tapes;
}

/** The verifications store's tape listener: a completed (or re-scored) tape counts in its cohort, in the same unit of work. */
export function countInCohort(benchmarks: Pick<BenchmarksRepository, 'record'>) {
  return (unit: UnitOfWork, verification: { id: string; lenderId: string }, tape: RiskTape200) =>
    benchmarks.record(unit, {
      verificationId: verification.id,
      lenderId: verification.lenderId,
      productType: tape.eligibility.product_type,
      buckets: bucketsOf(tape),
    });
}

/** Counts the completed tapes stored before benchmarks existed; runs at start-up until none is left. */
export async function countUncountedTapes(benchmarks: Pick<BenchmarksRepository, 'uncountedTapes' | 'addMany'>): Promise<number> {
  let counted = 0;
  for (;;) {
    const batch = await benchmarks.uncountedTapes(1000);
    if (batch.length === 0) return counted;
    await benchmarks.addMany(
      batch.map(({ verificationId, lenderId, tape }) => {
        const parsed = JSON.parse(tape) as RiskTape200;
        return { verificationId, lenderId, productType: parsed.eligibility.product_type, buckets: bucketsOf(parsed) };
      }),
    );
    counted += batch.length;
  }
}
