// The benchmarks' reference population (docs/benchmarks.md): a fixed, seeded set of synthetic
// creators per product type, scored by the real engine and kept as bucket counts only. Run
// `npm run generate:reference-population` after changing the engine or the buckets; a test fails
// while the committed file differs from what this builds.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { BENCHMARK_METRICS, bucketsOf } from '../src/benchmarks/scales.ts';
import { computeTape, convertToEuro, DEFAULT_RATE_TABLE, PRODUCT_TYPES, type PlatformIncome } from '../src/tape/index.ts';
import { monthString } from '../src/tape/income.ts';

export const REFERENCE_POPULATION_FILE = fileURLToPath(new URL('../src/benchmarks/reference-population.json', import.meta.url));
const CREATORS_PER_PRODUCT = 1000;
/** A fixed "now", so the population does not change with the date it is built on. */
const NOW = new Date('2026-11-01T00:00:00Z');

/** mulberry32: small, seeded, the same numbers on every machine. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** One synthetic creator: 6 to 24 months on one to three platforms, with a level, a trend and noise drawn from `next`. */
function syntheticCreator(next: () => number): PlatformIncome[] {
  const months = 6 + Math.floor(next() * 19);
  const platforms = (['youtube', 'stripe', 'youtube'] as const).slice(0, 1 + Math.floor(next() * 2));
  const asOf = NOW.getUTCFullYear() * 12 + NOW.getUTCMonth() - 1;
  return platforms.map((platform, p) => {
    const level = 10 ** (2 + next() * 3.5) / (p + 1);
    const trend = (next() - 0.45) * 0.08;
    const noise = next() * 0.6;
    const amounts = Array.from({ length: months }, (_, i) => {
      const value = level * (1 + trend) ** i * (1 + (next() - 0.5) * 2 * noise);
      return { month: monthString(asOf - months + 1 + i), currency: 'EUR', amount: Math.max(0, Math.round(value * 100) / 100) };
    });
    return { platform, status: 'connected' as const, connectedAt: NOW.toISOString(), months: convertToEuro(DEFAULT_RATE_TABLE, amounts) };
  });
}

export type ReferencePopulation = Record<string, Record<string, Record<string, number>>>;

/** Per product type, per metric, tapes per bucket. */
export function buildReferencePopulation(): ReferencePopulation {
  const population: ReferencePopulation = {};
  for (const [index, productType] of PRODUCT_TYPES.entries()) {
    const next = random(0x5eed + index);
    const counts: Record<string, Record<string, number>> = Object.fromEntries(BENCHMARK_METRICS.map((metric) => [metric, {}]));
    for (let i = 0; i < CREATORS_PER_PRODUCT; i++) {
      const tape = computeTape(
        { verificationId: `vrf_reference${i}`, obligorReference: `reference-${i}`, productType, jurisdiction: 'other', platforms: syntheticCreator(next) },
        { now: NOW },
      );
      for (const [metric, bucket] of Object.entries(bucketsOf(tape))) counts[metric]![bucket] = (counts[metric]![bucket] ?? 0) + 1;
    }
    population[productType] = counts;
  }
  return population;
}

export const serialise = (population: ReferencePopulation) => `${JSON.stringify(population, null, 1)}\n`;

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(REFERENCE_POPULATION_FILE, serialise(buildReferencePopulation()));
  console.log(`wrote ${REFERENCE_POPULATION_FILE}`);
}
