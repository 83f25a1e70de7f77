// `npm run bench:webhooks`: a server process (as `npm start` runs it) delivers to a local HTTPS
// receiver; prints deliveries per second and the time from each state change (the event's
// occurred_at) to its first delivery attempt, p50 and p99. BENCH_ENDPOINTS endpoints (default 10)
// each subscribe to every event; BENCH_VERIFICATIONS synthetic creators (default 300) complete at
// creation, so each creation fans out to every endpoint. BENCH_DATABASE_URL picks the database.
// BENCH_ROUNDS rounds (default 3), each with a new server process, receiver, lender and endpoints
// (and a new SQLite file), print their figures and the median of each: the machine's speed moves a
// single round by a quarter either way.
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeTestCertificates, TestReceiver, type TestCertificates } from '../test/support/test-receiver.ts';
import { runAdmin } from '../src/admin/run-admin.ts';
import { cpuMicros, startServerProcess, stopProcess } from '../test/support/server-process.ts';

const endpoints = Number(process.env.BENCH_ENDPOINTS ?? 10);
const verifications = Number(process.env.BENCH_VERIFICATIONS ?? 300);

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

interface Round {
  creationS: number;
  spanS: number;
  rate: number;
  p50: number;
  p99: number;
  cpuPerDeliveryUs: number;
  connections: number;
}

async function oneRound(certificates: TestCertificates): Promise<Round> {
  const receiver = new TestReceiver(certificates);
  const receiverUrl = await receiver.listen();
  const dir = mkdtempSync(join(tmpdir(), 'civ-bench-webhooks-'));
  const env = {
    DATABASE_URL: process.env.BENCH_DATABASE_URL ?? `sqlite:${join(dir, 'bench.sqlite')}`,
    LOG_LEVEL: 'error',
    WEBHOOK_ALLOW_PRIVATE_TARGETS: '1',
    NODE_EXTRA_CA_CERTS: certificates.caFile,
  };
  let server: ChildProcess | undefined;
  try {
    const service = await startServerProcess(env);
    server = service.child;
    const { base } = service;
    const lender = await runAdmin(env, ['lender', 'create', '--name', 'Webhook Benchmark']);
    const key = await runAdmin(env, ['key', 'create', '--lender', lender.id, '--role', 'lender']);
    await runAdmin(env, ['key', 'limit', '--key-id', key.id, '--rate-limit', '1000000', '--burst', '1000000']);
    const headers = { authorization: `Bearer ${key.api_key}`, 'content-type': 'application/json' };
    for (let i = 0; i < endpoints; i++) {
      const response = await fetch(`${base}/api/v1/webhooks`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ url: `${receiverUrl}/endpoint-${i}`, events: ['verification.completed'] }),
      });
      if (response.status !== 201) throw new Error(`webhook registration: ${response.status} ${await response.text()}`);
    }
    const expected = endpoints * verifications;
    const cpuBefore = cpuMicros(server.pid!);
    const started = Date.now();
    // Ten clients create verifications side by side, as lenders would.
    let next = 0;
    await Promise.all(
      Array.from({ length: 10 }, async () => {
        while (next++ < verifications) {
          const response = await fetch(`${base}/api/v1/verifications`, {
            method: 'POST',
            headers: { ...headers, 'idempotency-key': randomUUID() },
            body: JSON.stringify({ obligor_reference: 'demo_prime_multi', creator_platforms: ['youtube', 'stripe'] }),
          });
          if (response.status !== 201) throw new Error(`create: ${response.status}`);
          await response.arrayBuffer();
        }
      }),
    );
    const created = Date.now();
    while (receiver.received.length < expected) {
      if (Date.now() - created > 120_000) throw new Error(`only ${receiver.received.length} of ${expected} deliveries arrived`);
      await new Promise((r) => setTimeout(r, 20));
    }
    // Steadier than a rate on a shared machine: the server's CPU for the creations and their deliveries.
    const cpuPerDeliveryUs = (cpuMicros(server.pid!) - cpuBefore) / expected;
    const first = Math.min(...receiver.received.map((r) => r.receivedAt));
    const last = Math.max(...receiver.received.map((r) => r.receivedAt));
    const latencies = receiver.received
      .map((r) => r.receivedAt - Date.parse((JSON.parse(r.rawBody.toString()) as { occurred_at: string }).occurred_at))
      .sort((a, b) => a - b);
    return {
      creationS: (created - started) / 1000,
      spanS: (last - first) / 1000,
      rate: expected / ((last - first) / 1000),
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
      cpuPerDeliveryUs,
      connections: receiver.connectionsOpened,
    };
  } finally {
    await stopProcess(server);
    await receiver.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
  const database = (process.env.BENCH_DATABASE_URL ?? 'sqlite').split(':')[0];
  console.log(
    `webhook benchmark: ${verifications} completed verifications x ${endpoints} endpoints = ${endpoints * verifications} deliveries per round, ${rounds} rounds, database ${database}, Node ${process.version}`,
  );
  const certificates = makeTestCertificates();
  const results: Round[] = [];
  for (let round = 1; round <= rounds; round++) {
    const r = await oneRound(certificates);
    results.push(r);
    console.log(
      `  round ${round}: creation ${r.creationS.toFixed(1)} s, deliveries spanned ${r.spanS.toFixed(1)} s, ${r.rate.toFixed(0)} deliveries/s, state change -> first attempt p50 ${r.p50} ms, p99 ${r.p99} ms, server CPU ${r.cpuPerDeliveryUs.toFixed(0)} µs per delivery (creation included), ${r.connections} TLS connections`,
    );
  }
  const median = (pick: (r: Round) => number) =>
    percentile(
      results.map(pick).sort((a, b) => a - b),
      50,
    );
  const rate = median((r) => r.rate);
  const p99 = median((r) => r.p99);
  console.log(`median of ${rounds} rounds:`);
  console.log(
    `  deliveries per second:           ${rate.toFixed(0)}   (goal >= 1,500: ${rate >= 1500 ? 'met' : 'MISSED'}; bounded by how fast the creations are made when deliveries span as long as creation)`,
  );
  console.log(`  state change -> first attempt:   p50 ${median((r) => r.p50)} ms, p99 ${p99} ms   (goal p99 <= 100 ms: ${p99 <= 100 ? 'met' : 'MISSED'})`);
  console.log(`  server CPU per delivery:         ${median((r) => r.cpuPerDeliveryUs).toFixed(0)} µs, its creation's share included`);
}

await main();
