// `npm run bench:api`: in one run, one after the other, load a bare Express 5 hello-world server and
// the service with autocannon (50 connections, BENCH_SECONDS each, default 10) and print requests
// per second, p99 latency and the ratio to bare Express for the status, tape and create endpoints.
// Beside it, the same hello-world on the kind of HTTP server the service makes (http-server.ts), and
// the service's ratios to that, and bare Express answering a request shaped as a creation (its JSON
// parsed, an answer of a creation's size), a creation's floor on this stack.
// Then the cost of metrics: the same endpoints on two service processes, one without METRICS_PORT
// and one with it and scraped every second as Prometheus would (more often than its usual 15 s),
// both loaded at the same time (half the connections each, ten rounds, medians) so whatever else
// the machine does weighs on both alike, both servers pinned to one CPU and the load generator to the
// other; prints the throughput ratio on/off (goal: metrics cost under 5 %) with the spread of the
// rounds, each server's CPU time per request, and control rows of two servers without metrics (the
// method's own spread). `npm run profile:api -- status --metrics` measures the same cost another way:
// the share of the server's CPU time spent in metrics code.
// Then, measured the same way, the cost of the request log: the tables run the service at
// LOG_LEVEL=warn, and the default (info) writes a line per request.
// BENCH_ONLY=metrics or BENCH_ONLY=request-log runs only that part; BENCH_ONLY=tables only the tables.
// Each table ends with a creation's floor on its database (scripts/support/creation-floor.ts: bare
// Express and the raw driver writing a creation's rows in one transaction, no validation, no
// idempotency) and the service's creations as a share of it.
// Each server runs in its own process, so the load generator never shares their event loop.
// The service runs on a fresh SQLite file, and also on PostgreSQL when BENCH_DATABASE_URL names one
// (both tables printed, each beside the same bare Express figure). The peak RSS of the service
// process under load is printed with each table (goal: at most 250 MB).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { freePort } from '../test/support/free-port.ts';
import { whileScraped } from '../test/support/metrics-scraper.ts';
import { cpuMicros, serverProcessArgs } from '../test/support/server-process.ts';
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

function run(args: string[], env: Record<string, string>, cpu?: number): ChildProcess {
  const [command, argv] = cpu === undefined ? [process.execPath, args] : ['taskset', ['-c', String(cpu), process.execPath, ...args]];
  return spawn(command, argv, { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'inherit'] });
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
  total: number;
}

async function load(name: string, options: autocannon.Options): Promise<Measurement> {
  const result = await autocannon({ connections, duration: seconds, ...options });
  const errors = result.errors + result.timeouts + result.non2xx;
  return { name, rps: result.requests.average, p99: result.latency.p99, errors, total: result.requests.total };
}

const BARE_EXPRESS = `
  const express = require('express');
  const app = express();
  app.get('/hello', (req, res) => res.json({ hello: 'world' }));
  app.listen(Number(process.env.PORT), '127.0.0.1');
`;

/**
 * The same hello-world on a server made as the service makes its own (`expressRequestClasses` in
 * src/platform/http/http-server.ts, written again here for a plain node process): request and
 * response classes that become the app's prototypes, so Express changes no request's prototype. The
 * goals are ratios to the usual bare Express above; the ratios to this one are printed beside them,
 * to show what of the service's figure is that server's and what is the service's own work.
 */
const BARE_EXPRESS_OWN_CLASSES = `
  const http = require('node:http');
  const express = require('express');
  const app = express();
  app.get('/hello', (req, res) => res.json({ hello: 'world' }));
  class ExpressRequest extends http.IncomingMessage {}
  Object.setPrototypeOf(ExpressRequest.prototype, app.request);
  class ExpressResponse extends http.ServerResponse {}
  Object.setPrototypeOf(ExpressResponse.prototype, app.response);
  app.request = ExpressRequest.prototype;
  app.response = ExpressResponse.prototype;
  http.createServer({ IncomingMessage: ExpressRequest, ServerResponse: ExpressResponse }, app).listen(Number(process.env.PORT), '127.0.0.1');
`;

