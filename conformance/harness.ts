import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT } from './locate.ts';
import { SERVICE_ENV_NAMES } from './service-env.ts';
import { loadContract, type Contract, type ObservedResponse } from './contract.ts';
import { closeReceivers, suiteCaDir } from './webhook-receiver.ts';
import { proxyRun, whyNotThroughProxy } from './proxy-route.ts';
import { skipBecause } from './skip.ts';
import { probeWebhooks } from './webhooks.ts';

/**
 * Resolves the deployments the suite runs against. With CONFORMANCE_BASE_URL it tests that one
 * deployment with the keys it is given; otherwise it starts the service itself, as a black box (a
 * child process, configured only through its environment, accounts made with the operator CLI), on
 * SQLite and, with TEST_POSTGRES_URL, again on a fresh PostgreSQL database. A self-started service
 * trusts the run's own webhook CA and retries on a schedule of seconds; one more is started, with
 * private webhook targets refused, for the tests of that refusal.
 */

// Eleven operator CLI runs, one after another (each applies the migrations), then the start-up.
const START_TIMEOUT_MS = 120_000;
const READY_TIMEOUT_MS = 20_000;
const STOP_TIMEOUT_MS = 10_000;
const REQUEST_TIMEOUT_MS = 15_000;
const OUTPUT_TAIL_CHARS = 16_000;
/** What a self-started sandbox is given as SANDBOX_COMPLETE_DELAY_MS, so `test-` outcomes are quick. */
const SELF_STARTED_SANDBOX_DELAY_MS = 1_000;
/** A self-started sandbox's month of ongoing monitoring (SANDBOX_REFRESH_INTERVAL_MS), so its schedule is seen in seconds. */
const SELF_STARTED_REFRESH_INTERVAL_MS = 4_000;
/** The service's default SANDBOX_COMPLETE_DELAY_MS (D22), assumed for a deployment unless told otherwise. */
const DEFAULT_SANDBOX_DELAY_MS = 5_000;
/** What a self-started service is given for its webhook sender (D14, D22): seconds after the first attempt, and the receiver timeout. */
const SELF_STARTED_RETRY_SCHEDULE = [0, 1, 2];
const SELF_STARTED_WEBHOOK_TIMEOUT_MS = 2_000;
/** The service's defaults (D14, D22), assumed for a deployment unless told otherwise. */
const DEFAULT_RETRY_SCHEDULE = [0, 60, 300, 1800, 7200];
const DEFAULT_WEBHOOK_TIMEOUT_MS = 10_000;
/** The pilot plan of section 8 and D8, which the `pilot` key gets. */
export const PILOT_QUOTA = { perMinute: 60, burst: 10 } as const;

export type KeyName = 'lender' | 'otherLender' | 'thirdLender' | 'fourthLender' | 'gdpr' | 'revoked' | 'pilot';
export type ServiceMode = 'sandbox' | 'production';

export interface Keys {
  /** Role lender. */
  lender: string;
  /** Role lender, of another lender account (tenant isolation). */
  otherLender?: string;
  /** Role lender, of a third lender account (peer benchmarks need three lenders). */
  thirdLender?: string;
  /**
   * Role lender, of a fourth lender account: with the other three, a lender's peers reach the floor
   * of three other lenders (P22), so the benchmark tests can show peers and not only their absence.
   */
  fourthLender?: string;
  /** Role gdpr_admin, of the same lender account as `lender`. */
  gdpr?: string;
  /** A key its operator has revoked. */
  revoked?: string;
  /** Role lender, limited to the pilot quota (60 requests/minute, burst 10) whatever the deployment's mode. */
  pilot?: string;
}

export interface CliLender {
  id: string;
  name: string;
  [field: string]: unknown;
}

export interface CliKey {
  id: string;
  api_key: string;
  role: string;
  [field: string]: unknown;
}

/** The operator CLI of D23, run as a subprocess against the target's own database. */
export interface Operator {
  createLender(name: string): Promise<CliLender>;
  createKey(lenderId: string, role: 'lender' | 'gdpr_admin'): Promise<CliKey>;
  revokeKey(keyId: string): Promise<CliKey>;
  /** `key limit`: gives one key its own quota (D8). */
  limitKey(keyId: string, perMinute: number, burst: number): Promise<unknown>;
  /** `lender set --return-origins`: the origins a creation's `return_url` may lead to. */
  setReturnOrigins(lenderId: string, origins: string[]): Promise<unknown>;
}

/** The origin a self-started service registers for the `lender` key's account. */
const SELF_STARTED_RETURN_ORIGIN = 'https://lender-app.conformance.example';

export interface RequestOptions {
  /** Which of the target's keys to send; null sends no Authorization header. Default `lender`. */
  key?: KeyName | null;
  /** A literal key to send as `Bearer <apiKey>`, for keys the test made itself. */
  apiKey?: string;
  /** The literal Authorization header value; wins over `key` and `apiKey`. */
  authorization?: string;
  headers?: Record<string, string>;
  /** Sent as `application/json`. */
  json?: unknown;
  /** Sent as is (bytes too, for bodies that are not valid text); give `headers['content-type']` yourself. */
  body?: string | Uint8Array;
  /**
   * Send at once, without the client-side pacing that keeps the suite inside a sandbox key's quota;
   * for the tests that mean to exceed a limit.
   */
  unpaced?: boolean;
}

