// npm run bench:scoring: Risk Tapes per second on one thread, each computed from 24 months on two
// platforms (computeTape) and rendered at 2.0.0 (renderTape), measured after a warm-up.
import { computeTape, renderTape, type TapeInput } from '../src/tape/index.ts';

const now = new Date('2026-11-21T10:16:00Z');
const months = Array.from({ length: 24 }, (_, i) => `${2024 + Math.floor((i + 10) / 12)}-${String(((i + 10) % 12) + 1).padStart(2, '0')}`);

// A few distinct creators, so that no single input stays hot in a cache.
const inputs: TapeInput[] = Array.from({ length: 64 }, (_, k) => ({
  verificationId: `vrf_bench${String(k).padStart(6, '0')}`,
  obligorReference: `bench-${k}`,
  productType: 'rbf',
  jurisdiction: 'eu_gdpr',
  platforms: (['youtube', 'stripe'] as const).map((platform, p) => ({
    platform,
    status: 'connected',
    connectedAt: '2026-11-21T10:00:00Z',
    months: months.map((month, i) => {
      const eur = Math.round((2000 + 1500 * p + 400 * Math.sin(i * (k + 1) * 0.7) + 30 * k) * 100) / 100;
      return { month, sourceCurrency: 'EUR', sourceAmount: eur, amountEur: eur };
    }),
  })),
}));

function run(ms: number): { tapes: number; seconds: number; checksum: number } {
  let tapes = 0;
  let checksum = 0;
  const start = performance.now();
  let elapsed = 0;
  while (elapsed < ms) {
    for (let i = 0; i < 1000; i++) {
      const tape = renderTape(computeTape(inputs[tapes % inputs.length]!, { now }), '2.0.0');
      checksum += tape.eligibility.max_advance_eur;
      tapes++;
    }
    elapsed = performance.now() - start;
  }
  return { tapes, seconds: elapsed / 1000, checksum };
}

run(1500);
const { tapes, seconds, checksum } = run(4000);
console.log(`scoring benchmark: 24 months x 2 platforms, computeTape + renderTape(2.0.0), one thread, Node ${process.version}`);
console.log(`${Math.round(tapes / seconds).toLocaleString('en-US')} tapes/second (${tapes} tapes in ${seconds.toFixed(2)} s; checksum ${checksum.toFixed(2)})`);