/**
 * What bare Express spends on a request shaped as a creation, with nothing behind it: the same
 * headers and JSON body in, parsed, and an answer of a creation's size out, with its Location. A
 * creation's floor on this stack before any of the service's own work; docs/performance.md reads it
 * beside the creation's SQLite time (`profile:api -- create --sqlite-statements`).
 */
const BARE_EXPRESS_POST = `
  const express = require('express');
  const app = express();
  app.use(express.json());
  const answer = ${JSON.stringify({
    verification_id: 'vrf_0000000000000000000000',
    status: 'completed',
    obligor_reference: 'demo_prime_multi',
    creator_platforms: ['youtube', 'stripe'],
    lender_name: 'Benchmark Lender',
    product_type: 'rbf',
    consent_url: '',
    expires_at: '2026-12-04T16:56:48.267Z',
    created_at: '2026-11-27T16:56:48.267Z',
    updated_at: '2026-11-27T16:56:48.267Z',
    completed_at: '2026-11-27T16:56:48.267Z',
    failure_reason: null,
    platform_connections: [
      { platform: 'youtube', status: 'connected' },
      { platform: 'stripe', status: 'connected' },
    ],
    schema_version: '2.0.0',
  })};
  app.get('/hello', (req, res) => res.json({ hello: 'world' }));
  app.post('/verifications', (req, res) => {
    res.status(201).location('/verifications/' + answer.verification_id).json({ ...answer, obligor_reference: req.body.obligor_reference });
  });
  app.listen(Number(process.env.PORT), '127.0.0.1');
`;

async function loadBare(
  name: string,
  source: string,
  options: (base: string) => autocannon.Options = (base) => ({ url: `${base}/hello` }),
): Promise<Measurement> {
  const port = await freePort();
  const bare = run(['-e', source], { PORT: String(port) });
  await waitReady(`http://127.0.0.1:${port}/hello`, bare);
  const measured = await load(name, options(`http://127.0.0.1:${port}`));
  await stop(bare);
  return measured;
}

/** A creation of the synthetic creator, each request with an Idempotency-Key of its own. */
function creationOptions(url: string, headers: Record<string, string>): autocannon.Options {
  return {
    url,
    method: 'POST',
    headers,
    body: JSON.stringify({ obligor_reference: 'demo_prime_multi', creator_platforms: ['youtube', 'stripe'] }),
    // A fresh Idempotency-Key per request, or every request after the first would be a replay.
    requests: [{ setupRequest: (request: autocannon.Request) => ({ ...request, headers: { ...headers, 'idempotency-key': randomUUID() } }) }],
  };
}