/**
 * The suite is a client like any other and stays inside its quota, so that only the tests that mean
 * to be refused are. D8: a fixed 60-second window of `X-RateLimit-Limit` requests plus a burst
 * limit within any one second (pilot 60/min burst 10, production 300/min burst 50, sandbox 1000/min
 * burst 100). The burst is not in any header, so it is taken from the plan whose minute limit the
 * deployment announces; a limit no plan has gets the plans' lowest ratio, a sixth of it.
 * Per Authorization header value, requests wait until they fit in every window.
 */
const PLAN_BURSTS = new Map([
  [60, 10],
  [300, 50],
  [1000, 100],
]);
export const burstOfLimit = (perMinute: number): number => PLAN_BURSTS.get(perMinute) ?? Math.max(1, Math.floor(perMinute / 6));

/**
 * What the suite's own pacing uses of a quota: its windows slide while the deployment's are fixed
 * (a sliding count under N keeps every fixed window under N too), and the share leaves room for
 * requests arriving later than they were sent. At most 40 a second whatever the plan allows.
 */
const PACE_SHARE = 0.8;
const MAX_PACE_PER_SECOND = 40;
/** After the last answer, how long until the deployment's one-second burst window has surely ended. */
const BURST_WINDOW_QUIET_MS = 1_200;

interface QuotaSeen {
  perMinute: number;
  /** X-RateLimit-Remaining and X-RateLimit-Reset (epoch seconds) of the latest answer. */
  remaining: number | undefined;
  resetAt: number | undefined;
}

class Pacer {
  private readonly sent: number[] = [];
  private inFlight = 0;
  private lastAnswerAt = 0;
  /** The sandbox plan until the deployment's headers say otherwise. */
  private quota: QuotaSeen = { perMinute: 1000, remaining: undefined, resetAt: undefined };

  private windows(): Array<{ windowMs: number; max: number }> {
    const burst = burstOfLimit(this.quota.perMinute);
    return [
      { windowMs: 1_000, max: Math.max(1, Math.min(MAX_PACE_PER_SECOND, Math.floor(burst * PACE_SHARE))) },
      { windowMs: 60_000, max: Math.max(1, Math.floor(this.quota.perMinute * PACE_SHARE)) },
    ];
  }

  async take(): Promise<void> {
    for (;;) {
      const now = Date.now();
      const windows = this.windows();
      const longest = Math.max(...windows.map((pace) => pace.windowMs));
      while (this.sent.length > 0 && this.sent[0]! <= now - longest) this.sent.shift();
      const waits = windows.map(({ windowMs, max }) => {
        const inWindow = this.sent.filter((at) => at > now - windowMs);
        return inWindow.length < max ? 0 : inWindow[inWindow.length - max]! + windowMs - now + 1;
      });
      const wait = Math.max(...waits);
      if (wait <= 0) {
        this.record();
        return;
      }
      await sleepMs(wait);
    }
  }

  /**
   * Waits while more than half of the pace's minute window is used, so that a test which sent many
   * requests pays for them itself (in a hook with room for the pause) rather than the next test,
   * within that test's own timeout.
   */
  async rest(): Promise<void> {
    const half = Math.floor(this.windows().find(({ windowMs }) => windowMs === 60_000)!.max / 2);
    for (;;) {
      const now = Date.now();
      const inWindow = this.sent.filter((at) => at > now - 60_000);
      if (inWindow.length <= half) return;
      await sleepMs(inWindow[inWindow.length - half - 1]! + 60_000 - now + 1);
    }
  }

  /** Counts a request sent without waiting (an unpaced one): it uses the quota all the same. */
  record(): void {
    this.sent.push(Date.now());
    this.inFlight += 1;
  }

  answered(headers: Headers | undefined): void {
    this.inFlight = Math.max(0, this.inFlight - 1);
    this.lastAnswerAt = Date.now();
    const number = (name: string) => {
      const raw = headers?.get(name);
      return raw !== null && raw !== undefined && /^\d+$/.test(raw) ? Number(raw) : undefined;
    };
    const perMinute = number('x-ratelimit-limit');
    if (perMinute === undefined || perMinute < 1) return;
    this.quota = { perMinute, remaining: number('x-ratelimit-remaining'), resetAt: number('x-ratelimit-reset') };
  }

  /**
   * Waits until a burst of `requests` can be sent at once: nothing in flight, the deployment's burst
   * window over, and (by the latest X-RateLimit-* headers) room for them in its minute window.
   * Resolves with how many of them fit in one burst of the deployment's plan.
   */
  async quiet(requests: number): Promise<number> {
    for (;;) {
      const now = Date.now();
      const { remaining, resetAt } = this.quota;
      const minuteFull = remaining !== undefined && resetAt !== undefined && remaining < requests && now < resetAt * 1000;
      const wait = Math.max(
        this.inFlight > 0 ? 50 : 0,
        this.lastAnswerAt + BURST_WINDOW_QUIET_MS - now,
        ...this.sent.slice(-1).map((at) => at + BURST_WINDOW_QUIET_MS - now),
        minuteFull ? resetAt * 1000 + 200 - now : 0,
      );
      if (wait <= 0) return Math.min(requests, burstOfLimit(this.quota.perMinute));
      await sleepMs(wait);
    }
  }
}

