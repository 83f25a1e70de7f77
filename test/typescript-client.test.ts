import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { cpSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createClient, retryingFetch, verifyWebhookSignature } from '../clients/typescript/src/index.ts';
import { signWebhookBodyWith } from '../src/webhooks/verify-signature.ts';
import { loadConfig } from '../src/platform/config.ts';
import { createLogger } from '../src/platform/logger.ts';
import { startService, type Service } from '../src/service.ts';
import { testDatabases, type TestDatabase } from './support/test-databases.ts';

const run = promisify(execFile);
const root = new URL('..', import.meta.url).pathname;
const DEMO_KEY = 'civ_test_PublicSandboxDemoKey0000000000';

/** A fetch answering from a script of statuses, recording what it was sent. */
function scripted(statuses: Array<number | [number, Record<string, string>]>) {
  const sent: Array<{ method: string; url: string; idempotencyKey: string | null; body: string }> = [];
  const fetch = async (request: Request) => {
    sent.push({ method: request.method, url: request.url, idempotencyKey: request.headers.get('idempotency-key'), body: await request.text() });
    const next = statuses[Math.min(sent.length - 1, statuses.length - 1)]!;
    const [status, headers] = typeof next === 'number' ? [next, {}] : next;
    return new Response(JSON.stringify(status < 400 ? { verification_id: 'vrf_x' } : { error: 'x', message: 'y' }), {
      status,
      headers: { 'content-type': 'application/json', ...headers },
    });
  };
  return { fetch, sent };
}

describe('typed TypeScript client: retries, idempotency and signatures', () => {
  const waited: number[] = [];
  const sleep = async (ms: number) => void waited.push(ms);
  beforeEach(() => (waited.length = 0));
  const get = (script: ReturnType<typeof scripted>) => retryingFetch(script.fetch, { sleep })(new Request('https://api.example/api/v1/verifications/vrf_x'));

  it('429 waits the seconds of Retry-After, then retries', async () => {
    const script = scripted([[429, { 'retry-after': '7' }], 200]);
    assert.equal((await get(script)).status, 200);
    assert.deepEqual(waited, [7000]);
  });

  it('500 is retried once after 5 s, then answered as it is', async () => {
    const script = scripted([500, 500, 200]);
    assert.equal((await get(script)).status, 500);
    assert.deepEqual(waited, [5000]);
    assert.equal(script.sent.length, 2);
  });

  it('503 backs off 1, 2, 4 s: at most 3 retries', async () => {
    const script = scripted([503]);
    assert.equal((await get(script)).status, 503);
    assert.deepEqual(waited, [1000, 2000, 4000]);
    assert.equal(script.sent.length, 4);
  });

  it('400, 401, 403, 404, 409 and 422 are never retried', async () => {
    for (const status of [400, 401, 403, 404, 409, 422]) {
      const script = scripted([status, 200]);
      assert.equal((await get(script)).status, status);
      assert.equal(script.sent.length, 1);
    }
    assert.deepEqual(waited, []);
  });

  it('a creation gets an Idempotency-Key, the same one and the same body on every retry', async () => {
    const script = scripted([503, [429, { 'retry-after': '1' }], 201]);
    const client = createClient({ baseUrl: 'https://api.example/', apiKey: DEMO_KEY, fetch: script.fetch, sleep });
    const { response } = await client.api.POST('/api/v1/verifications', {
      params: { header: {} as { 'Idempotency-Key': string } },
      body: { obligor_reference: 'obligor-1', creator_platforms: ['youtube'] },
    });
    assert.equal(response.status, 201);
    assert.equal(script.sent.length, 3);
    const [first] = script.sent;
    assert.match(first!.idempotencyKey ?? '', /^[0-9a-f-]{36}$/);
    for (const attempt of script.sent) {
      assert.equal(attempt.idempotencyKey, first!.idempotencyKey);
      assert.deepEqual(JSON.parse(attempt.body), { obligor_reference: 'obligor-1', creator_platforms: ['youtube'] });
    }
    const second = scripted([201]);
    await createClient({ baseUrl: 'https://api.example', apiKey: DEMO_KEY, fetch: second.fetch, sleep }).api.POST('/api/v1/verifications', {
      params: { header: { 'Idempotency-Key': 'caller-chosen-key-0001' } },
      body: { obligor_reference: 'obligor-1', creator_platforms: ['youtube'] },
    });
    assert.equal(second.sent[0]!.idempotencyKey, 'caller-chosen-key-0001', "the caller's own key is kept");
  });

  it('the webhook verifier takes both header forms, with either secret during an overlap, over the raw body only', () => {
    const body = Buffer.from('{"event":"verification.completed","verification_id":"vrf_1"}');
    assert.ok(verifyWebhookSignature(body, signWebhookBodyWith(body, ['whsec_one']), 'whsec_one'));
    const overlap = signWebhookBodyWith(body, ['whsec_new', 'whsec_old']);
    assert.ok(verifyWebhookSignature(body, overlap, 'whsec_new'));
    assert.ok(verifyWebhookSignature(body.toString('utf8'), overlap, 'whsec_old'));
    assert.equal(verifyWebhookSignature(body, overlap, 'whsec_other'), false);
    assert.equal(verifyWebhookSignature(Buffer.from(JSON.stringify(JSON.parse(body.toString()), null, 1)), overlap, 'whsec_new'), false);
    assert.equal(verifyWebhookSignature(body, undefined, 'whsec_new'), false);
    assert.equal(verifyWebhookSignature(body, 'sha256=zz', 'whsec_new'), false);
  });
});

