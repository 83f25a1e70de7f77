import { execFileSync } from 'node:child_process';
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { EventEmitter, once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MAKE_TEST_CA } from './locate.ts';

/**
 * The suite's own webhook receiver: an HTTPS server (node:https) with a certificate from a CA made
 * by scripts/make-test-ca.sh, recording every request (path, headers, raw body bytes, arrival time)
 * and answering per path from a script. It shares no code with the service: the signature check
 * below is written from section 6.3 and D15, not imported, so a mistake in the service's helper
 * cannot hide itself.
 */

export const CA_FILES = ['ca.pem', 'server-key.pem', 'server.pem'] as const;

// ---------------------------------------------------------------- signature (6.3, D15)

const SIGNATURE_ENTRY = /^(?:sha256=)?([0-9a-fA-F]{64})$/;
/** The most entries a header may list: two during a secret rotation's overlap (P25). */
const MAX_SIGNATURES = 4;

/** Lowercase hex HMAC-SHA256 of the raw body keyed with the whole endpoint secret (6.3.1). */
export function signatureOf(rawBody: Buffer | string, secret: string): string {
  return createHmac('sha256', secret).update(rawBody).digest('hex');
}

/**
 * 6.3: accepts `sha256=<hex>` and bare hex, compares in constant time over the raw bytes. During a
 * secret rotation's overlap the header lists both secrets' signatures separated by commas (P25):
 * it verifies when any entry does. Anything else (missing header, another algorithm, wrong length,
 * one malformed entry, a header sent twice) does not verify.
 */
export function verifySignature(rawBody: Buffer | string, header: string | string[] | undefined, secret: string): boolean {
  if (typeof header !== 'string') return false;
  const entries = header.split(',').map((entry) => SIGNATURE_ENTRY.exec(entry.trim())?.[1]);
  if (entries.length > MAX_SIGNATURES || entries.some((hex) => hex === undefined)) return false;
  const expected = Buffer.from(signatureOf(rawBody, secret), 'hex');
  let matched = false;
  for (const hex of entries) {
    const given = Buffer.from(hex!, 'hex');
    matched = (given.length === expected.length && timingSafeEqual(given, expected)) || matched;
  }
  return matched;
}

// ---------------------------------------------------------------- the certificate authority

/** A directory as scripts/make-test-ca.sh leaves it, read into memory. */
export interface TestCa {
  dir: string;
  caFile: string;
  ca: string;
  key: string;
  cert: string;
}

export function readCaDir(dir: string): TestCa {
  const missing = CA_FILES.filter((file) => !existsSync(join(dir, file)));
  if (missing.length > 0) throw new Error(`${dir} lacks ${missing.join(', ')}; make it with scripts/make-test-ca.sh <dir>`);
  const read = (file: string) => readFileSync(join(dir, file), 'utf8');
  return { dir, caFile: join(dir, 'ca.pem'), ca: read('ca.pem'), key: read('server-key.pem'), cert: read('server.pem') };
}

/** A new CA and localhost certificate in a temporary directory, made by scripts/make-test-ca.sh. */
export function makeTestCa(): TestCa {
  const dir = mkdtempSync(join(tmpdir(), 'conformance-ca-'));
  execFileSync('bash', [MAKE_TEST_CA, dir], { stdio: ['ignore', 'ignore', 'pipe'] });
  return readCaDir(dir);
}

let suiteCa: TestCa | undefined;

/** The CA this run makes for itself, once (for self-started targets, through NODE_EXTRA_CA_CERTS). */
export function suiteCaDir(): string {
  suiteCa ??= makeTestCa();
  return suiteCa.dir;
}

// ---------------------------------------------------------------- the receiver

export interface ReceivedRequest {
  method: string;
  path: string;
  /** Lower-case names, as node:http gives them. */
  headers: IncomingHttpHeaders;
  rawBody: Buffer;
  /** Date.now() when the whole body had arrived. */
  receivedAt: number;
  /** Checked when the test told the receiver the path's secret; `unchecked` otherwise. */
  signature: 'valid' | 'invalid' | 'unchecked';
  /** What the receiver answered (or meant to, if the sender hung up first). */
  answeredStatus: number;
}

export interface Answer {
  status: number;
  /** Wait this long before answering (a receiver slower than the sender's timeout). */
  delayMs?: number;
  headers?: Record<string, string>;
}

const asAnswer = (answer: number | Answer): Answer => (typeof answer === 'number' ? { status: answer } : answer);

export class WebhookReceiver {
  private readonly received: ReceivedRequest[] = [];
  private readonly scripts = new Map<string, Answer[]>();
  private readonly defaults = new Map<string, Answer>();
  private readonly secrets = new Map<string, string>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly events = new EventEmitter();

  private constructor(
    private readonly server: Server,
    /** `https://<host>:<port>`, as the service is given it. */
    readonly origin: string,
  ) {
    this.events.setMaxListeners(0);
  }