const sleepMs = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export interface ApiResponse extends ObservedResponse {
  method: string;
  url: string;
  /** The body as received, before any decoding: what a signature over the body covers. */
  bytes: Uint8Array;
}

/**
 * Every request the suite makes goes through here, and every response is checked against the
 * contract before a test sees it, so no test can forget to.
 */
/**
 * Every client of the run paces one key of one deployment together: a deployment counts a key's
 * requests whichever client sent them, and a run can hold more than one client of a deployment
 * (one per target definition), so a pace kept per client let two of them spend one key's burst.
 */
const PACERS = new Map<string, Pacer>();

export class ApiClient {
  constructor(
    readonly baseUrl: string,
    private readonly keys: Keys,
    private readonly contract: Contract,
    /** The same deployment without the validating proxy `baseUrl` points at, if it does (proxy-route.ts). */
    private readonly directBaseUrl?: string,
  ) {}

  get(path: string, options: RequestOptions = {}): Promise<ApiResponse> {
    return this.request('GET', path, options);
  }

  post(path: string, options: RequestOptions = {}): Promise<ApiResponse> {
    return this.request('POST', path, options);
  }

  async request(method: string, path: string, options: RequestOptions = {}): Promise<ApiResponse> {
    const headers: Record<string, string> = { accept: 'application/json', ...lowerCaseKeys(options.headers ?? {}) };
    const authorization = this.authorizationFor(options);
    if (authorization !== undefined) headers.authorization = authorization;
    let body: string | Uint8Array | undefined = options.body;
    if (options.json !== undefined) {
      body = JSON.stringify(options.json);
      headers['content-type'] ??= 'application/json';
    }
    let url = new URL(path, this.baseUrl).toString();
    if (this.directBaseUrl) {
      const reason = whyNotThroughProxy(method, new URL(url), headers, body);
      if (reason) {
        url = new URL(path, this.directBaseUrl).toString();
        proxyRun.bypasses.push({ test: proxyRun.currentTest, request: `${method} ${new URL(url).pathname}`, reason });
      }
    }
    const pacer = this.pacerFor(authorization);
    if (options.unpaced) pacer.record();
    else await pacer.take();
    let raw: Awaited<ReturnType<typeof requestWithBody>>;
    try {
      raw =
        body !== undefined && (method === 'GET' || method === 'HEAD')
          ? await requestWithBody(url, method, headers, body)
          : await fetch(url, { method, headers, body, redirect: 'manual', signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
    } catch (error) {
      pacer.answered(undefined);
      throw error;
    }
    pacer.answered(raw.headers);
    const bytes = new Uint8Array(await raw.arrayBuffer());
    const text = new TextDecoder().decode(bytes);
    let json: unknown;
    try {
      json = text === '' ? undefined : JSON.parse(text);
    } catch {
      json = undefined;
    }
    const response: ApiResponse = { method, url, status: raw.status, headers: raw.headers, text, json, bytes };
    this.contract.assertConforms(method, url, response);
    return response;
  }

  /**
   * Before a test sends `requests` at once with one key (unpaced): waits until they can all be
   * answered within the key's quota, and resolves with how many fit in one burst of its plan (D8),
   * which is what the test should send.
   */
  quietBurst(requests: number, options: RequestOptions = {}): Promise<number> {
    return this.pacerFor(this.authorizationFor(options)).quiet(requests);
  }

  /** Waits until the key's pace has room for a test's worth of requests again (Pacer.rest). */
  rest(options: RequestOptions = {}): Promise<void> {
    return this.pacerFor(this.authorizationFor(options)).rest();
  }

  private pacerFor(authorization: string | undefined): Pacer {
    const subject = `${new URL(this.directBaseUrl ?? this.baseUrl).origin} ${authorization ?? '(no key)'}`;
    let pacer = PACERS.get(subject);
    if (!pacer) PACERS.set(subject, (pacer = new Pacer()));
    return pacer;
  }

  private authorizationFor(options: RequestOptions): string | undefined {
    if (options.authorization !== undefined) return options.authorization;
    if (options.apiKey !== undefined) return `Bearer ${options.apiKey}`;
    const name = options.key === undefined ? 'lender' : options.key;
    if (name === null) return undefined;
    const key = this.keys[name];
    if (!key) throw new Error(`The target has no "${name}" key; guard the test with requireKey(this, target, '${name}').`);
    return `Bearer ${key}`;
  }
}

/**
 * fetch refuses a body on GET; HTTP does not, and the contract answers a malformed one with
 * `bad_request` like on any other method, so those requests go through node:http(s).
 */
async function requestWithBody(
  url: string,
  method: string,
  headers: Record<string, string>,
  body: string | Uint8Array,
): Promise<{ status: number; headers: Headers; arrayBuffer(): Promise<ArrayBuffer> }> {
  const { request } = url.startsWith('https:') ? await import('node:https') : await import('node:http');
  return new Promise((resolve, reject) => {
    const outgoing = request(
      url,
      { method, headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) }, timeout: REQUEST_TIMEOUT_MS },
      (incoming) => {
        const chunks: Buffer[] = [];
        incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
        incoming.on('error', reject);
        incoming.on('end', () => {
          const received = new Headers();
          for (const [name, value] of Object.entries(incoming.headers)) {
            for (const one of Array.isArray(value) ? value : value === undefined ? [] : [value]) received.append(name, one);
          }
          const body = Buffer.concat(chunks);
          const copy = body.buffer.slice(body.byteOffset, body.byteOffset + body.byteLength);
          resolve({ status: incoming.statusCode ?? 0, headers: received, arrayBuffer: () => Promise.resolve(copy) });
        });
      },
    );
    outgoing.on('timeout', () => outgoing.destroy(new Error(`${method} ${url}: no answer in ${REQUEST_TIMEOUT_MS} ms`)));
    outgoing.on('error', reject);
    outgoing.end(body);
  });
}

