// `npm run bench:scale`: the peer-benchmark endpoint's p50 latency with 10^3 completed tapes in its
// cohort, then with 10^6 (BENCH_SCALE_TAPES), measured in one run against one server process, and
// their ratio (goal: within 1.2x). The cohort is filled the way the service counts a completed tape
// (BenchmarksRepository), with minimal verification rows for the members' foreign key; the endpoint
// reads only the per-bucket aggregates, so its cost must not grow with the cohort.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { runAdmin } from '../src/admin/run-admin.ts';
import { BenchmarksRepository, type Member } from '../src/benchmarks/benchmarks-repository.ts';
import { BENCHMARK_METRICS, BUCKET_EDGES } from '../src/benchmarks/scales.ts';
import { openDatabase } from '../src/platform/db/database.ts';
import { startServerProcess } from '../test/support/server-process.ts';

const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const largest = Number(process.env.BENCH_SCALE_TAPES ?? 1_000_000);
const connections = 10;

/** Adds `count` members of product rbf from 20 lenders, spread over the buckets, with their verification rows. */
async function fill(databaseUrl: string, from: number, count: number): Promise<void> {
  const db = openDatabase(databaseUrl);
  const repository = new BenchmarksRepository(db.knex);
  const lenders = Array.from({ length: 20 }, (_, i) => `lnd_scale${i}`);
  await db
    .knex('lender_accounts')
    .insert(lenders.map((id) => ({ id, name: id, plan: 'production', jurisdiction: 'other', ip_allowlist: '[]', created_at: 'x', updated_at: 'x' })))
    .onConflict('id')
    .ignore();
  for (let start = from; start < from + count; start += 5000) {
    const ids = Array.from({ length: Math.min(5000, from + count - start) }, (_, i) => start + i);
    await db.knex.transaction(async (trx) => {
      for (let i = 0; i < ids.length; i += 400) {
        await trx('verifications').insert(
          ids.slice(i, i + 400).map((n) => ({
            id: `vrf_scale${n}`,
            lender_id: lenders[n % lenders.length],
            obligor_reference: `scale-${n}`,
            creator_platforms: '["youtube"]',
            lender_name: 'Scale',
            product_type: 'rbf',
            status: 'completed',
            consent_token_hash: `scale${n}`,
            consent_url: 'x',
            expires_at: 'x',
            created_at: 'x',
            updated_at: 'x',
          })),
        );
      }
    });
    const members: Member[] = ids.map((n) => ({
      verificationId: `vrf_scale${n}`,
      lenderId: lenders[n % lenders.length]!,
      productType: 'rbf',
      buckets: Object.fromEntries(BENCHMARK_METRICS.map((metric, m) => [metric, (n * (m + 7)) % (BUCKET_EDGES[metric].length + 1)])),
    }));
    await repository.addMany(members);
  }
  await db.close();
}

async function p50(url: string, headers: Record<string, string>): Promise<{ p50: number; rps: number; errors: number }> {
  const result = await autocannon({ url, headers, connections, duration: seconds });
  return { p50: result.latency.p50, rps: result.requests.average, errors: result.errors + result.timeouts + result.non2xx };
}

async function main(): Promise<void> {
  console.log(`Scale benchmark: GET /benchmarks/{id}, autocannon ${connections} connections, ${seconds} s per cohort size, Node ${process.version}`);
  const dir = mkdtempSync(join(tmpdir(), 'civ-scale-'));
  const databaseUrl = process.env.BENCH_DATABASE_URL ?? `sqlite:${join(dir, 'scale.sqlite')}`;
  const env = { DATABASE_URL: databaseUrl, SERVICE_MODE: 'sandbox', LOG_LEVEL: 'warn' };
  const server = await startServerProcess(env);
  try {
    const lender = await runAdmin(env, ['lender', 'create', '--name', 'Scale Lender']);
    const key = await runAdmin(env, ['key', 'create', '--lender', lender.id, '--role', 'lender']);
    await runAdmin(env, ['key', 'limit', '--key-id', key.id, '--rate-limit', '1000000', '--burst', '1000000']);
    const headers = { authorization: `Bearer ${key.api_key}`, 'content-type': 'application/json' };
    const created = await fetch(`${server.base}/api/v1/verifications`, {
      method: 'POST',
      headers: { ...headers, 'idempotency-key': randomUUID() },
      body: JSON.stringify({ obligor_reference: 'demo_prime_multi', creator_platforms: ['youtube', 'stripe'] }),
    });
    const { verification_id: id } = (await created.json()) as { verification_id: string };
    const url = `${server.base}/api/v1/benchmarks/${id}`;

    const rows: Array<{ tapes: number; p50: number; rps: number; errors: number }> = [];
    let filled = 0;
    for (const tapes of [1_000, largest]) {
      const started = Date.now();
      await fill(databaseUrl, filled, tapes - filled);
      filled = tapes;
      console.log(`cohort filled to ${tapes} tapes in ${((Date.now() - started) / 1000).toFixed(1)} s`);
      const source = ((await (await fetch(url, { headers })).json()) as { cohort: { source: string; size: number } }).cohort;
      if (source.source !== 'peers') throw new Error(`expected the peer cohort, got ${JSON.stringify(source)}`);
      rows.push({ tapes, ...(await p50(url, headers)) });
    }
    console.log(`\n${'tapes in cohort'.padEnd(16)} ${'p50 ms'.padStart(7)} ${'req/s'.padStart(8)} errors`);
    for (const r of rows) console.log(`${String(r.tapes).padEnd(16)} ${String(r.p50).padStart(7)} ${r.rps.toFixed(0).padStart(8)} ${r.errors}`);
    const [small, large] = rows;
    // autocannon's latencies are whole milliseconds: a sub-millisecond p50 counts as 1 ms.
    const ratio = Math.max(1, large!.p50) / Math.max(1, small!.p50);
    console.log(`\np50 at ${largest} / p50 at 1000: ${ratio.toFixed(2)} (goal ≤ 1.20) ${ratio <= 1.2 ? 'met' : 'MISSED'}`);
  } finally {
    server.child.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