describe('typed TypeScript client: packed, installed into an empty project and run against a server', function () {
  this.timeout(180_000);
  let dir: string;
  let testDb: TestDatabase;
  let service: Service;
  let server: Server;
  let base: string;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'civ-client-package-'));
    // Packed from a copy, compiled there as its prepack compiles it, so that the checkout gets no dist/.
    const client = join(root, 'clients', 'typescript');
    const copy = join(dir, 'client');
    cpSync(client, copy, { recursive: true, filter: (path) => !/[/\\](dist|node_modules)$/.test(path) });
    await run(process.execPath, [
      join(root, 'node_modules', 'typescript', 'bin', 'tsc'),
      '-p',
      join(client, 'tsconfig.build.json'),
      '--outDir',
      join(copy, 'dist'),
    ]);
    await run('npm', ['pack', '--ignore-scripts', '--pack-destination', dir], { cwd: copy });
    const tarball = readdirSync(dir).find((file) => /^civ-client-.*\.tgz$/.test(file));
    assert.ok(tarball, 'npm pack left a tarball');
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'lender-app', private: true, type: 'module' }));
    await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', join(dir, tarball)], { cwd: dir });
    testDb = await testDatabases()[0]!.create();
    service = await startService(
      loadConfig({ DATABASE_URL: testDb.url, SERVICE_MODE: 'sandbox', VALIDATE_RESPONSES: '1', SANDBOX_COMPLETE_DELAY_MS: '300' }),
      createLogger({ level: 'silent' }),
    );
    // The refresh asked for below runs as a job, as under \`npm start\`.
    service.jobs.start(100);
    server = createServer(service.app).listen(0, '127.0.0.1');
    await once(server, 'listening');
    base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  after(async () => {
    server?.close();
    await service?.close();
    await testDb?.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('creates, reads, pages verifications and webhooks, and verifies a signed tape, through the installed package', async () => {
    // Plain JavaScript in the lender's project, importing the package by its name.
    writeFileSync(
      join(dir, 'app.mjs'),
      `import { createClient } from '@civ/client';
const client = createClient({ baseUrl: process.env.BASE, apiKey: process.env.KEY });
const created = [];
for (const reference of ['demo_prime_multi', 'demo_prime_multi', 'obligor-waiting']) {
  const { data, response } = await client.api.POST('/api/v1/verifications', { body: { obligor_reference: reference, creator_platforms: ['youtube', 'stripe'] } });
  if (response.status !== 201) throw new Error('create: ' + response.status);
  created.push(data.verification_id);
}
for (const reference of ['obligor-helper']) {
  created.push((await client.createVerification({ obligor_reference: reference, creator_platforms: ['youtube'] })).verification_id);
}
const { data: one } = await client.api.GET('/api/v1/verifications/{verification_id}', { params: { path: { verification_id: created[0] } } });
const listed = [];
for await (const v of client.verifications({ limit: 1 })) listed.push(v.verification_id);
for (const n of [1, 2]) {
  await client.api.POST('/api/v1/webhooks', { body: { url: 'https://8.8.8.8/client-' + n, events: ['tape.updated'] } });
}
const hooks = [];
for await (const w of client.webhooks({ limit: 1 })) hooks.push(w.webhook_id);
const { data: paused } = await client.api.PATCH('/api/v1/webhooks/{webhook_id}', { params: { path: { webhook_id: hooks[0] } }, body: { enabled: false } });
const { data: again } = await client.api.GET('/api/v1/webhooks/{webhook_id}', { params: { path: { webhook_id: hooks[0] } } });
const signed = await client.signedTape(created[0], { schemaVersion: '1.2.0' });
const monitored = await client.createVerification({ obligor_reference: 'demo_prime_multi', creator_platforms: ['youtube', 'stripe'], monitoring: { months: 3 } });
const refreshing = await client.refresh(monitored.verification_id);
let refreshed;
for (let i = 0; i < 100; i++) {
  const { data } = await client.api.GET('/api/v1/verifications/{verification_id}', { params: { path: { verification_id: monitored.verification_id } } });
  if (data.monitoring.refresh_requested_at === null) { refreshed = data; break; }
  await new Promise((resolve) => setTimeout(resolve, 100));
}
const history = [];
for await (const t of client.tapes(monitored.verification_id, { limit: 1 })) history.push(t);
const earlier = await client.signedTape(monitored.verification_id, { tapeId: history[1].tape_id });
const stopped = await client.stopMonitoring(monitored.verification_id);
const { response: missing } = await client.api.GET('/api/v1/verifications/{verification_id}', { params: { path: { verification_id: 'vrf_unknown' } } });
console.log(JSON.stringify({ created, status: one.status, listed, hooks: hooks.length, paused: [paused.enabled, again.enabled], tapeVersion: signed.tape.schema_version, kid: signed.kid, missing: missing.status, monitoring: { asked: refreshing.monitoring.refresh_requested_at !== null, refreshed: refreshed?.monitoring.last_refresh_at !== null, history: history.map((t) => t.reason), earlier: earlier.tape.tape_generated_at === history[1].tape_generated_at, stopped: stopped.monitoring.end_reason } }));
`,
    );
    const { stdout } = await run(process.execPath, ['app.mjs'], { cwd: dir, env: { ...process.env, BASE: base, KEY: DEMO_KEY } });
    const result = JSON.parse(stdout) as {
      created: string[];
      status: string;
      listed: string[];
      hooks: number;
      paused: boolean[];
      tapeVersion: string;
      kid: string;
      missing: number;
      monitoring: { asked: boolean; refreshed: boolean; history: string[]; earlier: boolean; stopped: string };
    };
    assert.equal(result.status, 'completed');
    assert.deepEqual(result.listed, [...result.created].reverse(), 'every verification once, newest first, one page at a time');
    assert.equal(result.hooks, 2);
    assert.deepEqual(result.paused, [false, false], 'PATCH through the typed client disabled the endpoint');
    assert.equal(result.tapeVersion, '1.2.0');
    assert.match(result.kid, /^[A-Za-z0-9_-]{43}$/);
    assert.equal(result.missing, 404);
    assert.deepEqual(
      result.monitoring,
      { asked: true, refreshed: true, history: ['refresh', 'completion'], earlier: true, stopped: 'stopped_by_lender' },
      'refresh, the tape history one page at a time, an earlier tape signed, and the stop, through the installed package',
    );
  });
});