const lowerCaseKeys = (record: Record<string, string>) => Object.fromEntries(Object.entries(record).map(([name, value]) => [name.toLowerCase(), value]));

export interface Target {
  readonly name: string;
  readonly baseUrl: string;
  readonly keys: Keys;
  /** The suite started this deployment and can run the operator CLI against it. */
  readonly canOperate: boolean;
  /** Present exactly when `canOperate`. */
  readonly operator: Operator | undefined;
  /** Lender account of `keys.lender`, when the suite made it. */
  readonly lenderId: string | undefined;
  /** An origin registered for the account of `keys.lender` (a creation's `return_url` may lead there), when known. */
  readonly returnOrigin: string | undefined;
  /** Mode of the deployment, read from the lender key's prefix (`civ_test_` sandbox, `civ_live_` production). */
  readonly mode: ServiceMode;
  /**
   * The deployment's SANDBOX_COMPLETE_DELAY_MS: when a `test-` verification reaches its outcome.
   * Known before the target starts, so tests can size their timeouts with it.
   */
  readonly sandboxDelayMs: number;
  /** How the deployment sends webhooks and how the suite can receive them; known before it starts. */
  readonly webhooks: WebhookSettings;
  readonly api: ApiClient;
}

export interface WebhookSettings {
  /** Why the webhook tests cannot run on this target; undefined when they can. */
  readonly unavailable: string | undefined;
  /** A directory made by scripts/make-test-ca.sh whose ca.pem the deployment trusts (read lazily: a self-started run makes it on first use). */
  readonly caDir: string | undefined;
  /** The address the suite's receiver listens on and registers in its URLs. */
  readonly receiverHost: string;
  /** The deployment's WEBHOOK_RETRY_SCHEDULE: seconds after the first attempt at which each attempt happens. */
  readonly retryScheduleSeconds: readonly number[];
  /** The deployment's WEBHOOK_TIMEOUT_MS. */
  readonly timeoutMs: number;
  /** The deployment's WEBHOOK_ALLOW_PRIVATE_TARGETS, when the suite knows it. */
  readonly privateTargetsAllowed: boolean | undefined;
}

interface Started {
  baseUrl: string;
  /** Set when `baseUrl` is a validating proxy in front of the deployment: the deployment itself. */
  directBaseUrl?: string;
  keys: Keys;
  operator: Operator | undefined;
  lenderId: string | undefined;
  returnOrigin?: string;
}

interface TargetDefinition {
  name: string;
  sandboxDelayMs: number;
  webhooks: WebhookSettings;
  start(): Promise<Started>;
  stop(): Promise<void>;
}

const modeOfKey = (key: string): ServiceMode => (key.startsWith('civ_live_') ? 'production' : 'sandbox');

/** A target whose fields exist once its `before` hook has started it; mocha runs tests only after that. */
class TargetHandle implements Target {
  private started: Started | undefined;
  private client: ApiClient | undefined;
  private starting: Promise<void> | undefined;
  private probing: Promise<void> | undefined;
  private probeFailure: string | undefined;

  constructor(private readonly definition: TargetDefinition) {}

  get name() {
    return this.definition.name;
  }
  get baseUrl() {
    return this.state.baseUrl;
  }
  get keys() {
    return this.state.keys;
  }
  get canOperate() {
    return this.state.operator !== undefined;
  }
  get operator() {
    return this.state.operator;
  }
  get lenderId() {
    return this.state.lenderId;
  }
  get returnOrigin() {
    return this.state.returnOrigin;
  }
  get mode() {
    return modeOfKey(this.state.keys.lender);
  }
  get sandboxDelayMs() {
    return this.definition.sandboxDelayMs;
  }
  /** The deployment's webhook settings, unavailable with the probe's reason when its probe found the receiver unreachable. */
  get webhooks(): WebhookSettings {
    const settings = this.definition.webhooks;
    const failure = this.probeFailure;
    if (settings.unavailable || !failure) return settings;
    return {
      unavailable: failure,
      get caDir() {
        return settings.caDir;
      },
      receiverHost: settings.receiverHost,
      retryScheduleSeconds: settings.retryScheduleSeconds,
      timeoutMs: settings.timeoutMs,
      privateTargetsAllowed: settings.privateTargetsAllowed,
    };
  }
  /** Whether its `before` hook got as far as a client (a target that failed to start has none). */
  get hasClient() {
    return this.client !== undefined;
  }
  get api() {
    if (!this.client) throw new Error(`Target ${this.name} is not started`);
    return this.client;
  }

