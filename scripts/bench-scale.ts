// `npm run bench:scale`: p50 latencies with 10^3 verifications (completed tapes in the peer cohort),
// then with 10^6 (BENCH_SCALE_TAPES), measured in one run against one server process, and their
// ratios (goal: within 1.2x). The cohort is filled the way the service counts a completed tape
// (BenchmarksRepository), with verification rows for the members' foreign key. Measured: the
// peer-benchmark endpoint, which reads only the per-bucket aggregates, and GET /verifications (the
// newest page, a page deep in the list, and each filter) for one of the 20 lenders the rows are
// spread over, which reads one index range per page; neither cost may grow with the table.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { runAdmin } from '../src/admin/run-admin.ts';
import { BenchmarksRepository, type Member } from '../src/benchmarks/benchmarks-repository.ts';
import { BENCHMARK_METRICS, BUCKET_EDGES } from '../src/benchmarks/scales.ts';
import { chunks } from '../src/platform/db/chunks.ts';
import { openDatabase } from '../src/platform/db/database.ts';
import { startServerProcess } from '../test/support/server-process.ts';

const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const largest = Number(process.env.BENCH_SCALE_TAPES ?? 1_000_000);
const connections = 10;
const STATES = ['completed', 'pending_consent', 'failed', 'expired'];
/** One row a second from 2026-01-01, so the list order is the order of n. */
const createdAt = (n: number) => new Date(Date.UTC(2026, 0, 1) + n * 1000).toISOString();

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
            // Four states within each lender (n % 20), so the status filter has others to skip; the cohort counts members, not states.
            status: STATES[Math.floor(n / 20) % STATES.length],
            consent_token_hash: `scale${n}`,
            consent_url: 'x',
            expires_at: 'x',
            created_at: createdAt(n),
            updated_at: createdAt(n),
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
    // The service counts each tape in its own transaction, on PostgreSQL in a random shard of the
    // counters (COUNTER_SHARDS), so even the smallest cohort spans them all: counted in small batches, it does here too.
    for (const batch of chunks(members, Math.max(10, Math.ceil(count / 100)))) await repository.addMany(batch);
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

    type Row = { tapes: number; p50: number; rps: number; errors: number };
    const measured = new Map<string, Row[]>();
    const record = (name: string, row: Row) => measured.set(name, [...(measured.get(name) ?? []), row]);
    let filled = 0;
    let listHeaders: Record<string, string> | undefined;
    for (const tapes of [1_000, largest]) {
      const started = Date.now();
      await fill(databaseUrl, filled, tapes - filled);
      filled = tapes;
      console.log(`cohort filled to ${tapes} tapes in ${((Date.now() - started) / 1000).toFixed(1)} s`);
      const source = ((await (await fetch(url, { headers })).json()) as { cohort: { source: string; size: number } }).cohort;
      if (source.source !== 'peers') throw new Error(`expected the peer cohort, got ${JSON.stringify(source)}`);
      record('GET /benchmarks/{id}', { tapes, ...(await p50(url, headers)) });

      // The list as lnd_scale0 sees it: a twentieth of the rows (n = 0, 20, 40, ...).
      if (!listHeaders) {
        const listKey = await runAdmin(env, ['key', 'create', '--lender', 'lnd_scale0', '--role', 'lender']);
        await runAdmin(env, ['key', 'limit', '--key-id', listKey.id, '--rate-limit', '1000000', '--burst', '1000000']);
        listHeaders = { authorization: `Bearer ${listKey.api_key}` };
      }
      const middle = Math.floor(tapes / 40) * 20;
      const lists: Array<[string, string]> = [
        ['GET /verifications newest page', '?limit=20'],
        ['GET /verifications deep page', `?limit=20&starting_after=vrf_scale${middle}`],
        ['GET /verifications ?status', '?limit=20&status=failed'],
        ['GET /verifications ?obligor_reference', `?limit=20&obligor_reference=scale-${middle}`],
        ['GET /verifications ?created range', `?limit=20&created_gte=${createdAt(middle - 2000)}&created_lt=${createdAt(middle)}`],
      ];
      for (const [name, query] of lists) {
        const listUrl = `${server.base}/api/v1/verifications${query}`;
        const probe = await fetch(listUrl, { headers: listHeaders });
        const page = (await probe.json()) as { data?: unknown[] };
        if (probe.status !== 200 || !page.data?.length) throw new Error(`${name}: ${probe.status} ${JSON.stringify(page).slice(0, 200)}`);
        record(name, { tapes, ...(await p50(listUrl, listHeaders)) });
      }
    }
    console.log(`\n${'endpoint'.padEnd(40)} ${'rows'.padStart(8)} ${'p50 ms'.padStart(7)} ${'req/s'.padStart(8)} errors`);
    for (const [name, rows] of measured) {
      for (const r of rows)
        console.log(`${name.padEnd(40)} ${String(r.tapes).padStart(8)} ${String(r.p50).padStart(7)} ${r.rps.toFixed(0).padStart(8)} ${r.errors}`);
    }
    console.log('');
    for (const [name, [small, large]] of measured) {
      // autocannon's latencies are whole milliseconds: a sub-millisecond p50 counts as 1 ms.
      const ratio = Math.max(1, large!.p50) / Math.max(1, small!.p50);
      console.log(`${name}: p50 at ${largest} / p50 at 1000: ${ratio.toFixed(2)} (goal ≤ 1.20) ${ratio <= 1.2 ? 'met' : 'MISSED'}`);
    }
  } finally {
    server.child.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
