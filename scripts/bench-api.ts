// `npm run bench:api`: in one run, one after the other, load a bare Express 5 hello-world server and
// the service with autocannon (50 connections, BENCH_SECONDS each, default 10) and print requests
// per second, p99 latency and the ratio to bare Express for the status, tape and create endpoints.
// Each server runs in its own process, so the load generator never shares their event loop.
// BENCH_DATABASE_URL picks the service's database (default: a fresh SQLite file).
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { freePort } from '../test/support/free-port.ts';
import { runAdmin } from '../src/admin/run-admin.ts';

const root = new URL('..', import.meta.url).pathname;
const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const connections = 50;

async function waitReady(url: string, child: ChildProcess): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}`);
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} never became ready`);
}

function run(args: string[], env: Record<string, string>): ChildProcess {
  return spawn(process.execPath, args, { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'inherit'] });
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  child.kill('SIGTERM');
  await once(child, 'exit');
}

interface Measurement {
  name: string;
  rps: number;
  p99: number;
  errors: number;
}

async function load(name: string, options: autocannon.Options): Promise<Measurement> {
  const result = await autocannon({ connections, duration: seconds, ...options });
  const errors = result.errors + result.timeouts + result.non2xx;
  return { name, rps: result.requests.average, p99: result.latency.p99, errors };
}

const BARE_EXPRESS = `
  const express = require('express');
  const app = express();
  app.get('/hello', (req, res) => res.json({ hello: 'world' }));
  app.listen(Number(process.env.PORT), '127.0.0.1');
`;

async function main(): Promise<void> {
  console.log(`API benchmark: autocannon, ${connections} connections, ${seconds} s per endpoint, Node ${process.version}`);

  const barePort = await freePort();
  const bare = run(['-e', BARE_EXPRESS], { PORT: String(barePort) });
  await waitReady(`http://127.0.0.1:${barePort}/hello`, bare);
  const baseline = await load('bare Express 5 GET /hello', { url: `http://127.0.0.1:${barePort}/hello` });
  await stop(bare);

  const dir = mkdtempSync(join(tmpdir(), 'civ-bench-'));
  const port = await freePort();
  const env = {
    PORT: String(port),
    HOST: '127.0.0.1',
    DATABASE_URL: process.env.BENCH_DATABASE_URL ?? `sqlite:${join(dir, 'bench.sqlite')}`,
    SERVICE_MODE: 'sandbox',
    LOG_LEVEL: 'warn',
  };
  const service = run(['--import', 'tsx', 'src/server.ts'], env);
  try {
    await waitReady(`http://127.0.0.1:${port}/readyz`, service);
    const lender = await runAdmin(env, ['lender', 'create', '--name', 'Benchmark Lender']);
    const key = await runAdmin(env, ['key', 'create', '--lender', lender.id, '--role', 'lender']);
    // The benchmark measures the service, not its rate limiter refusing it.
    await runAdmin(env, ['key', 'limit', '--key-id', key.id, '--rate-limit', '1000000', '--burst', '1000000']);
    const headers = { authorization: `Bearer ${key.api_key}`, 'content-type': 'application/json' };
    const base = `http://127.0.0.1:${port}/api/v1`;
    const created = await fetch(`${base}/verifications`, {
      method: 'POST',
      headers: { ...headers, 'idempotency-key': randomUUID() },
      body: JSON.stringify({ obligor_reference: 'demo_prime_multi', creator_platforms: ['youtube', 'stripe'] }),
    });
    const { verification_id: id } = (await created.json()) as { verification_id: string };

    const results = [
      await load('GET /verifications/{id}', { url: `${base}/verifications/${id}`, headers }),
      await load('GET /verifications/{id}/tape', { url: `${base}/verifications/${id}/tape`, headers }),
      await load('POST /verifications (synthetic creator)', {
        url: `${base}/verifications`,
        method: 'POST',
        headers,
        body: JSON.stringify({ obligor_reference: 'demo_prime_multi', creator_platforms: ['youtube', 'stripe'] }),
        // A fresh Idempotency-Key per request, or every request after the first would be a replay.
        requests: [{ setupRequest: (request: autocannon.Request) => ({ ...request, headers: { ...headers, 'idempotency-key': randomUUID() } }) }],
      }),
    ];
    const goals: Record<string, number> = {
      'GET /verifications/{id}': 0.5,
      'GET /verifications/{id}/tape': 0.4,
      'POST /verifications (synthetic creator)': 0.2,
    };
    console.log(`\n${'endpoint'.padEnd(42)} ${'req/s'.padStart(9)} ${'p99 ms'.padStart(7)} ${'ratio'.padStart(6)}  goal      errors`);
    console.log(`${baseline.name.padEnd(42)} ${baseline.rps.toFixed(0).padStart(9)} ${String(baseline.p99).padStart(7)} ${'1.00'.padStart(6)}`);
    for (const r of results) {
      const ratio = r.rps / baseline.rps;
      const goal = goals[r.name]!;
      const verdict = ratio >= goal && r.p99 <= 20 ? 'met' : 'MISSED';
      console.log(
        `${r.name.padEnd(42)} ${r.rps.toFixed(0).padStart(9)} ${String(r.p99).padStart(7)} ${ratio.toFixed(2).padStart(6)}  ≥${goal.toFixed(2)} p99≤20 ${verdict.padEnd(6)} ${r.errors}`,
      );
    }
  } finally {
    await stop(service);
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
