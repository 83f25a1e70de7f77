// `npm run bench:api`: in one run, one after the other, load a bare Express 5 hello-world server and
// the service with autocannon (50 connections, BENCH_SECONDS each, default 10) and print requests
// per second, p99 latency and the ratio to bare Express for the status, tape and create endpoints.
// Then the cost of metrics: the same endpoints on two service processes, one without METRICS_PORT
// and one with it and scraped every second as Prometheus would (more often than its usual 15 s),
// loaded in the order off, on, on, off (half BENCH_SECONDS each) so drift of the machine during the
// run weighs on both alike; prints the throughput ratio on/off (goal: metrics cost under 5 %).
// Each server runs in its own process, so the load generator never shares their event loop.
// The service runs on a fresh SQLite file, and also on PostgreSQL when BENCH_DATABASE_URL names one
// (both tables printed, each beside the same bare Express figure). The peak RSS of the service
// process under load is printed with each table (goal: at most 250 MB).
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
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
  const services: BenchService[] = [];
  const databases = [{ label: 'SQLite', url: `sqlite:${join(dir, 'service.sqlite')}` }];
  if (process.env.BENCH_DATABASE_URL) databases.push({ label: 'PostgreSQL', url: process.env.BENCH_DATABASE_URL });
  try {
    for (const database of databases) {
      const service = await startBenchService(dir, 'service', { DATABASE_URL: database.url });
      services.push(service);
      const rss = watchPeakRss(service.child.pid!);
      const results: Measurement[] = [];
      for (const endpoint of endpointsOf(service)) results.push(await load(endpoint.name, endpoint.options));
      const peakMb = rss.stop() / 1024;
      await stop(service.child);
      printRatios(database.label, baseline, results, peakMb);
    }
    await metricsCost(dir, services);
  } finally {
    for (const service of services) await stop(service.child);
    rmSync(dir, { recursive: true, force: true });
  }
}

const GOALS: Record<string, number> = {
  'GET /verifications/{id}': 0.5,
  'GET /verifications/{id}/tape': 0.4,
  'POST /verifications (synthetic creator)': 0.2,
};

function printRatios(database: string, baseline: Measurement, results: Measurement[], peakRssMb: number): void {
  // The latency goal is relative too: at most twice bare Express's p99 in the same run.
  const p99Goal = 2 * baseline.p99;
  console.log(`\nThe service on ${database}`);
  console.log(`${'endpoint'.padEnd(42)} ${'req/s'.padStart(9)} ${'p99 ms'.padStart(7)} ${'ratio'.padStart(6)}  goal             errors`);
  console.log(`${baseline.name.padEnd(42)} ${baseline.rps.toFixed(0).padStart(9)} ${String(baseline.p99).padStart(7)} ${'1.00'.padStart(6)}`);
  for (const r of results) {
    const ratio = r.rps / baseline.rps;
    const goal = GOALS[r.name]!;
    const verdict = ratio >= goal && r.p99 <= p99Goal ? 'met' : 'MISSED';
    console.log(
      `${r.name.padEnd(42)} ${r.rps.toFixed(0).padStart(9)} ${String(r.p99).padStart(7)} ${ratio.toFixed(2).padStart(6)}  ≥${goal.toFixed(2)} p99≤${String(p99Goal).padEnd(4)} ${verdict.padEnd(6)} ${r.errors}`,
    );
  }
  console.log(`peak RSS of the service process under this load: ${peakRssMb.toFixed(0)} MB (goal ≤ 250 MB) ${peakRssMb <= 250 ? 'met' : 'MISSED'}`);
}

/** Samples a process's resident set size (Linux /proc) every 100 ms; stop() returns the largest, in KiB. */
function watchPeakRss(pid: number): { stop(): number } {
  let peak = 0;
  const sample = () => {
    try {
      const kib = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
      peak = Math.max(peak, kib);
    } catch {
      // The process has exited, or this is not Linux: no figure rather than a wrong one.
    }
  };
  sample();
  const timer = setInterval(sample, 100);
  return {
    stop() {
      clearInterval(timer);
      sample();
      return peak;
    },
  };
}

interface BenchService {
  child: ChildProcess;
  base: string;
  headers: Record<string, string>;
  verificationId: string;
  metricsUrl: string | null;
}

