// `npm run bench:scale`: p50 and p99 latencies with 10^3 verifications, then with 10^6
// (BENCH_SCALE_TAPES), measured in one run against one server process, and the ratio of the p50s
// (goal: within 1.2x). The rows are bulk-inserted as the service would have written them: the
// verifications of 20 lenders, a tape for each completed one, an event for each with its webhook
// body, a delivery of it to its lender's endpoint with one attempt, and the peer cohort counted the
// way the service counts a completed tape (BenchmarksRepository). Measured, for one of the lenders:
// GET /verifications/{id} and its tape, each request a random completed verification of the whole
// table; the endpoint's delivery log (newest page and a page deep in it); GET /verifications (the
// newest page, a deep page, each filter); and the peer-benchmark endpoint, which reads only the
// per-bucket aggregates. None of these may cost more as the tables grow.
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

const LENDERS = 20;
/** Row n belongs to lender n % 20; lender 0's rows are the ones read. */
const lenderOf = (n: number) => `lnd_scale${n % LENDERS}`;
const endpointOf = (n: number) => `whk_scale${n % LENDERS}`;
/** Four states within each lender (n % 20), so the status filter has others to skip; the cohort counts members, not states. */
const statusOf = (n: number) => STATES[Math.floor(n / LENDERS) % STATES.length]!;
/** Delivery ids are UUIDs (the API's DeliveryId); n in the last group keeps them unique and readable. */
const deliveryIdOf = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
/** Lender 0's completed verifications are n = 80 j (status index 0 every fourth block of 20). */
const completedOfLender0 = (below: number) => Math.floor((below - 1) / (LENDERS * STATES.length)) + 1;

/** The 20 lenders and an endpoint of each, subscribed to every event. */
async function prepare(databaseUrl: string): Promise<void> {
  const db = openDatabase(databaseUrl);
  const lenders = Array.from({ length: LENDERS }, (_, i) => i);
  await db
    .knex('lender_accounts')
    .insert(
      lenders.map((i) => ({
        id: lenderOf(i),
        name: lenderOf(i),
        plan: 'production',
        jurisdiction: 'other',
        ip_allowlist: '[]',
        created_at: 'x',
        updated_at: 'x',
      })),
    )
    .onConflict('id')
    .ignore();
  // Never sent: every delivery below has succeeded.
  await db.knex('webhook_endpoints').insert(
    lenders.map((i) => ({
      id: endpointOf(i),
      lender_id: lenderOf(i),
      url: 'https://receiver.example/hook',
      events: '["verification.completed"]',
      secret_ciphertext: 'unused',
      created_at: createdAt(0),
    })),
  );
  await db.close();
}

/**
 * Adds rows `from` to `from + count`: each a verification (rbf) with an event, its webhook body and
 * a delivered delivery with its attempt; the completed ones with a tape (`tapeOf`) and as members
 * of the peer cohort, spread over the buckets.
 */