async function main(): Promise<void> {
  const only = process.env.BENCH_ONLY;
  const costs = [METRICS_COST, REQUEST_LOG_COST];
  if (only && only !== 'tables' && !costs.some((cost) => cost.name === only)) {
    throw new Error(`BENCH_ONLY is ${only}; it takes tables, ${costs.map((cost) => cost.name).join(' or ')}`);
  }
  console.log(`API benchmark: autocannon, ${connections} connections, ${seconds} s per endpoint, Node ${process.version}`);
  const baseline = await loadBare('bare Express 5 GET /hello', BARE_EXPRESS);

  const dir = mkdtempSync(join(tmpdir(), 'civ-bench-'));
  const services: BenchService[] = [];
  const databases = [{ label: 'SQLite', url: `sqlite:${join(dir, 'service.sqlite')}` }];
  if (process.env.BENCH_DATABASE_URL) databases.push({ label: 'PostgreSQL', url: process.env.BENCH_DATABASE_URL });
  try {
    // BENCH_ONLY=metrics or BENCH_ONLY=request-log: that cost alone.
    if (!only || only === 'tables') {
      const ownClasses = await loadBare("the same, on the service's kind of server", BARE_EXPRESS_OWN_CLASSES);
      const barePost = await loadBare('bare Express 5 POST, a creation in and out', BARE_EXPRESS_POST, (base) =>
        creationOptions(`${base}/verifications`, { authorization: 'Bearer not-checked', 'content-type': 'application/json' }),
      );
      for (const database of databases) {
        const service = await startBenchService(dir, 'service', { DATABASE_URL: database.url });
        services.push(service);
        const rss = watchPeakRss(service.child.pid!);
        const results: Measurement[] = [];
        for (const endpoint of endpointsOf(service)) results.push(await load(endpoint.name, endpoint.options));
        const peakMb = rss.stop() / 1024;
        await stop(service.child);
        const floor = await loadFloor(database.url, service.verificationId);
        printRatios(database.label, baseline, ownClasses, barePost, results, peakMb);
        printFloor(
          results.find((r) => r.name.startsWith('POST'))!,
          floor,
        );
      }
    }
    for (const cost of costs) if (!only || only === cost.name) await costOf(dir, services, cost);
  } finally {
    for (const service of services) await stop(service.child);
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Loads the creation floor (scripts/support/creation-floor.ts) on the database the service just left. */
async function loadFloor(databaseUrl: string, sampleVerification: string): Promise<Measurement> {
  const port = await freePort();
  const floor = run(['--import', 'tsx', join(root, 'scripts/support/creation-floor.ts')], {
    PORT: String(port),
    DATABASE_URL: databaseUrl,
    SAMPLE_VERIFICATION: sampleVerification,
  });
  await waitReady(`http://127.0.0.1:${port}/hello`, floor);
  const measured = await load(
    "a creation's rows by hand (the floor)",
    creationOptions(`http://127.0.0.1:${port}/verifications`, { 'content-type': 'application/json' }),
  );
  await stop(floor);
  return measured;
}

function printFloor(creation: Measurement, floor: Measurement): void {
  console.log(`${floor.name.padEnd(42)} ${floor.rps.toFixed(0).padStart(9)} ${String(floor.p99).padStart(7)}${' '.repeat(31)}${floor.errors}`);
  console.log(`  the service's creations as a share of it: ${(creation.rps / floor.rps).toFixed(2)}`);
}

/**
 * The reads' goals, ratios to bare Express. A creation has none here: it is judged against its floor
 * (below the table), whose share must not fall by more than a quarter from issue 43's base commit.
 */
const GOALS: Record<string, number | undefined> = {
  'GET /verifications/{id}': 0.5,
  'GET /verifications/{id}/tape': 0.4,
};

function printRatios(database: string, baseline: Measurement, ownClasses: Measurement, barePost: Measurement, results: Measurement[], peakRssMb: number): void {
  // The latency goal is relative too: at most twice bare Express's p99 in the same run.
  const p99Goal = 2 * baseline.p99;
  console.log(`\nThe service on ${database}`);
  console.log(`${'endpoint'.padEnd(42)} ${'req/s'.padStart(9)} ${'p99 ms'.padStart(7)} ${'ratio'.padStart(6)}  goal             errors`);
  console.log(`${baseline.name.padEnd(42)} ${baseline.rps.toFixed(0).padStart(9)} ${String(baseline.p99).padStart(7)} ${'1.00'.padStart(6)}`);
  for (const r of results) {
    const ratio = r.rps / baseline.rps;
    const goal = GOALS[r.name];
    const verdict = goal === undefined ? '' : ratio >= goal && r.p99 <= p99Goal ? 'met' : 'MISSED';
    const goalText = goal === undefined ? 'its floor, below' : `≥${goal.toFixed(2)} p99≤${String(p99Goal).padEnd(4)}`;
    console.log(
      `${r.name.padEnd(42)} ${r.rps.toFixed(0).padStart(9)} ${String(r.p99).padStart(7)} ${ratio.toFixed(2).padStart(6)}  ${goalText.padEnd(16)} ${verdict.padEnd(6)} ${r.errors}`,
    );
  }
  console.log(
    `${ownClasses.name.padEnd(42)} ${ownClasses.rps.toFixed(0).padStart(9)} ${String(ownClasses.p99).padStart(7)} ${(ownClasses.rps / baseline.rps).toFixed(2).padStart(6)}${' '.repeat(24)}${ownClasses.errors}`,
  );
  console.log(`  the service's ratios to it: ${results.map((r) => `${r.name} ${(r.rps / ownClasses.rps).toFixed(2)}`).join(', ')}`);
  console.log(
    `${barePost.name.padEnd(42)} ${barePost.rps.toFixed(0).padStart(9)} ${String(barePost.p99).padStart(7)} ${(barePost.rps / baseline.rps).toFixed(2).padStart(6)}${' '.repeat(24)}${barePost.errors}`,
  );
  console.log('  (a creation with nothing behind it: the most a creation can be on this stack, before its own work)');
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
async function startBenchService(dir: string, name: string, extra: Record<string, string>, cpu?: number): Promise<BenchService> {
  const port = await freePort();
  const env = {
    PORT: String(port),
    HOST: '127.0.0.1',
    DATABASE_URL: `sqlite:${join(dir, `${name}.sqlite`)}`,
    SERVICE_MODE: 'sandbox',
    LOG_LEVEL: 'warn',
    ...extra,
  };
  const child = run(await serverProcessArgs(), env, cpu);
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
    { name: 'POST /verifications (synthetic creator)', options: creationOptions(`${base}/verifications`, headers) },
  ];
}

/** Loads one service while, if it serves metrics, scraping them every second as Prometheus would. */
function loadScraped(service: BenchService, name: string, options: autocannon.Options, duration: number): Promise<Measurement> {
  return whileScraped(service.metricsUrl, METRICS_TOKEN, () => load(name, { ...options, duration }));
}

const METRICS_TOKEN = 'bench-metrics-token-0123456789';

/** One slice of load on one service, with the requests it served and the CPU its process spent on them. */
async function slice(
  service: BenchService,
  name: string,
  options: autocannon.Options,
  duration: number,
): Promise<Measurement & { requests: number; cpuMicros: number }> {
  const before = cpuMicros(service.child.pid!);
  const measurement = await loadScraped(service, name, options, duration);
  return { ...measurement, requests: measurement.total, cpuMicros: cpuMicros(service.child.pid!) - before };
}

let selfPinned: boolean | undefined;
/**
 * Pins this process (the load generator) to CPU `cpu`, when the machine has two and taskset exists;
 * once, since a pinned process sees one CPU (availableParallelism).
 */
function pinSelf(cpu: number): boolean {
  selfPinned ??= availableParallelism() >= 2 && spawnSync('taskset', ['-a', '-cp', String(cpu), String(process.pid)]).status === 0;
  return selfPinned;
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};

/** One feature's cost: the same service without it and with it, loaded side by side. */
interface Cost {
  /** What the first line of the section says. */
  title: string;
  name: string;
  /** The environment that turns the feature on. */
  on(): Promise<Record<string, string>>;
  /** How many of the endpoints (in endpointsOf's order) are compared. */
  endpoints: number;
  /** Whether the metrics goal (cost under 5 %) applies. */
  goal: boolean;
  /** Whether control rows (two servers without the feature) follow. */
  control: boolean;
}

const METRICS_COST: Cost = {
  title: 'Cost of metrics: two servers, one without metrics and one with them (scraped every second)',
  name: 'metrics',
  on: async () => ({ METRICS_PORT: String(await freePort()), METRICS_TOKEN }),
  endpoints: 3,
  goal: true,
  control: true,
};

// The tables above run the service at LOG_LEVEL=warn, without a line per request; a deployment at
// the default level (info) writes one, and this is what that costs.
const REQUEST_LOG_COST: Cost = {
  title: 'Cost of the request log: two servers, one at LOG_LEVEL=warn as above and one at the default info (a line per request, to /dev/null)',
  name: 'request-log',
  on: async () => ({ LOG_LEVEL: 'info' }),
  endpoints: 2,
  goal: false,
  control: false,
};

async function costOf(dir: string, services: BenchService[], cost: Cost): Promise<void> {
  // The servers on CPU 1 and the load generator on CPU 0, so that a server never shares its core
  // with the load generator in one slice and not in the next.
  const pinned = pinSelf(0);
  const serverCpu = pinned ? 1 : undefined;
  const off = await startBenchService(dir, `${cost.name}-off`, {}, serverCpu);
  services.push(off);
  const on = await startBenchService(dir, `${cost.name}-on`, await cost.on(), serverCpu);
  services.push(on);
  const control = cost.control ? await startBenchService(dir, `${cost.name}-off-control`, {}, serverCpu) : null;
  if (control) services.push(control);
  try {
    await compareSideBySide(cost, pinned, off, on, control);
  } finally {
    // Idle servers still poll for jobs and deliveries: none may run beside the next section's.
    for (const service of [off, on, control]) if (service) await stop(service.child);
  }
}

async function compareSideBySide(cost: Cost, pinned: boolean, off: BenchService, on: BenchService, control: BenchService | null): Promise<void> {
  const rounds = 10;
  console.log(
    `\n${cost.title}, loaded at the same time (${connections / 2} connections each) for ${rounds} rounds of ${seconds} s after a warm-up, the first started alternating by round${pinned ? '; both servers on CPU 1, the load generator on CPU 0' : ''}`,
  );
  console.log(
    "on/off: the median over rounds of the two servers' throughput ratio in that round, with the middle half of the rounds' ratios beside it: two processes of the same program differ by a few per cent (the control rows), and the machine's speed by more from one second to the next, so only servers loaded at the same time are compared",
  );
  console.log("CPU per request: each server process's user + system time (all its threads) over the requests it served");
  console.log(
    `${'endpoint'.padEnd(42)} ${'off req/s'.padStart(10)} ${'on req/s'.padStart(9)} ${'on/off'.padStart(7)} ${'middle half'.padStart(13)}  goal         ${'off µs/req'.padStart(10)} ${'on µs/req'.padStart(9)} ${'on/off'.padStart(7)}  errors`,
  );
  const compare = async (name: string, a: BenchService, b: BenchService, index: number, goal: boolean) => {
    const loadOf = (service: BenchService, duration: number) =>
      slice(service, name, { ...endpointsOf(service)[index]!.options, connections: connections / 2 }, duration);
    // A server's first seconds on an endpoint are its JIT compiling the path, not measured: a server
    // loaded for the first time measured up to 8 % slower than its twin.
    await Promise.all([loadOf(a, 3), loadOf(b, 3)]);
    const rpsRatios: number[] = [];
    const cpuRatios: number[] = [];
    const figures = { aRps: [] as number[], bRps: [] as number[], aCpu: [] as number[], bCpu: [] as number[] };
    let errors = 0;
    for (let round = 0; round < rounds; round++) {
      // Which load starts first alternates by round: the first started served up to 12 % more in the
      // control when it was always the same one.
      const [aSlice, bSlice] =
        round % 2 === 0
          ? await Promise.all([loadOf(a, seconds), loadOf(b, seconds)])
          : await Promise.all([loadOf(b, seconds), loadOf(a, seconds)]).then(([second, first]) => [first, second] as const);
      const aCpu = aSlice.cpuMicros / aSlice.requests;
      const bCpu = bSlice.cpuMicros / bSlice.requests;
      figures.aRps.push(aSlice.rps);
      figures.bRps.push(bSlice.rps);
      figures.aCpu.push(aCpu);
      figures.bCpu.push(bCpu);
      rpsRatios.push(bSlice.rps / aSlice.rps);
      cpuRatios.push(bCpu / aCpu);
      errors += aSlice.errors + bSlice.errors;
    }
    const ratio = median(rpsRatios);
    const sorted = [...rpsRatios].sort((x, y) => x - y);
    const middleHalf = `${sorted[Math.floor(rounds / 4)]!.toFixed(3)}-${sorted[Math.ceil((3 * rounds) / 4) - 1]!.toFixed(3)}`;
    const verdict = goal ? (ratio >= 0.95 ? 'met' : 'MISSED') : '';
    console.log(
      `${name.padEnd(42)} ${median(figures.aRps).toFixed(0).padStart(10)} ${median(figures.bRps).toFixed(0).padStart(9)} ${ratio.toFixed(3).padStart(7)} ${middleHalf.padStart(13)}  ${goal ? '≥0.95' : '     '} ${verdict.padEnd(6)} ${median(figures.aCpu).toFixed(0).padStart(10)} ${median(figures.bCpu).toFixed(0).padStart(9)} ${median(cpuRatios).toFixed(3).padStart(7)}  ${errors}`,
    );
  };
  const names = endpointsOf(off).map((endpoint) => endpoint.name);
  for (let i = 0; i < cost.endpoints; i++) await compare(names[i]!, off, on, i, cost.goal);
  if (!control) return;
  console.log(`control: two servers without ${cost.name}, measured the same way (how far apart two identical servers measure)`);
  for (let i = 0; i < 2; i++) await compare(names[i]!, off, control, i, false);
}

await main();
