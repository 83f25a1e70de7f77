import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { request as httpRequest } from 'node:http';
import { Pool } from 'undici';
import { runAdmin } from '../../src/admin/run-admin.ts';
import { startServerProcess } from '../support/server-process.ts';
import { testDatabases, type TestDatabase } from '../support/test-databases.ts';

/**
 * SIGTERM to a separately started server under steady load from many keep-alive clients (README,
 * "Timeouts"; D22: drain on SIGTERM). Every request either gets its full response, or its connection
 * is refused before anything is sent (the client can retry it elsewhere); nothing else counts as
 * success. Requests still uploading their body when the signal arrives finish with their answer and
 * `Connection: close`. The process exits soon after the last request, well within the grace period.
 */

const CONNECTIONS = 24;
const LOAD_BEFORE_SIGTERM_MS = 1500;
const GRACE_MS = 8000;
const SLOW_UPLOADS = 3;
const SLOW_UPLOAD_MS = 1200;

type Outcome = { kind: 'answered'; status: number; retried?: true } | { kind: 'refused' } | { kind: 'failed'; error: string; startedBeforeSigterm: boolean };

/**
 * The connection closed under a request that was sent after the signal: the server had closed it as
 * idle while the request was on its way. No response began, so a client may send it again on a new
 * connection (RFC 9112, 9.3.1; a creation carries its Idempotency-Key, D1), and the retry must then be
 * answered or refused. A request already in flight at the signal gets no such allowance.
 */
function isClosedUnsent(error: unknown): boolean {
  for (let e = error as { code?: string; cause?: unknown } | undefined; e; e = e.cause as typeof e) {
    if (e.code === 'ECONNRESET' || e.code === 'EPIPE' || e.code === 'UND_ERR_SOCKET') return true;
  }
  return false;
}

function isRefusal(error: unknown): boolean {
  for (let e = error as { code?: string; cause?: unknown } | undefined; e; e = e.cause as typeof e) if (e.code === 'ECONNREFUSED') return true;
  return false;
}

const sqlite = testDatabases().find((f) => f.name === 'sqlite')!;

