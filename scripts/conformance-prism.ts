/**
 * `npm run conformance:prism [-- suite options, e.g. --grep X --junit FILE]`: the conformance suite
 * once through Stoplight Prism's validation proxy, a validator that is not ours, checking every
 * response the service gives against spec/openapi.yaml.
 *
 * It starts the service as a separate process (sandbox, a fresh SQLite file, webhook settings of
 * seconds, its own response validation off so Prism sees what a client would), makes the suite's
 * lender accounts and keys with the operator CLI (D23), starts `prism proxy` in front of it on a
 * free port and runs the suite with `--base-url` at Prism and `--direct-base-url` at the service.
 * Prism forwards every request (no `--errors`: it reports, it does not answer in the service's
 * place) and logs each violation it finds; the script fails when the suite fails, when Prism
 * reports any response violation, whatever its severity, or when it logs answering a request itself.
 *
 * The few requests Prism cannot forward as sent (a body that is not the JSON it declares, a body on
 * GET or HEAD, a path or query Prism would rewrite: see conformance/proxy-route.ts) go straight to
 * the service; the suite prints how many, and for which tests.
 *
 * conformance-prism.test.ts proves the reading of Prism's log on a fake upstream that answers with
 * bodies and statuses the contract refuses, and the routing rule against Prism itself.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { freePort } from '../test/support/free-port.ts';
import { startServerProcess, stopProcess } from '../test/support/server-process.ts';
import { SERVICE_ENV_NAMES } from '../conformance/service-env.ts';
import { keyOptions, makeSuiteKeys, type SuiteKeys } from './support/conformance-keys.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const SPEC = join(ROOT, 'spec', 'openapi.yaml');
const PRISM_BIN = createRequire(import.meta.url).resolve('@stoplight/prism-cli/dist/index.js');
const run = promisify(execFile);

const SANDBOX_DELAY_MS = '1000';
const RETRY_SCHEDULE = '0,1,2';
const WEBHOOK_TIMEOUT_MS = '2000';

// ---------------------------------------------------------------- Prism and its log

export interface PrismViolation {
  /** `error`, `warning` or `info`: Prism's severity. */
  severity: string;
  /** `Violation: response.body must have required property 'id'`, as Prism logs it. */
  message: string;
  /** The last request Prism logged receiving before it (the suite sends one request at a time, mostly). */
  request: string;
}

/**
 * Reads Prism's console log (signale lines, colours off) as it arrives. Prism logs each request as
 * `[HTTP SERVER] <method> <path> ℹ  info  Request received` and each violation it finds as
 * `[VALIDATOR] ✖  error  Violation: <location> <message>` (`⚠  warning` for the ones it ranks lower,
 * e.g. an undocumented 4xx status), where the location starts with `request` or `response`
 * (@stoplight/prism-http-server, server.js). A request Prism answered itself is logged as
 * `Request terminated with error`.
 */
export class PrismLog {
  readonly responseViolations: PrismViolation[] = [];
  readonly requestViolations: PrismViolation[] = [];
  readonly answeredByPrism: string[] = [];
  requests = 0;
  /** Requests that matched no operation of the contract (`Selected route not found`): forwarded, not validated. */
  unrouted = 0;
  listening = false;
  private lastRequest = '(none yet)';
  private pending = '';
  private tail: string[] = [];

  feed(chunk: string): void {
    this.pending += chunk;
    const lines = this.pending.split('\n');
    this.pending = lines.pop() ?? '';
    for (const line of lines) this.line(line);
  }

  /** The last lines Prism printed, for a failure message. */
  lastLines(): string {
    return this.tail.join('\n');
  }