  /** Listens on `host` (an address, or a name the certificate covers) on a free port. */
  static async start(ca: TestCa, host: string): Promise<WebhookReceiver> {
    const server = createServer({ key: ca.key, cert: ca.cert });
    server.keepAliveTimeout = 1_000;
    server.listen(0, host);
    await once(server, 'listening');
    const { port } = server.address() as { port: number };
    const receiver = new WebhookReceiver(server, `https://${host.includes(':') ? `[${host}]` : host}:${port}`);
    server.on('request', (req, res) => receiver.handle(req, res));
    return receiver;
  }

  /** A path no other test uses: `/hooks/<label>-<random>`. */
  newPath(label: string): string {
    return `/hooks/${label.replace(/[^A-Za-z0-9-]+/g, '-')}-${randomBytes(6).toString('hex')}`;
  }

  urlFor(path: string): string {
    return `${this.origin}${path}`;
  }

  /** The next answers for `path`, in order; after them the path's default (200 unless set). */
  script(path: string, ...answers: Array<number | Answer>): void {
    this.scripts.set(path, [...(this.scripts.get(path) ?? []), ...answers.map(asAnswer)]);
  }

  /** What `path` answers once its script has run out. */
  answerAlways(path: string, answer: number | Answer): void {
    this.defaults.set(path, asAnswer(answer));
  }

  /** Checks requests to `path` against `secret`; one that does not verify is answered 401 (6.3.3). */
  expectSignedWith(path: string, secret: string): void {
    this.secrets.set(path, secret);
  }

  requestsTo(path: string): ReceivedRequest[] {
    return this.received.filter((request) => request.path === path);
  }

  /** Resolves with the requests to `path` once `done` holds for them; fails after `timeoutMs`. */
  async waitFor(path: string, done: (requests: ReceivedRequest[]) => boolean, timeoutMs: number, what = 'the expected requests'): Promise<ReceivedRequest[]> {
    const check = () => {
      const requests = this.requestsTo(path);
      return done(requests) ? requests : undefined;
    };
    const now = check();
    if (now) return now;
    return new Promise((resolve, reject) => {
      const onRequest = () => {
        const requests = check();
        if (!requests) return;
        cleanup();
        resolve(requests);
      };
      const timer = setTimeout(() => {
        cleanup();
        const seen = this.requestsTo(path).map(
          (r) => `${String(r.headers['x-service-event'])} ${String(r.headers['x-service-delivery'])} → ${r.answeredStatus}`,
        );
        reject(new Error(`${path}: ${what} did not arrive within ${timeoutMs} ms; received ${seen.length}: ${seen.join(', ') || 'nothing'}`));
      }, timeoutMs);
      const cleanup = () => {
        clearTimeout(timer);
        this.events.off('request', onRequest);
      };
      this.events.on('request', onRequest);
    });
  }

  /** Waits for at least `count` requests to `path`. */
  waitForCount(path: string, count: number, timeoutMs: number): Promise<ReceivedRequest[]> {
    return this.waitFor(path, (requests) => requests.length >= count, timeoutMs, `${count} request(s)`);
  }

  async close(): Promise<void> {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeAllConnections();
    await closed;
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const path = req.url ?? '/';
      const rawBody = Buffer.concat(chunks);
      const secret = this.secrets.get(path);
      const signature = secret === undefined ? 'unchecked' : verifySignature(rawBody, req.headers['x-service-signature'], secret) ? 'valid' : 'invalid';
      const scripted = this.scripts.get(path)?.shift() ?? this.defaults.get(path) ?? { status: 200 };
      const answer: Answer = signature === 'invalid' ? { status: 401 } : scripted;
      this.received.push({ method: req.method ?? '', path, headers: req.headers, rawBody, receivedAt: Date.now(), signature, answeredStatus: answer.status });
      this.events.emit('request');
      const respond = () => {
        if (res.destroyed || res.writableEnded) return;
        res.writeHead(answer.status, { 'content-type': 'text/plain', ...answer.headers }).end(answer.status < 300 ? 'ok' : 'no');
      };
      if (!answer.delayMs) return respond();
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        respond();
      }, answer.delayMs);
      this.timers.add(timer);
    });
    req.on('error', () => undefined);
    res.on('error', () => undefined);
  }
}

// ---------------------------------------------------------------- one receiver per CA and host, for the whole run

const receivers = new Map<string, Promise<WebhookReceiver>>();

export function receiverFor(caDir: string, host: string): Promise<WebhookReceiver> {
  const key = `${caDir}\n${host}`;
  let receiver = receivers.get(key);
  if (!receiver) {
    receiver = WebhookReceiver.start(readCaDir(caDir), host);
    receivers.set(key, receiver);
  }
  return receiver;
}

/** Closes every receiver and removes the CA this run made; called by the harness's root `after` hook. */
export async function closeReceivers(): Promise<void> {
  const started = [...receivers.values()];
  receivers.clear();
  await Promise.all(
    started.map((receiver) =>
      receiver.then(
        (r) => r.close(),
        () => undefined,
      ),
    ),
  );
  if (suiteCa) {
    rmSync(suiteCa.dir, { recursive: true, force: true });
    suiteCa = undefined;
  }
}
