import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { runAdmin } from '../src/admin/run-admin.ts';
import { freePort } from './support/free-port.ts';
import { cpuMicros, serverProcessArgs } from './support/server-process.ts';
import { testDatabases, type TestDatabase } from './support/test-databases.ts';

/**
 * WEB_CONCURRENCY: one command starts several server processes on one port (Node's cluster module)
 * against PostgreSQL. Black-box: the server runs as `npm start` runs it, in its own process.
 */

const root = new URL('..', import.meta.url).pathname;

/** The child processes of `pid` (Linux). */
function childrenOf(pid: number): number[] {
  return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
}

/** One request on a connection of its own, so the cluster may hand each to another process. */
function get(port: number, path: string, key: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, agent: false, headers: { authorization: `Bearer ${key}` } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode!));
    });
    req.on('error', reject);
    req.end();
  });
}

async function until<T>(what: string, probe: () => T | undefined | Promise<T | undefined>, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch {
      // not yet
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const postgres = testDatabases().find((factory) => factory.name === 'postgres');

describe('WEB_CONCURRENCY: several server processes on one port', function () {
  this.timeout(120_000);

  it('refuses to start on SQLite, whose rate limits live in each process', async () => {
    const child = spawn(process.execPath, await serverProcessArgs(), {
      cwd: root,
      env: { ...process.env, PORT: String(await freePort()), DATABASE_URL: 'sqlite::memory:', WEB_CONCURRENCY: '2' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    const [code] = (await once(child, 'exit')) as [number];
    assert.equal(code, 1);
    assert.match(output, /WEB_CONCURRENCY above 1 needs PostgreSQL/);
  });

  describe('on PostgreSQL', function () {
    let testDb: TestDatabase;
    let primary: ChildProcess;
    let port: number;
    let metricsPort: number;
    let key: string;
    let output = '';

    before(async function () {
      if (!postgres) return this.skip();
      testDb = await postgres.create();
      port = await freePort();
      metricsPort = await freePort();
      const env = { DATABASE_URL: testDb.url, SERVICE_MODE: 'sandbox', LOG_LEVEL: 'info' };
      primary = spawn(process.execPath, await serverProcessArgs(), {
        cwd: root,
        env: { ...process.env, ...env, PORT: String(port), HOST: '127.0.0.1', METRICS_PORT: String(metricsPort), WEB_CONCURRENCY: '2' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      primary.stdout!.on('data', (chunk) => (output += chunk));
      primary.stderr!.on('data', (chunk) => (output += chunk));
      await until('both processes to serve', async () =>
        childrenOf(primary.pid!).length === 2 && (await fetch(`http://127.0.0.1:${port}/readyz`)).ok ? true : undefined,
      );
      const lender = await runAdmin(env, ['lender', 'create', '--name', 'Clustered Lender']);
      const created = await runAdmin(env, ['key', 'create', '--lender', lender.id, '--role', 'lender']);
      // What is measured here is the processes, not the sandbox's burst limit.
      await runAdmin(env, ['key', 'limit', '--key-id', created.id, '--rate-limit', '1000000', '--burst', '1000000']);
      key = created.api_key;
    });
    after(async () => {
      if (primary && primary.exitCode === null) {
        primary.kill('SIGKILL');
        for (const pid of childrenOf(primary.pid!)) process.kill(pid, 'SIGKILL');
      }
      await testDb?.drop();
    });

    it('starts two server processes, prints the banner once, and serves from both, counted together on one metrics port', async () => {
      assert.equal(childrenOf(primary.pid!).length, 2);
      assert.equal(output.split('Creator Income Verification Service').length - 1, 1, output);
      const workers = childrenOf(primary.pid!);
      const before = workers.map(cpuMicros);
      const statuses: number[] = [];
      for (let batch = 0; batch < 8; batch++)
        statuses.push(...(await Promise.all(Array.from({ length: 25 }, () => get(port, '/api/v1/verifications/vrf_unknown', key)))));
      assert.deepEqual([...new Set(statuses)], [404]);
      // Each process did a share of the work: the cluster hands connections round-robin.
      const used = workers.map((pid, i) => cpuMicros(pid) - before[i]!);
      assert.ok(Math.min(...used) >= 0.3 * Math.max(...used) && Math.min(...used) > 0, `CPU µs per process: ${used.join(', ')}`);
      const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      // The primary sums its workers' request counts; the database's gauges are the same for each and are not summed.
      assert.match(metrics, /^civ_http_request_duration_seconds_count\{operation="getVerification",status="404"\} 200$/m);
      assert.match(metrics, /^civ_db_reachable 1$/m);
    });

    it('replaces a server process that dies, and keeps answering meanwhile', async () => {
      const [victim, survivor] = childrenOf(primary.pid!);
      process.kill(victim!, 'SIGKILL');
      // A connection handed to the process in the instant it dies is lost with it (Node's cluster);
      // once the primary has seen the death, the survivor takes every connection.
      await until('the primary to notice', () => (output.includes('server process died') ? true : undefined));
      const statuses = await Promise.all(Array.from({ length: 10 }, () => get(port, '/api/v1/verifications/vrf_unknown', key)));
      assert.deepEqual([...new Set(statuses)], [404]);
      const replaced = await until('a replacement process', () => {
        const now = childrenOf(primary.pid!);
        return now.length === 2 && !now.includes(victim!) ? now : undefined;
      });
      assert.ok(replaced.includes(survivor!));
      await until('the replacement to serve', async () => ((await get(port, '/readyz', key)) === 200 ? true : undefined));
    });

    it('stops every server process on SIGTERM and exits 0', async () => {
      const workers = childrenOf(primary.pid!);
      primary.kill('SIGTERM');
      const [code] = (await once(primary, 'exit')) as [number];
      assert.equal(code, 0);
      for (const pid of workers) assert.throws(() => process.kill(pid, 0), /ESRCH/, `process ${pid} is still running`);
    });
  });
});