async function fill(databaseUrl: string, from: number, count: number, tapeOf: (verificationId: string) => string): Promise<void> {
  const db = openDatabase(databaseUrl);
  const repository = new BenchmarksRepository(db.knex);
  for (let start = from; start < from + count; start += 5000) {
    const ids = Array.from({ length: Math.min(5000, from + count - start) }, (_, i) => start + i);
    await db.knex.transaction(async (trx) => {
      for (let i = 0; i < ids.length; i += 400) {
        const rows = ids.slice(i, i + 400);
        const completed = rows.filter((n) => statusOf(n) === 'completed');
        const event = (n: number) =>
          JSON.stringify({ id: `evt_scale${n}`, type: 'verification.completed', occurred_at: createdAt(n), data: { verification_id: `vrf_scale${n}` } });
        await trx('verifications').insert(
          rows.map((n) => ({
            id: `vrf_scale${n}`,
            lender_id: lenderOf(n),
            obligor_reference: `scale-${n}`,
            creator_platforms: '["youtube"]',
            lender_name: 'Scale',
            product_type: 'rbf',
            status: statusOf(n),
            consent_token_hash: `scale${n}`,
            consent_url: 'x',
            expires_at: 'x',
            created_at: createdAt(n),
            updated_at: createdAt(n),
            completed_at: statusOf(n) === 'completed' ? createdAt(n) : null,
            tape_schema_version: statusOf(n) === 'completed' ? '2.0.0' : null,
          })),
        );
        if (completed.length > 0) {
          await trx('tapes').insert(completed.map((n) => ({ verification_id: `vrf_scale${n}`, tape: tapeOf(`vrf_scale${n}`), generated_at: createdAt(n) })));
        }
        await trx('events').insert(
          rows.map((n) => ({
            id: `evt_scale${n}`,
            lender_id: lenderOf(n),
            verification_id: `vrf_scale${n}`,
            name: 'verification.completed',
            payload: event(n),
            occurred_at: createdAt(n),
          })),
        );
        await trx('webhook_events').insert(rows.map((n) => ({ event_id: `evt_scale${n}`, lender_id: lenderOf(n), body: event(n) })));
        await trx('webhook_deliveries').insert(
          rows.map((n) => ({
            id: deliveryIdOf(n),
            webhook_id: endpointOf(n),
            lender_id: lenderOf(n),
            event_id: `evt_scale${n}`,
            event_name: 'verification.completed',
            verification_id: `vrf_scale${n}`,
            event_sequence: 0,
            status: 'succeeded',
            attempts: 1,
            first_attempt_at: createdAt(n),
            created_at: createdAt(n),
          })),
        );
        await trx('webhook_delivery_attempts').insert(
          rows.map((n) => ({
            delivery_id: deliveryIdOf(n),
            attempt: 1,
            attempted_at: createdAt(n),
            status_code: 200,
            duration_ms: 12,
            error: null,
            response_snippet: 'ok',
          })),
        );
      }
    });
    const members: Member[] = ids.map((n) => ({
      verificationId: `vrf_scale${n}`,
      lenderId: lenderOf(n),
      productType: 'rbf',
      buckets: Object.fromEntries(BENCHMARK_METRICS.map((metric, m) => [metric, (n * (m + 7)) % (BUCKET_EDGES[metric].length + 1)])),
    }));
    // The service counts each tape in its own transaction, on PostgreSQL in a random shard of the
    // counters (COUNTER_SHARDS), so even the smallest cohort spans them all: counted in small batches, it does here too.
    for (const batch of chunks(members, Math.max(10, Math.ceil(count / 100)))) await repository.addMany(batch);
  }
  await db.close();
}

/** Loads `url` (or, with `pathOf`, a new path for each request) and returns its latencies. */
async function measure(
  url: string,
  headers: Record<string, string>,
  pathOf?: () => string,
): Promise<{ p50: number; p99: number; rps: number; errors: number }> {
  const requests = pathOf ? [{ setupRequest: (request: { path?: string }) => ({ ...request, path: pathOf() }) }] : undefined;
  const result = await autocannon({ url, headers, connections, duration: seconds, ...(requests ? { requests } : {}) });
  return { p50: result.latency.p50, p99: result.latency.p99, rps: result.requests.average, errors: result.errors + result.timeouts + result.non2xx };
}

/** Fails the run if a measured request does not answer 200 with what it should. */
async function probe(url: string, headers: Record<string, string>, check: (body: Record<string, unknown>) => boolean, name: string): Promise<void> {
  const response = await fetch(url, { headers });
  const body = (await response.json()) as Record<string, unknown>;
  if (response.status !== 200 || !check(body)) throw new Error(`${name}: ${response.status} ${JSON.stringify(body).slice(0, 200)}`);
}