  private get state(): Started {
    if (!this.started) throw new Error(`Target ${this.name} is not started`);
    return this.started;
  }

  /**
   * Whether webhooks reach the suite's receiver, found out once per target by `probeWebhooks`
   * (capability detection by trying, not by configuration): a failed probe becomes the skip reason
   * of every webhook test. Only when the settings give it a CA to use.
   */
  ensureProbed(): Promise<void> {
    this.probing ??= (async () => {
      if (this.definition.webhooks.unavailable) {
        console.log(`  Webhooks on ${this.name}: ${this.definition.webhooks.unavailable}`);
        return;
      }
      const { unavailable, summary } = await probeWebhooks(this);
      this.probeFailure = unavailable;
      console.log(`  Webhooks on ${this.name}: ${summary}`);
    })();
    return this.probing;
  }

  /** Started once per run, however many test files use the target. */
  ensureStarted(): Promise<void> {
    this.starting ??= (async () => {
      const [contract, started] = await Promise.all([loadContract(), this.definition.start()]);
      this.started = started;
      this.client = new ApiClient(started.baseUrl, started.keys, contract, started.directBaseUrl);
    })();
    return this.starting;
  }

  async stopIfStarted(): Promise<void> {
    if (!this.starting) return;
    await this.starting.catch(() => undefined);
    await this.definition.stop();
  }
}

// ---------------------------------------------------------------- self-started service

function serviceEnv(settings: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of SERVICE_ENV_NAMES) delete env[name];
  return { ...env, ...settings };
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

const run = promisify(execFile);

class CliOperator implements Operator {
  constructor(private readonly env: NodeJS.ProcessEnv) {}

  createLender(name: string): Promise<CliLender> {
    return this.cli<CliLender>(['lender', 'create', '--name', name]);
  }

  createKey(lenderId: string, role: 'lender' | 'gdpr_admin'): Promise<CliKey> {
    return this.cli<CliKey>(['key', 'create', '--lender', lenderId, '--role', role]);
  }

  revokeKey(keyId: string): Promise<CliKey> {
    return this.cli<CliKey>(['key', 'revoke', '--key-id', keyId]);
  }

  limitKey(keyId: string, perMinute: number, burst: number): Promise<unknown> {
    return this.cli(['key', 'limit', '--key-id', keyId, '--rate-limit', String(perMinute), '--burst', String(burst)]);
  }

  setReturnOrigins(lenderId: string, origins: string[]): Promise<unknown> {
    return this.cli(['lender', 'set', '--id', lenderId, '--return-origins', origins.join(',')]);
  }

  private async cli<T>(args: string[]): Promise<T> {
    const command = ['--import', 'tsx', 'src/admin/cli.ts', ...args, '--json'];
    try {
      const { stdout } = await run(process.execPath, command, { cwd: repoRoot(), env: this.env, timeout: 30_000 });
      return JSON.parse(stdout) as T;
    } catch (error) {
      const e = error as Error & { stderr?: string; stdout?: string };
      throw new Error(`admin CLI "${args.join(' ')}" failed: ${e.message}\n${e.stderr ?? ''}${e.stdout ?? ''}`);
    }
  }
}

/** Keeps the end of a stream, so a start-up failure can show what the service said. */
class OutputTail {
  private text = '';
  append(chunk: Buffer | string): void {
    this.text = (this.text + chunk.toString()).slice(-OUTPUT_TAIL_CHARS);
  }
  toString(): string {
    return this.text;
  }
}

interface ServiceDatabase {
  url: string;
  drop(): Promise<void>;
}

interface SelfStartedOptions {
  /** WEBHOOK_ALLOW_PRIVATE_TARGETS; on by default, so the suite's receiver on 127.0.0.1 can be reached. */
  allowPrivateTargets?: boolean;
  /** Only lender A and its `lender` key (for an extra server that runs a few tests). */
  lenderKeyOnly?: boolean;
}

class SelfStartedService implements TargetDefinition {
  readonly sandboxDelayMs = SELF_STARTED_SANDBOX_DELAY_MS;
  readonly webhooks: WebhookSettings;
  private child: ChildProcess | undefined;
  private database: ServiceDatabase | undefined;

  constructor(
    readonly name: string,
    private readonly createDatabase: () => Promise<ServiceDatabase>,
    private readonly options: SelfStartedOptions = {},
  ) {
    this.webhooks = {
      unavailable: undefined,
      // The run's own CA, made when the first target starts (or a test first asks).
      get caDir() {
        return suiteCaDir();
      },
      receiverHost: '127.0.0.1',
      retryScheduleSeconds: SELF_STARTED_RETRY_SCHEDULE,
      timeoutMs: SELF_STARTED_WEBHOOK_TIMEOUT_MS,
      privateTargetsAllowed: options.allowPrivateTargets ?? true,
    };
  }

