// `npm run profile:api -- [status|tape|create]`: where one endpoint's time goes. Starts the service
// as `npm start` does, under `node --cpu-prof`, loads the endpoint with autocannon (50 connections,
// PROFILE_SECONDS, default 10), stops the server so the profile is written, and prints the main
// thread's time by package and by function (self time), and the inclusive time of the frames that
// take the most. The .cpuprofile file is kept (its path is printed) for a flame graph in Chrome's
// DevTools or speedscope. PROFILE_DATABASE_URL picks the database (default: a fresh SQLite file).
// With --metrics the server also serves METRICS_PORT, scraped every second, and the share of its
// busy time that ran through metrics code is printed (issue goal: metrics cost under 5 %).
// With --sqlite-statements (SQLite only) every statement the server runs is timed on the event loop
// (scripts/support/sqlite-statement-timer.mjs), and the time per request of each SQL text is printed:
// what SQLite itself takes of a request, its floor on this stack.
// docs/performance.md reads these figures.
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { SourceMap } from 'node:module';
import { join, relative } from 'node:path';
import autocannon from 'autocannon';
import { Command, Option } from 'commander';
import { freePort } from '../test/support/free-port.ts';
import { whileScraped } from '../test/support/metrics-scraper.ts';
import { startServerProcess } from '../test/support/server-process.ts';
import { runAdmin } from '../src/admin/run-admin.ts';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const root = new URL('..', import.meta.url).pathname;

/** Where a frame's code lives: an npm package, a file of ours, a Node built-in, or V8's own bucket. */
function ownerOf(frame: ProfileNode['callFrame']): string {
  const { url, functionName } = frame;
  if (!url) return functionName || '(native)';
  const inPackage = url.split('node_modules/').pop()!;
  if (inPackage !== url)
    return inPackage
      .split('/')
      .slice(0, inPackage.startsWith('@') ? 2 : 1)
      .join('/');
  if (url.startsWith('node:')) return url;
  return relative(root, new URL(url).pathname);
}

/**
 * The server runs a bundle of src/ (scripts/build.ts): each of its frames is put back at its source
 * file and line with the bundle's source map, so the tables name src/ files as before.
 */
function atSources(profile: CpuProfile): CpuProfile {
  const maps = new Map<string, SourceMap | null>();
  const mapOf = (url: string): SourceMap | null => {
    if (!maps.has(url)) {
      let map: SourceMap | null = null;
      try {
        map = new SourceMap(JSON.parse(readFileSync(new URL(`${url}.map`), 'utf8')) as ConstructorParameters<typeof SourceMap>[0]);
      } catch {
        // Not a bundle of ours: the frame stays as it is.
      }
      maps.set(url, map);
    }
    return maps.get(url)!;
  };
  for (const node of profile.nodes) {
    const frame = node.callFrame;
    const map = frame.url.startsWith('file:') ? mapOf(frame.url) : null;
    const entry = map?.findEntry(frame.lineNumber, frame.columnNumber);
    if (!entry || !('originalSource' in entry)) continue;
    frame.url = new URL(entry.originalSource, frame.url).href;
    frame.lineNumber = entry.originalLine;
    frame.columnNumber = entry.originalColumn;
  }
  return profile;
}

/** The samples from the first HTTP request on, by node, with the time they cover. */
function hotPathSamples(profile: CpuProfile) {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parentOf = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id);
  const servesHttp = (id: number | undefined): boolean =>
    id !== undefined && (byId.get(id)!.callFrame.functionName === 'parserOnIncoming' || servesHttp(parentOf.get(id)));
  // Start-up (module loading, schema compilation) is not the hot path: samples count from the first
  // HTTP request on, which comes after the server listens.
  const first = profile.samples.findIndex((id) => servesHttp(id));
  const self = new Map<number, number>();
  let total = 0;
  profile.samples.forEach((id, i) => {
    if (i < first) return;
    const dt = profile.timeDeltas[i] ?? 0;
    self.set(id, (self.get(id) ?? 0) + dt);
    total += dt;
  });
  return { byId, parentOf, self, total };
}