async function main(): Promise<void> {
  console.log(`Scale benchmark: autocannon ${connections} connections, ${seconds} s per endpoint and size, Node ${process.version}`);
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
    const benchmarkUrl = `${server.base}/api/v1/benchmarks/${id}`;
    // A real tape's text, stored for every completed row under that row's id.
    const tapeText = await (await fetch(`${server.base}/api/v1/verifications/${id}/tape`, { headers })).text();
    const tapeOf = (verificationId: string) => tapeText.split(id).join(verificationId);

    await prepare(databaseUrl);
    // Lender 0's key: it sees a twentieth of the rows (n = 0, 20, 40, ...) and endpoint whk_scale0.
    const lender0Key = await runAdmin(env, ['key', 'create', '--lender', lenderOf(0), '--role', 'lender']);
    await runAdmin(env, ['key', 'limit', '--key-id', lender0Key.id, '--rate-limit', '1000000', '--burst', '1000000']);
    const lender0 = { authorization: `Bearer ${lender0Key.api_key}` };

    type Row = { rows: number; p50: number; p99: number; rps: number; errors: number };
    const measured = new Map<string, Row[]>();
    const record = (name: string, row: Row) => measured.set(name, [...(measured.get(name) ?? []), row]);
    let filled = 0;
    for (const rows of [1_000, largest]) {
      const started = Date.now();
      await fill(databaseUrl, filled, rows - filled, tapeOf);
      filled = rows;
      console.log(`filled to ${rows} verifications in ${((Date.now() - started) / 1000).toFixed(1)} s`);

      const source = ((await (await fetch(benchmarkUrl, { headers })).json()) as { cohort: { source: string; size: number } }).cohort;
      if (source.source !== 'peers') throw new Error(`expected the peer cohort, got ${JSON.stringify(source)}`);
      record('GET /benchmarks/{id}', { rows, ...(await measure(benchmarkUrl, headers)) });

      // Each request reads a random completed verification of lender 0 from the whole table, so
      // that a read costs what it costs on a cold row, not on one the cache keeps.
      const completed = completedOfLender0(rows);
      const randomCompleted = () => `vrf_scale${LENDERS * STATES.length * Math.floor(Math.random() * completed)}`;
      const verifications = `${server.base}/api/v1/verifications`;
      await probe(`${verifications}/${randomCompleted()}`, lender0, (body) => body.status === 'completed', 'GET /verifications/{id}');
      record('GET /verifications/{id}', { rows, ...(await measure(verifications, lender0, () => `/api/v1/verifications/${randomCompleted()}`)) });
      await probe(`${verifications}/${randomCompleted()}/tape`, lender0, (body) => body.schema_version === '2.0.0', 'GET /verifications/{id}/tape');
      record('GET /verifications/{id}/tape', { rows, ...(await measure(verifications, lender0, () => `/api/v1/verifications/${randomCompleted()}/tape`)) });

      const middle = Math.floor(rows / 40) * 20;
      const pages: Array<[string, string, string]> = [
        ['GET /webhooks/{id}/deliveries newest page', `/api/v1/webhooks/${endpointOf(0)}/deliveries`, '?limit=20'],
        ['GET /webhooks/{id}/deliveries deep page', `/api/v1/webhooks/${endpointOf(0)}/deliveries`, `?limit=20&starting_after=${deliveryIdOf(middle)}`],
        ['GET /verifications newest page', '/api/v1/verifications', '?limit=20'],
        ['GET /verifications deep page', '/api/v1/verifications', `?limit=20&starting_after=vrf_scale${middle}`],
        ['GET /verifications ?status', '/api/v1/verifications', '?limit=20&status=failed'],
        ['GET /verifications ?obligor_reference', '/api/v1/verifications', `?limit=20&obligor_reference=scale-${middle}`],
        ['GET /verifications ?created range', '/api/v1/verifications', `?limit=20&created_gte=${createdAt(middle - 2000)}&created_lt=${createdAt(middle)}`],
      ];
      for (const [name, path, query] of pages) {
        const url = `${server.base}${path}${query}`;
        await probe(url, lender0, (body) => Array.isArray(body.data) && body.data.length > 0, name);
        record(name, { rows, ...(await measure(url, lender0)) });
      }
    }
    console.log(`\n${'endpoint'.padEnd(44)} ${'rows'.padStart(8)} ${'p50 ms'.padStart(7)} ${'p99 ms'.padStart(7)} ${'req/s'.padStart(8)} errors`);
    for (const [name, rows] of measured) {
      for (const r of rows)
        console.log(
          `${name.padEnd(44)} ${String(r.rows).padStart(8)} ${String(r.p50).padStart(7)} ${String(r.p99).padStart(7)} ${r.rps.toFixed(0).padStart(8)} ${r.errors}`,
        );
    }
    console.log('');
    for (const [name, [small, large]] of measured) {
      // autocannon's latencies are whole milliseconds: a sub-millisecond p50 counts as 1 ms.
      const ratio = Math.max(1, large!.p50) / Math.max(1, small!.p50);
      console.log(
        `${name}: p50 at ${largest} / p50 at 1000: ${ratio.toFixed(2)} (goal ≤ 1.20) ${ratio <= 1.2 ? 'met' : 'MISSED'}; p99 ${small!.p99} → ${large!.p99} ms`,
      );
    }
  } finally {
    server.child.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