  async start(): Promise<Started> {
    this.database = await this.createDatabase();
    const port = await freePort();
    const env = serviceEnv({
      PORT: String(port),
      HOST: '127.0.0.1',
      SERVICE_MODE: 'sandbox',
      LOG_LEVEL: 'warn',
      VALIDATE_RESPONSES: '1',
      SANDBOX_COMPLETE_DELAY_MS: String(this.sandboxDelayMs),
      SANDBOX_REFRESH_INTERVAL_MS: String(SELF_STARTED_REFRESH_INTERVAL_MS),
      DATABASE_URL: this.database.url,
      NODE_EXTRA_CA_CERTS: `${this.webhooks.caDir}/ca.pem`,
      WEBHOOK_ALLOW_PRIVATE_TARGETS: this.webhooks.privateTargetsAllowed ? '1' : '0',
      WEBHOOK_RETRY_SCHEDULE: this.webhooks.retryScheduleSeconds.join(','),
      WEBHOOK_TIMEOUT_MS: String(this.webhooks.timeoutMs),
    });
    const operator = new CliOperator(env);
    const baseUrl = `http://127.0.0.1:${port}`;
    if (this.options.lenderKeyOnly) {
      const lender = await operator.createLender('Conformance Lender A');
      const lenderKey = await operator.createKey(lender.id, 'lender');
      await this.spawnService(env, baseUrl);
      return { baseUrl, keys: { lender: lenderKey.api_key }, operator, lenderId: lender.id };
    }
    // One after another: each CLI run applies migrations, and concurrent runs would contend for the migration lock.
    const lender = await operator.createLender('Conformance Lender A');
    const otherLender = await operator.createLender('Conformance Lender B');
    const thirdLender = await operator.createLender('Conformance Lender C');
    const fourthLender = await operator.createLender('Conformance Lender D');
    const lenderKey = await operator.createKey(lender.id, 'lender');
    const otherLenderKey = await operator.createKey(otherLender.id, 'lender');
    const thirdLenderKey = await operator.createKey(thirdLender.id, 'lender');
    const fourthLenderKey = await operator.createKey(fourthLender.id, 'lender');
    const gdprKey = await operator.createKey(lender.id, 'gdpr_admin');
    // A sandbox key would get 1000/min burst 100 (D8); this one gets the pilot quota, to be tripped.
    const pilotKey = await operator.createKey(lender.id, 'lender');
    await operator.limitKey(pilotKey.id, PILOT_QUOTA.perMinute, PILOT_QUOTA.burst);
    await operator.setReturnOrigins(lender.id, [SELF_STARTED_RETURN_ORIGIN]);

    await this.spawnService(env, baseUrl);
    return {
      baseUrl,
      keys: {
        lender: lenderKey.api_key,
        otherLender: otherLenderKey.api_key,
        thirdLender: thirdLenderKey.api_key,
        fourthLender: fourthLenderKey.api_key,
        gdpr: gdprKey.api_key,
        pilot: pilotKey.api_key,
      },
      operator,
      lenderId: lender.id,
      returnOrigin: SELF_STARTED_RETURN_ORIGIN,
    };
  }