  private line(raw: string): void {
    // eslint-disable-next-line no-control-regex -- colours are off, but a terminal setting must not break the parse
    const line = raw.replace(/\u001b\[[0-9;]*m/g, '');
    this.tail = [...this.tail, line].slice(-40);
    if (line.includes('Prism is listening on')) this.listening = true;
    const received = /\[HTTP SERVER\] (\S+ \S+)\s.*Request received/.exec(line);
    if (received) {
      this.requests++;
      this.lastRequest = received[1]!.replace(/^\S+/, (method) => method.toUpperCase());
      return;
    }
    const violation = /\[VALIDATOR\]\s+\S+\s+(error|warning|info)\s+(Violation: (request|response)\b.*)$/.exec(line);
    if (violation) {
      const found = { severity: violation[1]!, message: violation[2]!.trim(), request: this.lastRequest };
      if (found.message === 'Violation: request Selected route not found') {
        this.unrouted++;
        return;
      }
      (violation[3] === 'response' ? this.responseViolations : this.requestViolations).push(found);
      return;
    }
    if (line.includes('Request terminated with error'))
      this.answeredByPrism.push(`${this.lastRequest}: ${line.replace(/^.*Request terminated with error:\s*/, '')}`);
  }
}

export interface Prism {
  child: ChildProcess;
  baseUrl: string;
  log: PrismLog;
}

/** `prism proxy` in one process (its log in order), CORS off (it would answer preflights itself), no `--errors`. */
export async function startPrism(upstream: string, spec = SPEC): Promise<Prism> {
  const port = await freePort();
  const child = spawn(
    process.execPath,
    [PRISM_BIN, 'proxy', spec, upstream, '--host', '127.0.0.1', '--port', String(port), '--cors=false', '--errors=false', '--multiprocess=false'],
    { cwd: ROOT, env: { ...process.env, FORCE_COLOR: '0', NO_COLOR: '1' }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const log = new PrismLog();
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => log.feed(chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => log.feed(chunk));
  const deadline = Date.now() + 60_000;
  while (!log.listening) {
    if (child.exitCode !== null) throw new Error(`prism exited (${child.exitCode}) before listening:\n${log.lastLines()}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`prism was not listening after 60 s:\n${log.lastLines()}`);
    }
    await new Promise((done) => setTimeout(done, 100));
  }
  return { child, baseUrl: `http://127.0.0.1:${port}`, log };
}

function printViolations(title: string, violations: PrismViolation[]): void {
  console.log(`${title}: ${violations.length}`);
  const grouped = new Map<string, { violation: PrismViolation; count: number }>();
  for (const violation of violations) {
    const key = `${violation.request} ${violation.message}`;
    const entry = grouped.get(key);
    if (entry) entry.count++;
    else grouped.set(key, { violation, count: 1 });
  }
  for (const { violation, count } of grouped.values()) {
    console.log(`  [${violation.severity}] after ${violation.request}: ${violation.message}${count > 1 ? ` (${count} times)` : ''}`);
  }
}

// ---------------------------------------------------------------- the service and its keys

function serviceEnv(settings: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of [...SERVICE_ENV_NAMES, 'TEST_POSTGRES_URL']) delete env[name];
  return { ...env, ...settings };
}

/** Accounts and keys made with the operator CLI (D23) on the service's database, as an operator would. */
async function makeKeys(databaseUrl: string): Promise<SuiteKeys> {
  const env = serviceEnv({ DATABASE_URL: databaseUrl, SERVICE_MODE: 'sandbox', LOG_LEVEL: 'warn' });
  const admin = async <T>(...args: string[]): Promise<T> => {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', 'src/admin/cli.ts', ...args, '--json'], { cwd: ROOT, env, timeout: 60_000 });
    return JSON.parse(stdout) as T;
  };
  return makeSuiteKeys(admin, { namePrefix: 'Prism', revoked: true });
}

/** The suite from this repository, its output shown as it runs; resolves to its exit status. */
async function runSuite(prismUrl: string, directUrl: string, keys: SuiteKeys, caDir: string, extra: string[]): Promise<number> {
  const args = [
    '--import',
    'tsx',
    join(ROOT, 'conformance', 'cli.ts'),
    '--base-url',
    prismUrl,
    '--direct-base-url',
    directUrl,
    ...keyOptions(keys),
    '--ca-dir',
    caDir,
    '--sandbox-delay-ms',
    SANDBOX_DELAY_MS,
    '--retry-schedule',
    RETRY_SCHEDULE,
    '--webhook-timeout-ms',
    WEBHOOK_TIMEOUT_MS,
    '--private-targets-allowed',
    '1',
    ...extra,
  ];
  const child = spawn(process.execPath, args, { cwd: ROOT, env: serviceEnv({}), stdio: 'inherit' });
  const [code] = (await once(child, 'exit')) as [number | null];
  return code ?? 1;
}

/** JUnit counts of the run. */
function countsOf(junit: string): { tests: number; failures: number; skipped: number } | undefined {
  if (!existsSync(junit)) return undefined;
  const head = /<testsuites [^>]*tests="(\d+)" failures="(\d+)" skipped="(\d+)"/.exec(readFileSync(junit, 'utf8'));
  return head ? { tests: Number(head[1]), failures: Number(head[2]), skipped: Number(head[3]) } : undefined;
}

async function main(argv: string[]): Promise<number> {
  const work = mkdtempSync(join(tmpdir(), 'conformance-prism-'));
  let server: ChildProcess | undefined;
  let prism: Prism | undefined;
  try {
    const caDir = join(work, 'ca');
    await run('bash', [join(ROOT, 'scripts', 'make-test-ca.sh'), caDir]);
    const databaseUrl = `sqlite:${join(work, 'service.sqlite')}`;
    const keys = await makeKeys(databaseUrl);
    for (const name of SERVICE_ENV_NAMES) delete process.env[name];
    const started = await startServerProcess({
      HOST: '127.0.0.1',
      SERVICE_MODE: 'sandbox',
      DATABASE_URL: databaseUrl,
      LOG_LEVEL: 'error',
      SANDBOX_COMPLETE_DELAY_MS: SANDBOX_DELAY_MS,
      NODE_EXTRA_CA_CERTS: join(caDir, 'ca.pem'),
      WEBHOOK_ALLOW_PRIVATE_TARGETS: '1',
      WEBHOOK_RETRY_SCHEDULE: RETRY_SCHEDULE,
      WEBHOOK_TIMEOUT_MS: WEBHOOK_TIMEOUT_MS,
    });
    server = started.child;
    prism = await startPrism(started.base);
    console.log(`conformance:prism: service on ${started.base}, Prism ${prismVersion()} proxy on ${prism.baseUrl} validating against spec/openapi.yaml`);

    const userJunitAt = argv.indexOf('--junit');
    const junit = userJunitAt >= 0 ? argv[userJunitAt + 1]! : join(work, 'junit.xml');
    const extra = userJunitAt >= 0 ? argv : [...argv, '--junit', junit];
    const suiteStatus = await runSuite(prism.baseUrl, started.base, keys, caDir, extra);

    const { log } = prism;
    const counts = countsOf(junit);
    console.log('\n--- Prism validation proxy');
    console.log(
      `tests: ${counts ? `${counts.tests} (${counts.tests - counts.failures - counts.skipped} passed, ${counts.failures} failed, ${counts.skipped} skipped)` : 'no JUnit report'}, suite exit status ${suiteStatus}`,
    );
    console.log(
      `requests through Prism: ${log.requests}, of which ${log.unrouted} matched no operation of the contract (unknown routes, consent pages): not validated`,
    );
    console.log(`request violations Prism reported (expected: the suite sends deliberately invalid requests): ${log.requestViolations.length}`);
    printViolations('response violations Prism reported', log.responseViolations);
    if (log.answeredByPrism.length > 0) {
      console.log(`requests Prism answered itself instead of forwarding: ${log.answeredByPrism.length}`);
      for (const line of log.answeredByPrism) console.log(`  ${line}`);
    }
    const failed = suiteStatus !== 0 || log.responseViolations.length > 0 || log.answeredByPrism.length > 0 || log.requests === 0;
    console.log(failed ? 'conformance:prism FAILED' : 'conformance:prism passed: no response violation');
    return failed ? 1 : 0;
  } finally {
    await stopProcess(prism?.child);
    await stopProcess(server);
    rmSync(work, { recursive: true, force: true });
  }
}

function prismVersion(): string {
  return (JSON.parse(readFileSync(join(dirname(PRISM_BIN), '..', 'package.json'), 'utf8')) as { version: string }).version;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      console.error(error instanceof Error ? (error.stack ?? error.message) : String(error));
      process.exitCode = 2;
    },
  );
}