describe('chaos: SIGTERM to a separate server under load', function () {
  this.timeout(60_000);
  let testDb: TestDatabase;
  let env: Record<string, string>;
  let key: string;
  let server: { child: ChildProcess; base: string } | undefined;

  before(async () => {
    testDb = await sqlite.create();
    env = { DATABASE_URL: testDb.url, ENCRYPTION_KEY: 'e'.repeat(64), SHUTDOWN_GRACE_MS: String(GRACE_MS) };
    const lender = await runAdmin(env, ['lender', 'create', '--name', 'Shutdown Lending']);
    await runAdmin(env, ['lender', 'set', '--id', lender.id, '--rate-limit', '1000000', '--burst', '100000']);
    key = (await runAdmin(env, ['key', 'create', '--lender', lender.id, '--role', 'lender'])).api_key;
  });
  after(async () => {
    if (server?.child.exitCode === null) server.child.kill('SIGKILL');
    await testDb.drop();
  });

  it('fails no request in flight: each is answered in full or refused before it is sent, and the process exits within the grace period', async () => {
    server = await startServerProcess(env);
    const { child, base } = server;
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const createBody = () => JSON.stringify({ obligor_reference: 'demo-yt-mid', creator_platforms: ['youtube'] });
    const created = await fetch(`${base}/api/v1/verifications`, {
      method: 'POST',
      headers: { ...headers, 'idempotency-key': randomUUID() },
      body: createBody(),
    });
    assert.equal(created.status, 201);
    const { verification_id: id } = (await created.json()) as { verification_id: string };

    const pool = new Pool(base, { connections: CONNECTIONS, pipelining: 1 });
    let sigtermAt = Infinity;
    const outcomes: Outcome[] = [];
    // Each client reads and creates in turn, back to back, until its connection is refused.
    const client = async (n: number) => {
      for (let i = 0; ; i++) {
        const startedAt = Date.now();
        const creates = (n + i) % 3 === 0;
        const send = async () => {
          const response = await pool.request({
            method: creates ? 'POST' : 'GET',
            path: creates ? '/api/v1/verifications' : i % 2 ? `/api/v1/verifications/${id}` : `/api/v1/verifications/${id}/tape`,
            headers: creates ? { ...headers, 'idempotency-key': idempotencyKey } : headers,
            body: creates ? createBody() : undefined,
          });
          const text = await response.body.text();
          assert.ok(response.statusCode === 200 || response.statusCode === 201, `${response.statusCode} ${text}`);
          JSON.parse(text);
          return response.statusCode;
        };
        const idempotencyKey = randomUUID();
        let retried = false;
        for (;;) {
          try {
            const status = await send();
            outcomes.push(retried ? { kind: 'answered', status, retried: true } : { kind: 'answered', status });
            break;
          } catch (error) {
            if (isRefusal(error)) {
              outcomes.push({ kind: 'refused' });
              return;
            }
            if (!retried && startedAt >= sigtermAt && isClosedUnsent(error)) {
              retried = true;
              continue;
            }
            outcomes.push({ kind: 'failed', error: String((error as { code?: string }).code ?? error), startedBeforeSigterm: startedAt < sigtermAt });
            if (Date.now() > sigtermAt) return;
            break;
          }
        }
      }
    };
    /** A creation whose body arrives in pieces over SLOW_UPLOAD_MS: in flight when the signal comes. */
    const slowUpload = () =>
      new Promise<{ status: number; connection: string | undefined }>((resolve, reject) => {
        const body = Buffer.from(createBody());
        const url = new URL(`${base}/api/v1/verifications`);
        const req = httpRequest(
          {
            host: url.hostname,
            port: url.port,
            path: url.pathname,
            method: 'POST',
            headers: { ...headers, 'idempotency-key': randomUUID(), 'content-length': body.length },
          },
          (res) => {
            res.resume();
            res.on('end', () => resolve({ status: res.statusCode!, connection: res.headers.connection }));
          },
        );
        req.on('error', reject);
        const pieces = 6;
        const size = Math.ceil(body.length / pieces);
        for (let p = 0; p < pieces; p++)
          setTimeout(
            () => (p === pieces - 1 ? req.end(body.subarray(p * size)) : req.write(body.subarray(p * size, (p + 1) * size))),
            (p * SLOW_UPLOAD_MS) / pieces,
          );
      });

    const clients = Array.from({ length: CONNECTIONS }, (_, n) => client(n));
    await new Promise((r) => setTimeout(r, LOAD_BEFORE_SIGTERM_MS - SLOW_UPLOAD_MS / 2));
    const uploads = Array.from({ length: SLOW_UPLOADS }, slowUpload);
    await new Promise((r) => setTimeout(r, SLOW_UPLOAD_MS / 2));
    const answeredBeforeSigterm = outcomes.length;
    sigtermAt = Date.now();
    child.kill('SIGTERM');
    const exited = once(child, 'exit').then(([code]) => ({ code: code as number | null, tookMs: Date.now() - sigtermAt }));
    const slow = await Promise.all(uploads);
    await Promise.all(clients);
    const { code, tookMs } = await exited;
    await pool.close();

    const failed = outcomes.filter((o) => o.kind === 'failed');
    const answered = outcomes.filter((o) => o.kind === 'answered').length;
    const refused = outcomes.filter((o) => o.kind === 'refused').length;
    const retried = outcomes.filter((o) => o.kind === 'answered' && o.retried).length;
    console.log(
      `      ${answeredBeforeSigterm} answered before SIGTERM, ${answered - answeredBeforeSigterm} after it (${retried} after a retry of a request sent on a connection closed as idle), ` +
        `${refused} refused before sending, ${failed.length} failed; exit ${tookMs} ms after SIGTERM`,
    );
    assert.deepEqual(failed, [], 'requests failed instead of being answered or refused');
    assert.ok(answered > answeredBeforeSigterm, 'no request was in flight at the signal');
    assert.equal(refused, CONNECTIONS, 'every client ended on a refused connection');
    for (const upload of slow) assert.deepEqual(upload, { status: 201, connection: 'close' });
    assert.equal(code, 0);
    // Every request was short: the process must not sit out its grace period.
    assert.ok(tookMs < GRACE_MS / 2, `exited ${tookMs} ms after SIGTERM`);
  });
});