  private async spawnService(env: NodeJS.ProcessEnv, baseUrl: string): Promise<void> {
    const output = new OutputTail();
    const child = spawn(process.execPath, await serverCommand(), { cwd: repoRoot(), env, stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    child.stdout.on('data', (chunk: Buffer) => output.append(chunk));
    child.stderr.on('data', (chunk: Buffer) => output.append(chunk));
    let exited: string | undefined;
    child.once('exit', (code, signal) => {
      exited = `exited with ${signal ?? `code ${code}`}`;
    });

    const deadline = Date.now() + READY_TIMEOUT_MS;
    let lastProblem = 'no answer yet';
    while (Date.now() < deadline && exited === undefined) {
      try {
        const response = await fetch(`${baseUrl}/readyz`, { signal: AbortSignal.timeout(2_000) });
        await response.text();
        if (response.status === 200) return;
        lastProblem = `/readyz answered ${response.status}`;
      } catch (error) {
        lastProblem = (error as Error).message;
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const why = exited ?? `not ready after ${READY_TIMEOUT_MS / 1000} s (${lastProblem})`;
    await this.stopService();
    throw new Error(`The service on ${this.name} ${why}. Its output:\n${output.toString()}`);
  }

  private async stopService(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
    await exited;
    clearTimeout(timer);
  }

  async stop(): Promise<void> {
    try {
      await this.stopService();
    } finally {
      const database = this.database;
      this.database = undefined;
      await database?.drop();
    }
  }

  /** Last resort when the process exits without mocha's `after` hooks (e.g. an uncaught error). */
  killSync(): void {
    if (this.child && this.child.exitCode === null) this.child.kill('SIGKILL');
  }
}

function sqliteDatabase(): Promise<ServiceDatabase> {
  const dir = mkdtempSync(join(tmpdir(), 'conformance-'));
  return Promise.resolve({
    url: `sqlite:${join(dir, 'conformance.sqlite')}`,
    drop: async () => rmSync(dir, { recursive: true, force: true }),
  });
}

function postgresDatabase(serverUrl: string): () => Promise<ServiceDatabase> {
  return async () => {
    const name = `conformance_${randomBytes(6).toString('hex')}`;
    await withPostgres(serverUrl, (client) => client.query(`CREATE DATABASE ${name}`));
    const url = new URL(serverUrl);
    url.pathname = `/${name}`;
    return {
      url: url.toString(),
      drop: () => withPostgres(serverUrl, (client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => undefined),
    };
  };
}

async function withPostgres<T>(url: string, work: (client: { query(sql: string): Promise<unknown> }) => Promise<T>): Promise<T> {
  // Loaded here: only a self-started run on PostgreSQL needs it, and the installed package does not carry it.
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

// ---------------------------------------------------------------- external deployment

class ExternalDeployment implements TargetDefinition {
  readonly name: string;
  readonly sandboxDelayMs: number;
  readonly webhooks: WebhookSettings;

  constructor(
    private readonly baseUrl: string,
    private readonly env: NodeJS.ProcessEnv,
  ) {
    this.name = `external ${baseUrl}`;
    this.sandboxDelayMs = positiveInteger(env, 'CONFORMANCE_SANDBOX_DELAY_MS', DEFAULT_SANDBOX_DELAY_MS);
    const caDir = env.CONFORMANCE_RECEIVER_CA_DIR || undefined;
    const privateTargets = env.CONFORMANCE_PRIVATE_TARGETS_ALLOWED || undefined;
    if (privateTargets !== undefined && privateTargets !== '0' && privateTargets !== '1') {
      throw new Error(`CONFORMANCE_PRIVATE_TARGETS_ALLOWED must be 1 or 0 (the deployment's WEBHOOK_ALLOW_PRIVATE_TARGETS), not "${privateTargets}".`);
    }
    this.webhooks = {
      unavailable: caDir
        ? undefined
        : 'pass --ca-dir (CONFORMANCE_RECEIVER_CA_DIR), a directory made by make-test-ca.sh whose ca.pem the deployment trusts (NODE_EXTRA_CA_CERTS)',
      caDir,
      receiverHost: env.CONFORMANCE_RECEIVER_HOST || '127.0.0.1',
      retryScheduleSeconds: retrySchedule(env, 'CONFORMANCE_RETRY_SCHEDULE', DEFAULT_RETRY_SCHEDULE),
      timeoutMs: positiveInteger(env, 'CONFORMANCE_WEBHOOK_TIMEOUT_MS', DEFAULT_WEBHOOK_TIMEOUT_MS),
      privateTargetsAllowed: privateTargets === undefined ? undefined : privateTargets === '1',
    };
  }

  async start(): Promise<Started> {
    const lender = this.env.CONFORMANCE_LENDER_KEY;
    if (!lender) throw new Error('CONFORMANCE_BASE_URL is set but CONFORMANCE_LENDER_KEY (a key with the lender role) is not.');
    const optional = (name: string) => this.env[name] || undefined;
    return {
      baseUrl: this.baseUrl,
      directBaseUrl: this.env.CONFORMANCE_DIRECT_BASE_URL?.replace(/\/+$/, '') || undefined,
      keys: {
        lender,
        otherLender: optional('CONFORMANCE_OTHER_LENDER_KEY'),
        thirdLender: optional('CONFORMANCE_THIRD_LENDER_KEY'),
        fourthLender: optional('CONFORMANCE_FOURTH_LENDER_KEY'),
        gdpr: optional('CONFORMANCE_GDPR_KEY'),
        revoked: optional('CONFORMANCE_REVOKED_KEY'),
        pilot: optional('CONFORMANCE_PILOT_KEY'),
      },
      operator: undefined,
      lenderId: undefined,
      returnOrigin: optional('CONFORMANCE_RETURN_ORIGIN'),
    };
  }

  async stop(): Promise<void> {}
}

function positiveInteger(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < 1) throw new Error(`${name} must be a whole number of milliseconds, not "${raw}".`);
  return Number(raw);
}

/** `0,60,300`: whole seconds, increasing, starting at 0 (D14, D22). */
function retrySchedule(env: NodeJS.ProcessEnv, name: string, fallback: number[]): number[] {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const offsets = raw.split(',').map((part) => part.trim());
  const valid = offsets.every((part) => /^\d+$/.test(part)) && offsets.map(Number).every((n, i, all) => (i === 0 ? n === 0 : n > all[i - 1]!));
  if (!valid) throw new Error(`${name} must be increasing whole seconds starting at 0, e.g. 0,60,300 (the deployment's WEBHOOK_RETRY_SCHEDULE), not "${raw}".`);
  return offsets.map(Number);
}

// ---------------------------------------------------------------- the targets of this run

/** The repository the self-started service runs from; only a run inside the repository has one. */
function repoRoot(): string {
  if (!REPO_ROOT) throw new Error(SELF_START_UNAVAILABLE);
  return REPO_ROOT;
}

let built: Promise<void> | undefined;

/**
 * The node arguments `npm start` runs the service with, after the build it runs first (the
 * repository's package.json): the suite starts what a deployment starts. Built once per run.
 */
async function serverCommand(): Promise<string[]> {
  const root = repoRoot();
  const start = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts.start ?? '';
  const nodeArgs = /&& exec node (.+)$/.exec(start)?.[1];
  if (!nodeArgs) throw new Error(`npm start is not "<build> && exec node <arguments>": ${start}`);
  built ??= run(process.execPath, ['--import', 'tsx', 'scripts/build.ts'], { cwd: root, timeout: 60_000 }).then(() => undefined);
  await built;
  return nodeArgs.split(/\s+/);
}

export const SELF_START_UNAVAILABLE =
  "Without --base-url (CONFORMANCE_BASE_URL) the suite starts the service itself, which it can only do inside the service's repository; " +
  'this installed copy has none. Pass --base-url and --key to test a running deployment.';

function defineTargets(env: NodeJS.ProcessEnv): TargetDefinition[] {
  if (env.CONFORMANCE_BASE_URL) return [new ExternalDeployment(env.CONFORMANCE_BASE_URL.replace(/\/+$/, ''), env)];
  if (!REPO_ROOT) throw new Error(SELF_START_UNAVAILABLE);
  const targets: TargetDefinition[] = [new SelfStartedService('sqlite', sqliteDatabase)];
  if (env.TEST_POSTGRES_URL) targets.push(new SelfStartedService('postgresql', postgresDatabase(env.TEST_POSTGRES_URL)));
  return targets;
}

/**
 * The deployments that refuse private webhook targets (WEBHOOK_ALLOW_PRIVATE_TARGETS off), for the
 * D16 refusal tests: on a self-started run one extra server on a fresh SQLite file, with only
 * lender A's `lender` key; an external deployment itself when CONFORMANCE_PRIVATE_TARGETS_ALLOWED=0.
 */
function definePrivateTargetsRefusedTargets(env: NodeJS.ProcessEnv, main: TargetDefinition[]): TargetDefinition[] {
  if (env.CONFORMANCE_BASE_URL) return main.filter((definition) => definition.webhooks.privateTargetsAllowed === false);
  return [new SelfStartedService('sqlite with WEBHOOK_ALLOW_PRIVATE_TARGETS=0', sqliteDatabase, { allowPrivateTargets: false, lenderKeyOnly: true })];
}

const definitions = defineTargets(process.env);
const handles = definitions.map((definition) => ({ definition, handle: new TargetHandle(definition) }));
const privateTargetsRefusedHandles = definePrivateTargetsRefusedTargets(process.env, definitions).map(
  (definition) => handles.find((entry) => entry.definition === definition) ?? { definition, handle: new TargetHandle(definition) },
);
const allHandles = [...new Set([...handles, ...privateTargetsRefusedHandles])];

// A root-level hook (registered while mocha loads the first test file): targets outlive any one file.
after(async function stopConformanceTargets() {
  this.timeout(STOP_TIMEOUT_MS * 3);
  await Promise.all(allHandles.map(({ handle }) => handle.stopIfStarted()));
  await closeReceivers();
});

process.once('exit', () => {
  for (const { definition } of allHandles) if (definition instanceof SelfStartedService) definition.killSync();
});

/** Declares `suite` once per target, inside `describe('conformance on <target>')`. */
export function forEachTarget(suite: (target: Target) => void): void {
  for (const { handle } of handles) {
    describe(`conformance on ${handle.name}`, function () {
      before(async function startTarget() {
        this.timeout(START_TIMEOUT_MS);
        await handle.ensureStarted();
        await handle.ensureProbed();
      });
      // The lender key serves most tests: after one that used much of its pace, the pause is taken
      // here, so the next test does not spend its own timeout waiting for the key's minute window.
      afterEach(async function restLenderKey() {
        this.timeout(70_000);
        if (handle.hasClient) await handle.api.rest();
      });
      suite(handle);
    });
  }
}

/**
 * Declares `suite` once per deployment that refuses private webhook targets (see
 * definePrivateTargetsRefusedTargets); nothing when there is none (an external deployment with
 * CONFORMANCE_PRIVATE_TARGETS_ALLOWED unset or 1).
 */
export function forEachPrivateTargetsRefusedTarget(suite: (target: Target) => void): void {
  for (const { handle } of privateTargetsRefusedHandles) {
    describe(`conformance on ${handle.name}`, function () {
      before(async function startTarget() {
        this.timeout(START_TIMEOUT_MS);
        await handle.ensureStarted();
      });
      suite(handle);
    });
  }
}

/** Whether this run has a deployment that refuses private webhook targets (see forEachPrivateTargetsRefusedTarget). */
export const hasPrivateTargetsRefusedTarget = (): boolean => privateTargetsRefusedHandles.length > 0;

/** Skips the running test, with the reason, when the target was not given the key it needs. */
export function requireKey(context: Mocha.Context, target: Target, name: KeyName): string {
  const key = target.keys[name];
  if (!key) {
    const option = {
      lender: '--key (CONFORMANCE_LENDER_KEY)',
      otherLender: '--other-lender-key (CONFORMANCE_OTHER_LENDER_KEY)',
      thirdLender: '--third-lender-key (CONFORMANCE_THIRD_LENDER_KEY)',
      fourthLender: '--fourth-lender-key (CONFORMANCE_FOURTH_LENDER_KEY)',
      gdpr: '--gdpr-key (CONFORMANCE_GDPR_KEY)',
      revoked: '--revoked-key (CONFORMANCE_REVOKED_KEY)',
      pilot: '--pilot-key (CONFORMANCE_PILOT_KEY)',
    }[name];
    skipBecause(context, `pass ${option} to run it`);
  }
  return key;
}

/** Skips the running test, with the reason, on a production deployment: synthetic creators and `test-` triggers are sandbox only (D10). */
export function requireSandbox(context: Mocha.Context, target: Target): void {
  if (target.mode !== 'sandbox') {
    skipBecause(context, 'needs a sandbox deployment; the lender key is a production key');
  }
}
