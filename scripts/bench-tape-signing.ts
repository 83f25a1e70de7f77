// npm run bench:tape-signing: what the signature of a tape response (P26) costs per request, with and
// without the signature cache, side by side in one run: the same golden tapes' bytes signed again
// and again (a tape's bytes change only when it is scored again), and rendering them as a yardstick.
import { readdirSync, readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { createSigningKey, TapeSigner } from '../src/signing/tape-signer.ts';
import type { SigningKeyRow } from '../src/signing/signing-keys-repository.ts';

const dir = new URL('../spec/examples/tapes/', import.meta.url);
const tapes = readdirSync(dir).map((file) => Buffer.from(JSON.stringify(JSON.parse(readFileSync(new URL(file, dir), 'utf8')))));
const encryptionKey = randomBytes(32);
const rows: SigningKeyRow[] = [];
await createSigningKey({ insert: async (row) => void rows.push(row) }, encryptionKey, new Date());
const keys = { listActive: async () => rows };
const now = () => new Date();

async function signingsPerSecond(signer: TapeSigner, ms: number): Promise<number> {
  let done = 0;
  const start = performance.now();
  while (performance.now() - start < ms) {
    for (let i = 0; i < 100; i++) await signer.sign(tapes[done++ % tapes.length]!);
  }
  return done / ((performance.now() - start) / 1000);
}

function serialisationsPerSecond(ms: number): number {
  const values = tapes.map((bytes) => JSON.parse(bytes.toString('utf8')) as unknown);
  let done = 0;
  let length = 0;
  const start = performance.now();
  while (performance.now() - start < ms) {
    for (let i = 0; i < 100; i++) length += JSON.stringify(values[done++ % values.length]).length;
  }
  if (length === 0) throw new Error('nothing serialised');
  return done / ((performance.now() - start) / 1000);
}

const uncached = new TapeSigner({ keys, encryptionKey, now, cacheEntries: 0 });
const cached = new TapeSigner({ keys, encryptionKey, now });
await signingsPerSecond(uncached, 300);
await signingsPerSecond(cached, 300);
const results = { uncached: await signingsPerSecond(uncached, 2000), cached: await signingsPerSecond(cached, 2000), serialise: serialisationsPerSecond(2000) };
const bytes = Math.round(tapes.reduce((sum, t) => sum + t.length, 0) / tapes.length);
console.log(`tapes: ${tapes.length} golden tapes, ${bytes} bytes on average`);
console.log(`ES256 signature, no cache:   ${Math.round(results.uncached)} /s (${(1e6 / results.uncached).toFixed(1)} µs each)`);
console.log(`signature from the cache:    ${Math.round(results.cached)} /s (${(1e6 / results.cached).toFixed(1)} µs each)`);
console.log(`JSON.stringify of the tape:  ${Math.round(results.serialise)} /s (${(1e6 / results.serialise).toFixed(1)} µs each)`);
console.log(
  `cache speed-up: ${(results.cached / results.uncached).toFixed(1)}x; an uncached signature costs ${(results.serialise / results.uncached).toFixed(1)} serialisations`,
);