/**
 * The share of the main thread's busy time (idle left out) whose stack runs through metrics code:
 * prom-client and src/platform/metrics (the per-request observation, the scrapes and the gauges'
 * reads). The garbage collection their allocations cause is not attributed to them.
 */
function metricsShare(profile: CpuProfile): { share: number; busyMs: number } {
  const { byId, parentOf, self, total } = hotPathSamples(profile);
  const isMetrics = (url: string) => url.includes('/node_modules/prom-client/') || url.includes('/src/platform/metrics/');
  const inMetrics = (id: number | undefined): boolean => id !== undefined && (isMetrics(byId.get(id)!.callFrame.url) || inMetrics(parentOf.get(id)));
  let metrics = 0;
  let idle = 0;
  for (const [id, time] of self) {
    if (byId.get(id)!.callFrame.functionName === '(idle)') idle += time;
    else if (inMetrics(id)) metrics += time;
  }
  return { share: metrics / (total - idle), busyMs: (total - idle) / 1000 };
}

function report(profile: CpuProfile, top: number): void {
  const { byId, self, total } = hotPathSamples(profile);
  const sum = (keyOf: (node: ProfileNode) => string) => {
    const sums = new Map<string, number>();
    for (const [id, time] of self) sums.set(keyOf(byId.get(id)!), (sums.get(keyOf(byId.get(id)!)) ?? 0) + time);
    return sums;
  };
  const inclusive = new Map<string, number>();
  const walk = (id: number): number => {
    const node = byId.get(id)!;
    const time = (self.get(id) ?? 0) + (node.children ?? []).reduce((acc, child) => acc + walk(child), 0);
    const key = `${node.callFrame.functionName || '(anonymous)'} ${ownerOf(node.callFrame)}:${node.callFrame.lineNumber + 1}`;
    inclusive.set(key, Math.max(inclusive.get(key) ?? 0, time));
    return time;
  };
  walk(profile.nodes[0]!.id);
  const print = (title: string, sums: Map<string, number>) => {
    console.log(`\n${title}`);
    for (const [key, time] of [...sums].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${((100 * time) / total).toFixed(1).padStart(6)} %  ${key}`);
  };
  print(
    'self time by package or file',
    sum((node) => ownerOf(node.callFrame)),
  );
  print(
    'self time by function',
    sum((node) => `${node.callFrame.functionName || '(anonymous)'} ${ownerOf(node.callFrame)}:${node.callFrame.lineNumber + 1}`),
  );
  print('inclusive time', inclusive);
}

interface StatementTime {
  sql: string;
  runs: number;
  ns: number;
}

/** Each SQL text's time on the event loop per request served, the largest first, and their sum (set-up and start-up included, a few ms). */
function reportStatements(times: StatementTime[], requests: number, top: number): void {
  const perRequest = (ns: number) => (ns / 1000 / requests).toFixed(1).padStart(7);
  const total = times.reduce((sum, time) => sum + time.ns, 0);
  console.log(`\nSQLite statements on the event loop: ${perRequest(total).trim()} µs per request (${requests} requests)`);
  console.log(`${'µs/request'.padStart(10)} ${'runs/request'.padStart(12)} ${'µs/run'.padStart(8)}  SQL`);
  for (const time of [...times].sort((a, b) => b.ns - a.ns).slice(0, top)) {
    console.log(
      `${perRequest(time.ns).padStart(10)} ${(time.runs / requests).toFixed(2).padStart(12)} ${(time.ns / 1000 / time.runs).toFixed(1).padStart(8)}  ${time.sql.slice(0, 110)}`,
    );
  }
}

async function main(): Promise<void> {
  const program = new Command('profile:api')
    .addOption(new Option('--top <n>', 'rows per table').default('25'))
    .addOption(new Option('--metrics', "serve metrics (scraped every second) and print the share of the server's CPU they take"))
    .addOption(new Option('--sqlite-statements', "time every SQLite statement on the event loop and print each SQL text's time per request"))
    .argument('[endpoint]', 'status, tape or create', 'status')
    .parse();
  const endpoint = program.args[0] ?? 'status';
  if (!['status', 'tape', 'create'].includes(endpoint)) program.error(`unknown endpoint ${endpoint}`);
  const seconds = Number(process.env.PROFILE_SECONDS ?? 10);
  const dir = mkdtempSync(join(tmpdir(), 'civ-profile-'));
  const { top, metrics, sqliteStatements } = program.opts<{ top: string; metrics?: boolean; sqliteStatements?: boolean }>();
  if (sqliteStatements && process.env.PROFILE_DATABASE_URL && !process.env.PROFILE_DATABASE_URL.startsWith('sqlite:'))
    program.error('--sqlite-statements times SQLite statements: leave PROFILE_DATABASE_URL unset or name a SQLite file');
  const statementTimes = join(dir, 'sqlite-statements.json');
  const metricsPort = metrics ? await freePort() : null;
  const metricsToken = 'profile-metrics-token-0123456789';
  const env = {
    DATABASE_URL: process.env.PROFILE_DATABASE_URL ?? `sqlite:${join(dir, 'profile.sqlite')}`,
    SERVICE_MODE: 'sandbox',
    LOG_LEVEL: 'warn',
    // One process, whose main thread the profile and the statement times are of.
    WEB_CONCURRENCY: '1',
    ...(metricsPort ? { METRICS_PORT: String(metricsPort), METRICS_TOKEN: metricsToken } : {}),
  };
  const timer = ['--import', new URL('./support/sqlite-statement-timer.mjs', import.meta.url).pathname];
  const { child, base } = await startServerProcess(sqliteStatements ? { ...env, SQLITE_STATEMENT_TIMES: statementTimes } : env, {
    nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${dir}`, ...(sqliteStatements ? timer : [])],
  });
  let requests = 0;
  try {
    const lender = await runAdmin(env, ['lender', 'create', '--name', 'Profiled Lender']);
    const key = await runAdmin(env, ['key', 'create', '--lender', lender.id, '--role', 'lender']);
    await runAdmin(env, ['key', 'limit', '--key-id', key.id, '--rate-limit', '1000000', '--burst', '1000000']);
    const headers = { authorization: `Bearer ${key.api_key}`, 'content-type': 'application/json' };
    const body = JSON.stringify({ obligor_reference: 'demo_prime_multi', creator_platforms: ['youtube', 'stripe'] });
    const created = await fetch(`${base}/api/v1/verifications`, { method: 'POST', headers: { ...headers, 'idempotency-key': randomUUID() }, body });
    const { verification_id: id } = (await created.json()) as { verification_id: string };
    const options: autocannon.Options =
      endpoint === 'create'
        ? {
            url: `${base}/api/v1/verifications`,
            method: 'POST',
            headers,
            body,
            requests: [{ setupRequest: (request: autocannon.Request) => ({ ...request, headers: { ...headers, 'idempotency-key': randomUUID() } }) }],
          }
        : { url: `${base}/api/v1/verifications/${id}${endpoint === 'tape' ? '/tape' : ''}`, headers };
    const metricsUrl = metricsPort ? `http://127.0.0.1:${metricsPort}/metrics` : null;
    const result = await whileScraped(metricsUrl, metricsToken, () => autocannon({ connections: 50, duration: seconds, ...options }));
    console.log(`${endpoint}: ${result.requests.average.toFixed(0)} req/s, p99 ${result.latency.p99} ms, ${result.non2xx + result.errors} failed`);
    requests = result.requests.total;
  } finally {
    child.kill('SIGTERM');
    await once(child, 'exit');
  }
  const file = readdirSync(dir).find((name) => name.endsWith('.cpuprofile'));
  if (!file) throw new Error('the server wrote no profile');
  console.log(`profile: ${join(dir, file)} (the tables leave out start-up, before the first HTTP request)`);
  const profile = atSources(JSON.parse(readFileSync(join(dir, file), 'utf8')) as CpuProfile);
  report(profile, Number(top));
  if (sqliteStatements) reportStatements(JSON.parse(readFileSync(statementTimes, 'utf8')) as StatementTime[], requests, Number(top));
  if (metrics) {
    const { share, busyMs } = metricsShare(profile);
    console.log(
      `\nmetrics: ${(100 * share).toFixed(2)} % of the main thread's busy time (${busyMs.toFixed(0)} ms) ran through prom-client or src/platform/metrics (goal: under 5 %)`,
    );
  }
}

await main();