/** A service process with a lender whose key the rate limiter never refuses, and one completed verification. */
async function startBenchService(dir: string, name: string, extra: Record<string, string>): Promise<BenchService> {
  const port = await freePort();
  const env = {
    PORT: String(port),
    HOST: '127.0.0.1',
    DATABASE_URL: `sqlite:${join(dir, `${name}.sqlite`)}`,
    SERVICE_MODE: 'sandbox',
    LOG_LEVEL: 'warn',
    ...extra,
  };
  const child = run(['--import', 'tsx', 'src/server.ts'], env);
  await waitReady(`http://127.0.0.1:${port}/readyz`, child);
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
  const { verification_id: verificationId } = (await created.json()) as { verification_id: string };
  const metricsUrl = extra.METRICS_PORT ? `http://127.0.0.1:${extra.METRICS_PORT}/metrics` : null;
  return { child, base, headers, verificationId, metricsUrl };
}

function endpointsOf(service: BenchService): Array<{ name: string; options: autocannon.Options }> {
  const { base, headers, verificationId: id } = service;
  return [
    { name: 'GET /verifications/{id}', options: { url: `${base}/verifications/${id}`, headers } },
    { name: 'GET /verifications/{id}/tape', options: { url: `${base}/verifications/${id}/tape`, headers } },
    {
      name: 'POST /verifications (synthetic creator)',
      options: {
        url: `${base}/verifications`,
        method: 'POST',
        headers,
        body: JSON.stringify({ obligor_reference: 'demo_prime_multi', creator_platforms: ['youtube', 'stripe'] }),
        // A fresh Idempotency-Key per request, or every request after the first would be a replay.
        requests: [{ setupRequest: (request: autocannon.Request) => ({ ...request, headers: { ...headers, 'idempotency-key': randomUUID() } }) }],
      },
    },
  ];
}

/** Loads one service while, if it serves metrics, scraping them every second as Prometheus would. */
async function loadScraped(service: BenchService, name: string, options: autocannon.Options, duration: number): Promise<Measurement> {
  let scrapes = 0;
  const scraper = service.metricsUrl
    ? setInterval(() => {
        void fetch(service.metricsUrl!, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })
          .then(async (response) => {
            await response.text();
            if (response.ok) scrapes++;
          })
          .catch(() => undefined);
      }, 1000)
    : undefined;
  let measurement: Measurement;
  try {
    measurement = await load(name, { ...options, duration });
  } finally {
    clearInterval(scraper);
  }
  // Metrics measured but never served would make "on" look cheaper than it is.
  if (service.metricsUrl && scrapes === 0) throw new Error('the metrics endpoint was never scraped successfully');
  return measurement;
}

const METRICS_TOKEN = 'bench-metrics-token-0123456789';

async function metricsCost(dir: string, services: BenchService[]): Promise<void> {
  const off = await startBenchService(dir, 'metrics-off', {});
  services.push(off);
  const on = await startBenchService(dir, 'metrics-on', { METRICS_PORT: String(await freePort()), METRICS_TOKEN });
  services.push(on);
  const half = Math.max(3, Math.round(seconds / 2));
  console.log(`\nCost of metrics: each endpoint loaded off, on, on, off (${half} s each), metrics scraped every second while on`);
  console.log(
    `${'endpoint'.padEnd(42)} ${'off req/s'.padStart(10)} ${'on req/s'.padStart(9)} ${'off p99'.padStart(8)} ${'on p99'.padStart(7)} ${'on/off'.padStart(7)}  goal    errors`,
  );
  const offEndpoints = endpointsOf(off);
  const onEndpoints = endpointsOf(on);
  for (let i = 0; i < offEndpoints.length; i++) {
    const name = offEndpoints[i]!.name;
    const a1 = await loadScraped(off, name, offEndpoints[i]!.options, half);
    const b1 = await loadScraped(on, name, onEndpoints[i]!.options, half);
    const b2 = await loadScraped(on, name, onEndpoints[i]!.options, half);
    const a2 = await loadScraped(off, name, offEndpoints[i]!.options, half);
    const offRps = (a1.rps + a2.rps) / 2;
    const onRps = (b1.rps + b2.rps) / 2;
    const ratio = onRps / offRps;
    const verdict = ratio >= 0.95 ? 'met' : 'MISSED';
    console.log(
      `${name.padEnd(42)} ${offRps.toFixed(0).padStart(10)} ${onRps.toFixed(0).padStart(9)} ${String(Math.max(a1.p99, a2.p99)).padStart(8)} ${String(Math.max(b1.p99, b2.p99)).padStart(7)} ${ratio.toFixed(3).padStart(7)}  ≥0.95 ${verdict.padEnd(6)} ${a1.errors + a2.errors + b1.errors + b2.errors}`,
    );
  }
}

await main();
