// `npm run bench:webhooks`: a server process (as `npm start` runs it) delivers to a local HTTPS
// receiver; prints deliveries per second and the time from each state change (the event's
// occurred_at) to its first delivery attempt, p50 and p99. BENCH_ENDPOINTS endpoints (default 10)
// each subscribe to every event; BENCH_VERIFICATIONS synthetic creators (default 300) complete at
// creation, so each creation fans out to every endpoint. BENCH_DATABASE_URL picks the database.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeTestCertificates, TestReceiver } from '../test/support/test-receiver.ts';
import { freePort } from '../test/support/free-port.ts';
import { runAdmin } from '../src/admin/run-admin.ts';
import { serverProcessArgs } from '../test/support/server-process.ts';

const root = new URL('..', import.meta.url).pathname;
const endpoints = Number(process.env.BENCH_ENDPOINTS ?? 10);
const verifications = Number(process.env.BENCH_VERIFICATIONS ?? 300);

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

async function main(): Promise<void> {
  const certificates = makeTestCertificates();
  const receiver = new TestReceiver(certificates);
  const receiverUrl = await receiver.listen();
  const dir = mkdtempSync(join(tmpdir(), 'civ-bench-webhooks-'));
  const port = await freePort();
  const env = {
    PORT: String(port),
    DATABASE_URL: process.env.BENCH_DATABASE_URL ?? `sqlite:${join(dir, 'bench.sqlite')}`,
    LOG_LEVEL: 'error',
    WEBHOOK_ALLOW_PRIVATE_TARGETS: '1',
    NODE_EXTRA_CA_CERTS: certificates.caFile,
  };
  const server: ChildProcess = spawn(process.execPath, await serverProcessArgs(), {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const base = `http://127.0.0.1:${port}`;
  try {
    for (let ready = false; !ready;) {
      ready = await fetch(`${base}/readyz`).then(
        (r) => r.ok,
        () => false,
      );
      if (!ready) await new Promise((r) => setTimeout(r, 100));
    }
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
    const first = Math.min(...receiver.received.map((r) => r.receivedAt));
    const last = Math.max(...receiver.received.map((r) => r.receivedAt));
    const latencies = receiver.received
      .map((r) => r.receivedAt - Date.parse((JSON.parse(r.rawBody.toString()) as { occurred_at: string }).occurred_at))
      .sort((a, b) => a - b);
    const rate = expected / ((last - first) / 1000);
    console.log(
      `webhook benchmark: ${verifications} completed verifications x ${endpoints} endpoints = ${expected} deliveries, database ${env.DATABASE_URL.split(':')[0]}, Node ${process.version}`,
    );
    console.log(`  creation took ${((created - started) / 1000).toFixed(1)} s; deliveries spanned ${((last - first) / 1000).toFixed(1)} s`);
    console.log(
      `  deliveries per second:           ${rate.toFixed(0)}   (goal >= 1,500: ${rate >= 1500 ? 'met' : 'MISSED'}; bounded by how fast the creations are made when deliveries span as long as creation)`,
    );
    console.log(
      `  state change -> first attempt:   p50 ${percentile(latencies, 50)} ms, p99 ${percentile(latencies, 99)} ms   (goal p99 <= 100 ms: ${percentile(latencies, 99) <= 100 ? 'met' : 'MISSED'})`,
    );
  } finally {
    server.kill('SIGTERM');
    await once(server, 'exit');
    await receiver.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
