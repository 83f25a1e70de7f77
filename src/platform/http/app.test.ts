import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { Writable } from 'node:stream';
import type { RequestHandler } from 'express';
import request from 'supertest';
import { AccountsRepository } from '../../accounts/accounts-repository.ts';
import * as admin from '../../accounts/lender-admin.ts';
import { adminContext } from '../../admin/admin-context.ts';
import { startService, type Service } from '../../service.ts';
import { loadConfig, type Config } from '../config.ts';
import { testDatabases, type TestDatabase } from '../../../test/support/test-databases.ts';
import { createLogger } from '../logger.ts';
import { loadApiDocument, type Json } from './api-document.ts';
import { authenticate } from '../../accounts/http/authenticate.ts';
import { createHttpApp, inSeries } from './app.ts';
import { withoutSecrets } from './request-log.ts';
import type { OperationHandler } from './operation-handler.ts';
import { RateLimits } from './rate-limit.ts';

/** Captures every log line so tests can prove what never reaches the log. */
function captureLog() {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      lines.push(String(chunk));
      done();
    },
  });
  return { logger: createLogger({ level: 'debug', destination: stream }), text: () => lines.join('') };
}

/** The request log's lines written since `before` (a length of the captured text), parsed. */
function requestLines(log: { text(): string }, before: number): Array<Record<string, unknown>> {
  return log
    .text()
    .slice(before)
    .split('\n')
    .filter((line) => line.includes('"request completed"'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

async function withService(env: Record<string, string>, testDb: TestDatabase) {
  const config: Config = loadConfig({ DATABASE_URL: testDb.url, VALIDATE_RESPONSES: '1', ...env });
  const log = captureLog();
  const service = await startService(config, log.logger);
  const ctx = adminContext(config, new AccountsRepository(service.db.knex));
  return { service, log, ctx, config };
}

async function lenderWithKey(ctx: admin.AdminContext, role: 'lender' | 'gdpr_admin' = 'lender') {
  const lender = await admin.createLender(ctx, { name: `Lender ${Math.random()}` });
  const { apiKey } = await admin.createKey(ctx, { lenderId: lender.id, role });
  return { lender, apiKey };
}

async function insertVerification(service: Service, lenderId: string, id: string) {
  const at = '2026-11-21T10:00:00.000Z';
  await service.db.knex('verifications').insert({
    id,
    lender_id: lenderId,
    obligor_reference: 'obligor-1',
    creator_platforms: JSON.stringify(['youtube', 'stripe']),
    lender_name: 'Northwind Capital',
    product_type: 'rbf',
    status: 'pending_consent',
    consent_token_hash: id.padEnd(64, '0'),
    consent_url: 'http://127.0.0.1:8080/consent/cst_abcdefghijklmnopqrstuvwxyz',
    expires_at: '2026-11-28T10:00:00.000Z',
    created_at: at,
    updated_at: at,
  });
}

for (const factory of testDatabases()) {
  describe(`HTTP app on ${factory.name}`, () => {
    let testDb: TestDatabase;
    let setup: Awaited<ReturnType<typeof withService>>;

    before(async () => {
      testDb = await factory.create();
      setup = await withService({}, testDb);
    });
    after(async () => {
      await setup.service.close();
      await testDb.drop();
    });

    it('answers a lender only about its own verifications (tenant isolation)', async () => {
      const owner = await lenderWithKey(setup.ctx);
      const other = await lenderWithKey(setup.ctx);
      await insertVerification(setup.service, owner.lender.id, 'vrf_isolationCheck0001');
      const own = await request(setup.service.app).get('/api/v1/verifications/vrf_isolationCheck0001').auth(owner.apiKey, { type: 'bearer' });
      assert.equal(own.status, 200);
      assert.equal(own.body.verification_id, 'vrf_isolationCheck0001');
      assert.deepEqual(own.body.platform_connections, [
        { platform: 'youtube', status: 'not_connected' },
        { platform: 'stripe', status: 'not_connected' },
      ]);
      const foreign = await request(setup.service.app).get('/api/v1/verifications/vrf_isolationCheck0001').auth(other.apiKey, { type: 'bearer' });
      assert.equal(foreign.status, 404);
      assert.equal(foreign.body.error, 'not_found');
    });

    it('authenticates exactly the paths under /api/v1, as a mounted prefix of whole segments would', async () => {
      const { apiKey } = await lenderWithKey(setup.ctx);
      for (const path of ['/api/v1', '/api/v1/', '/api/v1/verifications/vrf_unknown', '/api/v1/no-such-route']) {
        const anonymous = await request(setup.service.app).get(path);
        assert.equal(anonymous.status, 401, `${path} without a key`);
        assert.equal(anonymous.headers['x-ratelimit-limit'], '120', `${path}: counted against the client address`);
      }
      for (const path of ['/api/v1x/verifications', '/API/v1/verifications', '/api/V1/verifications', '/api', '/apiv1/verifications']) {
        const anonymous = await request(setup.service.app).get(path);
        assert.equal(anonymous.status, 404, `${path} without a key`);
        assert.equal(anonymous.body.error, 'not_found');
      }
      // Authenticated, counted, then matched against the contract, in that order.
      const unknown = await request(setup.service.app).get('/api/v1/no-such-route').auth(apiKey, { type: 'bearer' });
      assert.equal(unknown.status, 404);
      assert.equal(unknown.body.error, 'not_found');
      assert.ok(unknown.headers['x-ratelimit-remaining'], 'the unknown route was counted against the key');
      const known = await request(setup.service.app).get('/api/v1/verifications/vrf_unknown').auth(apiKey, { type: 'bearer' });
      assert.equal(known.status, 404);
      assert.equal(Number(known.headers['x-ratelimit-remaining']), Number(unknown.headers['x-ratelimit-remaining']) - 1);
    });

    it('takes an email or an obligor reference with @, : and / unencoded in the query, as RFC 3986 allows there', async () => {
      const lender = await lenderWithKey(setup.ctx);
      const gdpr = await admin.createKey(setup.ctx, { lenderId: lender.lender.id, role: 'gdpr_admin' });
      const reference = `loan/2026:${randomUUID().slice(0, 8)}@north`;
      const created = await request(setup.service.app)
        .post('/api/v1/verifications')
        .auth(lender.apiKey, { type: 'bearer' })
        .set('Idempotency-Key', randomUUID())
        .send({ obligor_reference: reference, creator_platforms: ['youtube'] });
      assert.equal(created.status, 201, created.text);
      const get = (path: string, key: string) => request(setup.service.app).get(path).auth(key, { type: 'bearer' });

      // Written into the request line byte for byte: supertest sends the path as given.
      const listed = await get(`/api/v1/verifications?obligor_reference=${reference}`, lender.apiKey);
      assert.equal(listed.status, 200, listed.text);
      assert.deepEqual(
        listed.body.data.map((v: { verification_id: string }) => v.verification_id),
        [created.body.verification_id],
      );
      for (const operation of ['access', 'export']) {
        const byReference = await get(`/api/v1/gdpr/${operation}?obligor_id=${reference}`, gdpr.apiKey);
        assert.equal(byReference.status, 200, `${operation}: ${byReference.text}`);
        // Nobody connected with this address: found by nothing, not refused for its `@`.
        const byEmail = await get(`/api/v1/gdpr/${operation}?email=ana.creator@example.com`, gdpr.apiKey);
        assert.equal(byEmail.status, 404, `${operation}: ${byEmail.text}`);
        assert.equal(byEmail.body.error, 'not_found');
      }
      // A raw `+` is a space in a query string: the address it leaves is no email.
      const plus = await get('/api/v1/gdpr/access?email=ana+loans@example.com', gdpr.apiKey);
      assert.equal(plus.status, 400, plus.text);
      assert.equal(plus.body.error, 'validation_error');
      assert.equal((await get('/api/v1/gdpr/access?email=ana%2Bloans@example.com', gdpr.apiKey)).status, 404);
    });

    it('refuses an empty erase body in the validator (minProperties), naming the fields it may hold', async () => {
      const lender = await lenderWithKey(setup.ctx);
      const gdpr = await admin.createKey(setup.ctx, { lenderId: lender.lender.id, role: 'gdpr_admin' });
      const response = await request(setup.service.app).post('/api/v1/gdpr/erase').auth(gdpr.apiKey, { type: 'bearer' }).send({});
      assert.equal(response.status, 400, response.text);
      assert.equal(response.body.error, 'validation_error');
      assert.deepEqual(response.body.details, [{ field: 'body', issue: 'must not be empty: give at least one of email, obligor_id' }]);
    });

    /** A creation whose body lacks `obligor_reference`, sent with that Content-Type. */
    const postIncomplete = (apiKey: string, contentType: string) =>
      request(setup.service.app)
        .post('/api/v1/verifications')
        .auth(apiKey, { type: 'bearer' })
        .set('content-type', contentType)
        .set('idempotency-key', randomUUID())
        .send('{"creator_platforms": ["youtube"]}');

    it('judges each request body by its own Content-Type, whatever the requests before it sent', async () => {
      const { apiKey } = await lenderWithKey(setup.ctx);
      const post = (contentType: string) => postIncomplete(apiKey, contentType);
      for (let round = 0; round < 2; round++) {
        for (const type of ['application/json', 'text/plain', 'application/json; charset=utf-8', 'TEXT/PLAIN; charset=utf-8']) {
          const response = await post(type);
          assert.equal(response.status, 400, `${type}: ${response.text}`);
          assert.equal(response.body.error, 'bad_request', `${type}: ${response.text}`);
          // A JSON body is read and found incomplete; any other media type is refused unread.
          assert.match(
            response.body.message,
            type.startsWith('application/json') ? /obligor_reference/ : /media type|content.type/i,
            `${type}: ${response.text}`,
          );
        }
      }
    });

    it('compiles no new validator for a Content-Type that differs only in what cannot change the validation', async () => {
      const { apiKey } = await lenderWithKey(setup.ctx);
      // express-openapi-validator compiles its validators with Ajv (addSchema) on first use per key,
      // a key that holds the Content-Type it is given: content-type.ts gives it a few per operation.
      const added = countAjvSchemasAdded();
      try {
        const post = (contentType: string) => postIncomplete(apiKey, contentType);
        const get = (contentType: string) =>
          request(setup.service.app).get('/api/v1/verifications').auth(apiKey, { type: 'bearer' }).set('content-type', contentType);
        // Each operation and body media type compiles once (or was compiled by an earlier test)...
        await post('application/json');
        await get('application/json');
        const before = added.count;
        // ...and parameters a caller may vary without end, or a media type on a request without a
        // body, compile nothing more, while each request is still judged as before.
        for (let i = 0; i < 20; i++) {
          const created = await post(`application/json; v=${i}`);
          assert.equal(created.status, 400, created.text);
          assert.match(created.body.message, /obligor_reference/);
          // A 200 goes through the response validator too (on in these tests).
          const read = await get(`application/x-${i}; v=${i}`);
          assert.equal(read.status, 200, read.text);
        }
        const refused = await post('text/plain; v=1');
        assert.equal(refused.status, 400, refused.text);
        assert.match(refused.body.message, /media type|content.type/i);
        assert.equal(added.count, before, 'validators compiled for Content-Type variants');
      } finally {
        added.restore();
      }
    });

    it("routes each request to the operation the validator matched, with that operation's path parameters decoded", async () => {
      const { lender, apiKey } = await lenderWithKey(setup.ctx);
      await insertVerification(setup.service, lender.id, 'vrf_routedByOperation1');
      const get = (path: string) => request(setup.service.app).get(path).auth(apiKey, { type: 'bearer' });
      // A percent-encoded "v" and "_": the handler sees the decoded identifier, as Express's own routes gave it.
      const status = await get('/api/v1/verifications/%76rf%5FroutedByOperation1');
      assert.equal(status.status, 200, status.text);
      assert.equal(status.body.verification_id, 'vrf_routedByOperation1');
      assert.ok(status.body.platform_connections, 'the status operation answered');
      // The longer path is another operation (the tape), not the status read with a longer identifier.
      const tape = await get('/api/v1/verifications/vrf_routedByOperation1/tape');
      assert.match(tape.body.message, /its tape exists once it is completed/, 'the tape operation answered');
      const malformed = await get('/api/v1/verifications/%E0%A4%A');
      assert.equal(malformed.status, 400, malformed.text);
    });

    it('lets no other site frame the API docs or the changelog, like every other page', async () => {
      for (const path of ['/docs', '/docs/changelog']) {
        const response = await request(setup.service.app).get(path);
        assert.equal(response.status, 200, path);
        assert.match(response.headers['content-security-policy'] ?? '', /(^|;\s*)frame-ancestors 'none'(;|$)/, path);
        assert.equal(response.headers['x-frame-options'], 'DENY', path);
      }
    });

    it('serves the changelog as an HTML page rendered from docs/changelog.md, under a policy that allows no script', async () => {
      const response = await request(setup.service.app).get('/docs/changelog');
      assert.equal(response.status, 200);
      assert.match(response.headers['content-type'] ?? '', /^text\/html; charset=utf-8$/);
      assert.match(response.text, /<h1>Changelog<\/h1>/);
      assert.match(response.text, /<h2>2026-03-19: API v1 and Risk Tape schema 1\.0\.0<\/h2>/);
      assert.match(response.text, /<code>declared_monthly_obligations_eur<\/code>/);
      assert.doesNotMatch(response.text, /<script|^#+ /m);
      // A link to another file of the repository, which no route serves, is left as its text.
      assert.doesNotMatch(response.text, /href="(?!\/|https:)/);
      const policy = response.headers['content-security-policy'] ?? '';
      assert.match(policy, /(^|; )default-src 'none'(;|$)/);
      assert.match(policy, /(^|; )style-src 'sha256-[A-Za-z0-9+/]+=*'(;|$)/);
      assert.doesNotMatch(policy, /script-src|unsafe/);
    });

    it('serves the published documents only at their exact paths (strict, case-sensitive)', async () => {
      for (const path of ['/openapi.json', '/docs', '/docs/changelog', '/asyncapi.yaml']) {
        assert.equal((await request(setup.service.app).get(path)).status, 200, path);
      }
      for (const path of ['/openapi.json/', '/OPENAPI.json', '/docs/', '/Docs', '/docs/changelog/', '/docsx']) {
        const response = await request(setup.service.app).get(path);
        assert.equal(response.status, 404, path);
        assert.equal(response.body.error, 'not_found', path);
      }
      // Another method is no route either (D7): Express's router would otherwise answer OPTIONS itself
      // (200, "GET, HEAD"), and express.static other methods on its files (405, an empty body).
      for (const path of ['/openapi.json', '/docs/assets/swagger-ui.css', '/schemas/']) {
        for (const method of ['options', 'post', 'put', 'delete'] as const) {
          const response = await request(setup.service.app)[method](path);
          assert.equal(response.status, 404, `${method} ${path}`);
          assert.equal(response.body.error, 'not_found', `${method} ${path}`);
        }
      }
      assert.equal((await request(setup.service.app).get('/docs/assets/swagger-ui.css')).status, 200);
      assert.equal((await request(setup.service.app).head('/docs/assets/swagger-ui.css')).status, 200);
    });

    it('serves the operations outside /api/v1 only at their exact paths too', async () => {
      for (const path of ['/healthz', '/.well-known/jwks.json']) {
        assert.equal((await request(setup.service.app).get(path)).status, 200, path);
      }
      // express-openapi-validator's own route patterns take a trailing slash; the contract does not.
      for (const path of ['/healthz/', '/readyz/', '/.well-known/jwks.json/', '/HEALTHZ']) {
        const response = await request(setup.service.app).get(path);
        assert.equal(response.status, 404, path);
        assert.equal(response.body.error, 'not_found', path);
      }
    });

    it('answers HEAD as the GET of the same path without its body (load balancers probe so), and only where a GET exists', async () => {
      const { lender, apiKey } = await lenderWithKey(setup.ctx);
      await insertVerification(setup.service, lender.id, 'vrf_headCheck000000001');
      const app = setup.service.app;
      for (const [path, key] of [
        ['/healthz', null],
        ['/readyz', null],
        ['/.well-known/jwks.json', null],
        ['/api/v1/verifications/vrf_headCheck000000001', apiKey],
        ['/api/v1/verifications?limit=1', apiKey],
      ] as const) {
        const get = await (key ? request(app).get(path).auth(key, { type: 'bearer' }) : request(app).get(path));
        const head = await (key ? request(app).head(path).auth(key, { type: 'bearer' }) : request(app).head(path));
        assert.equal(get.status, 200, `GET ${path}: ${get.text}`);
        assert.equal(head.status, 200, `HEAD ${path}`);
        assert.equal(head.text ?? '', '', `HEAD ${path} has no body`);
        for (const header of ['content-type', 'content-length', 'cache-control']) {
          assert.equal(head.headers[header], get.headers[header], `HEAD ${path}: ${header}`);
        }
      }
      // A HEAD is checked as its GET is: an unknown query parameter is refused, with no body either.
      const refused = await request(app).head('/healthz?verbose=1');
      assert.equal(refused.status, 400);
      assert.equal(refused.text ?? '', '');
      // No GET, no HEAD: a path with only a POST, and one the contract does not have.
      for (const path of ['/api/v1/verifications/vrf_headCheck000000001/cancel', '/api/v1/no-such-route']) {
        assert.equal((await request(app).head(path).auth(apiKey, { type: 'bearer' })).status, 404, `HEAD ${path}`);
      }
      assert.equal((await request(app).head('/healthz/')).status, 404);
    });

    it('refuses a gdpr_admin key on lender operations with 403', async () => {
      const { apiKey } = await lenderWithKey(setup.ctx, 'gdpr_admin');
      const response = await request(setup.service.app).get('/api/v1/verifications/vrf_any').auth(apiKey, { type: 'bearer' });
      assert.equal(response.status, 403);
      assert.equal(response.body.error, 'forbidden');
    });

    it('never writes an API key or the Authorization header to the log', async () => {
      const { apiKey } = await lenderWithKey(setup.ctx);
      await request(setup.service.app).get('/api/v1/verifications/vrf_unknown').auth(apiKey, { type: 'bearer' });
      await request(setup.service.app).get('/api/v1/verifications/vrf_unknown').set('Authorization', `Bearer ${apiKey}x`);
      setup.log.logger.info({ authorization: `Bearer ${apiKey}`, nested: { apiKey } }, 'careless log line');
      const text = setup.log.text();
      assert.ok(text.includes('vrf_unknown'), 'the requests were not logged at all');
      assert.ok(!text.includes(apiKey.slice(9)), 'a key reached the log');
      assert.ok(text.includes('[redacted]'));
    });

    it('writes one request line per request with only its fixed fields, none of them secret (it skips redaction)', async () => {
      const { apiKey } = await lenderWithKey(setup.ctx);
      const before = setup.log.text().length;
      await request(setup.service.app).get('/api/v1/verifications/vrf_requestLine01?token=query-secret').auth(apiKey, { type: 'bearer' });
      await request(setup.service.app).get('/api/v1/verifications').set('Authorization', `Bearer ${apiKey}x`);
      const consent = await request(setup.service.app).get('/consent/cst_consentTokenSecret0123456789?state=s');
      const lines = requestLines(setup.log, before);
      assert.equal(lines.length, 3);
      const fields = ['level', 'time', 'service', 'requestId', 'method', 'path', 'status', 'ms', 'remoteAddress', 'lenderId', 'keyId', 'msg'];
      for (const line of lines)
        assert.deepEqual(
          Object.keys(line).filter((field) => !fields.includes(field)),
          [],
          JSON.stringify(line),
        );
      assert.deepEqual(
        lines.map((line) => [line.path, line.status]),
        [
          ['/api/v1/verifications/vrf_requestLine01', 400],
          ['/api/v1/verifications', 401],
          ['/consent/:token', consent.status],
        ],
      );
      const text = setup.log.text().slice(before);
      for (const secret of ['query-secret', 'cst_consentTokenSecret', apiKey.slice(9)]) assert.ok(!text.includes(secret), `${secret} reached the log`);
    });

    it("logs no address for a creator's consent pages, and the caller's address for everything else", async () => {
      const before = setup.log.text().length;
      const creator = '198.51.100.23';
      for (const path of ['/consent/cst_consentTokenSecret0123456789', '/consent/privacy', '/consent/oauth/youtube/callback?state=s', '/healthz'])
        await request(setup.service.app).get(path).set('X-Forwarded-For', creator);
      const lines = requestLines(setup.log, before);
      assert.deepEqual(
        lines.map((line) => [line.path, 'remoteAddress' in line]),
        [
          ['/consent/:token', false],
          ['/consent/:token', false],
          ['/consent/oauth/youtube/callback', false],
          ['/healthz', true],
        ],
      );
      assert.ok(!setup.log.text().slice(before).includes(creator));
      assert.match(String(lines[3]!.remoteAddress), /127\.0\.0\.1|::1/);
    });

    it('answers 503 service_unavailable with Retry-After when the database is gone', async () => {
      const scratch = await factory.create();
      const broken = await withService({}, scratch);
      const { apiKey } = await lenderWithKey(broken.ctx);
      await broken.service.db.close();
      for (const path of ['/api/v1/verifications/vrf_unknown', '/readyz']) {
        const response = await request(broken.service.app).get(path).auth(apiKey, { type: 'bearer' });
        assert.equal(response.status, 503, path);
        assert.equal(response.body.error, 'service_unavailable');
        assert.ok(Number(response.headers['retry-after']) >= 1);
      }
      await scratch.drop();
    });
  });
}

describe('HTTP app error handling', () => {
  const logger = captureLog().logger;
  const accounts = {
    findPrincipalByKeyHash: async () => ({ keyId: 'key_test', role: 'lender', lender: { id: 'lnd_test', plan: 'pilot', ipAllowlist: [] }, keyRateLimit: null }),
  } as unknown as AccountsRepository;
  const rateLimits = new RateLimits({ dialect: 'sqlite', knex: undefined as never });
  const authenticateWithStubAccounts = authenticate({ accounts, mode: 'sandbox', limits: rateLimits });
  const build = (handlers: Parameters<typeof createHttpApp>[0]['handlers'], validateResponses = true) =>
    createHttpApp({
      config: { mode: 'sandbox', trustProxy: false, validateResponses },
      logger,
      authenticate: authenticateWithStubAccounts,
      rateLimits,
      apiDocument: loadApiDocument(),
      handlers,
      pendingOperations: {},
    });

  it('turns an uncaught exception into internal_error without a stack trace', async () => {
    const app = build({
      getHealth: async () => {
        throw new Error('secret internals at /srv/app/src/file.ts:12');
      },
    });
    const response = await request(app).get('/healthz');
    assert.equal(response.status, 500);
    assert.equal(response.body.error, 'internal_error');
    assert.ok(!JSON.stringify(response.body).includes('/srv/app'));
    assert.match(response.headers['content-type'] ?? '', /application\/json/);
  });

  it('says in words that a platform is listed twice, not in the validator\'s "items ## 0 and 1"', async () => {
    const response = await request(build({}))
      .post('/api/v1/verifications')
      .set('authorization', `Bearer civ_test_${'a'.repeat(32)}`)
      .set('idempotency-key', '7d1e6a55-2f4b-4f5e-9a35-1c2b3d4e5f60')
      .send({ obligor_reference: 'obligor-1', creator_platforms: ['youtube', 'youtube'] });
    assert.equal(response.status, 400);
    assert.equal(response.body.error, 'validation_error');
    assert.equal(response.body.message, 'body.creator_platforms: must not list the same value twice (items 0 and 1 are the same)');
    assert.doesNotMatch(JSON.stringify(response.body), /##/);
  });

  it('refuses a response that breaks the contract when response validation is on', async () => {
    // A handler the type check would refuse: the validator is the last line when types are bypassed.
    const breaksContract = async () => ({ status: 200, body: { status: 'fine', extra: true } });
    const app = build({ getHealth: breaksContract as unknown as OperationHandler<'getHealth'> });
    const response = await request(app).get('/healthz');
    assert.equal(response.status, 500);
    assert.equal(response.body.error, 'internal_error');
  });

  it('sends a pre-serialised body byte for byte, and still validates its value', async () => {
    // Spacing Express would never write: what arrives is the handler's bytes, not a serialisation of the value.
    const serialized = '{ "status" : "ok" }';
    const app = build({ getHealth: async () => ({ status: 200, body: { status: 'ok' }, serialized }) });
    const response = await request(app).get('/healthz');
    assert.equal(response.status, 200);
    assert.equal(response.text, serialized);
    assert.match(response.headers['content-type'] ?? '', /application\/json/);

    const breaksContract = async () => ({ status: 200, body: { status: 'fine' }, serialized: '{"status":"fine"}' });
    const refused = await request(build({ getHealth: breaksContract as unknown as OperationHandler<'getHealth'> })).get('/healthz');
    assert.equal(refused.status, 500);
    assert.equal(refused.body.error, 'internal_error');
  });

  it('sends a pre-serialised body byte for byte without the response validator, the value never read', async () => {
    const serialized = '{ "status" : "ok" }';
    // A tape's value is parsed from its stored text only when read (tapeResponseForLender).
    const response_ = {
      status: 200,
      get body(): never {
        throw new Error('the value was read although its bytes were given');
      },
      serialized,
    };
    const app = build({ getHealth: (async () => response_) as unknown as OperationHandler<'getHealth'> }, false);
    const response = await request(app).get('/healthz');
    assert.equal(response.status, 200);
    assert.equal(response.text, serialized);
    assert.equal(response.headers['content-type'], 'application/json; charset=utf-8');
  });

  it('answers operations without a handler with 503 naming the operation', async () => {
    const app = build({});
    const response = await request(app).get('/api/v1/webhooks').auth('civ_test_AnyWellFormedKey0000000000', { type: 'bearer' });
    assert.equal(response.status, 503);
    assert.equal(response.body.error, 'service_unavailable');
    assert.match(response.body.message, /listWebhooks/);
  });

  it('refuses to build an app from a spec with a schema Ajv rejects, checked again once the same document changed', () => {
    const document = loadApiDocument();
    const appOf = () =>
      createHttpApp({
        config: { mode: 'sandbox', trustProxy: false, validateResponses: false },
        logger,
        authenticate: authenticateWithStubAccounts,
        rateLimits,
        apiDocument: document,
        handlers: {},
        pendingOperations: {},
      });
    appOf();
    const health = document.components!.schemas!.Health as { properties: Record<string, Json> };
    health.properties.status = { type: 'string', pattern: '([' };
    assert.throws(appOf, /schemas Ajv refuses[\s\S]*Health/);
  });
});

describe('production mode', () => {
  let testDb: TestDatabase;
  let setup: Awaited<ReturnType<typeof withService>>;
  const key = 'a'.repeat(64);

  before(async () => {
    testDb = await testDatabases()[0]!.create();
    setup = await withService({ SERVICE_MODE: 'production', ENCRYPTION_KEY: key }, testDb);
  });
  after(async () => {
    await setup.service.close();
    await testDb.drop();
  });

  it('has no demo key and refuses sandbox keys', async () => {
    const response = await request(setup.service.app)
      .get('/api/v1/verifications/vrf_unknown')
      .auth(setup.config.demoApiKey ?? 'civ_test_PublicSandboxDemoKey0000000000', { type: 'bearer' });
    assert.equal(response.status, 401);
    assert.match(response.body.message, /sandbox key/);
  });

  it('enforces the lender IP allowlist with 403 and allows listed addresses', async () => {
    const { lender, apiKey } = await lenderWithKey(setup.ctx);
    assert.ok(apiKey.startsWith('civ_live_'));
    const call = () => request(setup.service.app).get('/api/v1/verifications/vrf_unknown').auth(apiKey, { type: 'bearer' });
    assert.equal((await call()).status, 404, 'an empty allowlist allows all');
    await admin.updateLender(setup.ctx, { id: lender.id, allowlist: ['10.0.0.0/8'] });
    const outside = await call();
    assert.equal(outside.status, 403);
    assert.equal(outside.body.error, 'forbidden');
    await admin.updateLender(setup.ctx, { id: lender.id, allowlist: ['10.0.0.0/8', '127.0.0.1'] });
    assert.equal((await call()).status, 404);
  });
});

describe('a sandbox started with TRUST_PROXY=true', () => {
  it('starts, but warns at start that any client can then choose its address', async () => {
    const testDb = await testDatabases()[0]!.create();
    const setup = await withService({ TRUST_PROXY: 'true' }, testDb);
    try {
      const warning = setup.log
        .text()
        .split('\n')
        .filter((line) => line.includes('TRUST_PROXY=true'))
        .map((line) => JSON.parse(line) as { level: number; msg: string });
      assert.equal(warning.length, 1);
      assert.equal(warning[0]!.level, 40);
      assert.match(warning[0]!.msg, /number of proxies/);
    } finally {
      await setup.service.close();
      await testDb.drop();
    }
  });
});

describe('production mode behind one proxy (TRUST_PROXY=1)', () => {
  let testDb: TestDatabase;
  let setup: Awaited<ReturnType<typeof withService>>;
  // The proxy (this test, at 127.0.0.1) appends the address it saw; a client may write anything before it.
  const through = (client: string, forged: string) => ({ 'X-Forwarded-For': `${forged}, ${client}` });

  before(async () => {
    testDb = await testDatabases()[0]!.create();
    setup = await withService({ SERVICE_MODE: 'production', ENCRYPTION_KEY: 'b'.repeat(64), TRUST_PROXY: '1' }, testDb);
  });
  after(async () => {
    await setup.service.close();
    await testDb.drop();
  });

  it("checks the IP allowlist against the address the proxy saw, not a client's forged X-Forwarded-For", async () => {
    const { lender, apiKey } = await lenderWithKey(setup.ctx);
    await admin.updateLender(setup.ctx, { id: lender.id, allowlist: ['10.0.0.0/8'] });
    const call = (headers: Record<string, string>) =>
      request(setup.service.app).get('/api/v1/verifications/vrf_unknown').auth(apiKey, { type: 'bearer' }).set(headers);
    const forged = await call(through('203.0.113.7', '10.1.2.3'));
    assert.equal(forged.status, 403, 'an allowlisted address written by the client does not let it in');
    assert.equal(forged.body.error, 'forbidden');
    assert.equal((await call(through('10.9.9.9', '203.0.113.7'))).status, 404, 'the allowlisted address the proxy saw is let in');
  });

  it('counts unauthenticated requests against the address the proxy saw, whatever the client forges', async () => {
    const remaining = async (headers: Record<string, string>) =>
      Number(
        (await request(setup.service.app).get('/api/v1/verifications').auth('civ_live_wrong', { type: 'bearer' }).set(headers)).headers[
          'x-ratelimit-remaining'
        ],
      );
    const first = await remaining(through('198.51.100.40', '192.0.2.1'));
    const second = await remaining(through('198.51.100.40', '192.0.2.2'));
    const third = await remaining(through('198.51.100.40', '192.0.2.3'));
    assert.deepEqual([second, third], [first - 1, first - 2], 'one counter for one client, though each request forged another address');
    assert.equal(await remaining(through('198.51.100.41', '192.0.2.1')), first, 'another client has a counter of its own');
  });
});

describe('one layer for several handlers (inSeries)', () => {
  type Step = Parameters<RequestHandler>[2];
  /** Runs the series once; what reached the outer `next`, and which handlers ran. */
  async function runSeries(...handlers: Array<(step: Step) => unknown>) {
    const ran: number[] = [];
    const outcome = await new Promise<unknown[]>((resolve) => {
      const series = inSeries(
        handlers.map(
          (handler, index) =>
            ((_req: unknown, _res: unknown, step: Step) => {
              ran.push(index);
              return handler(step);
            }) as RequestHandler,
        ),
      );
      series({} as never, {} as never, (...args: unknown[]) => resolve(args));
    });
    return { outcome, ran };
  }

  it('runs every handler in order, then hands on once', async () => {
    assert.deepEqual(
      await runSeries(
        (step) => step(),
        (step) => setImmediate(() => step()),
        (step) => step(),
      ),
      { outcome: [], ran: [0, 1, 2] },
    );
  });

  it('stops at the first error, passed on, thrown or rejected', async () => {
    const refused = new Error('refused');
    for (const failing of [
      (step: Step) => step(refused),
      () => {
        throw refused;
      },
      async () => Promise.reject(refused),
    ]) {
      assert.deepEqual(
        await runSeries(
          (step) => step(),
          failing,
          (step) => step(),
        ),
        { outcome: [refused], ran: [0, 1] },
      );
    }
  });

  it('turns a rejection with a falsy value into an error, as Express does, so the handlers after it never run', async () => {
    for (const reason of [undefined, null, false, 0, '']) {
      const { outcome, ran } = await runSeries(
        // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- a rejection that is not an Error is what this test is about
        async () => Promise.reject(reason),
        (step) => step(),
      );
      assert.deepEqual(ran, [0], `rejected with ${String(reason)}`);
      assert.ok(outcome[0] instanceof Error, `rejected with ${String(reason)}`);
    }
  });

  it("goes on to the next handler of the series on next('route') or a falsy value, as Express goes on to the next layer", async () => {
    assert.deepEqual(
      await runSeries(
        (step) => step('route'),
        (step) => step(false as never),
        (step) => step(),
      ),
      { outcome: [], ran: [0, 1, 2] },
    );
  });
});

describe('the logged path (withoutSecrets)', () => {
  it('drops the query, a consent token, and the scheme and host of an absolute request target', () => {
    assert.equal(withoutSecrets('/api/v1/verifications/vrf_a?x=secret'), '/api/v1/verifications/vrf_a');
    assert.equal(withoutSecrets('/consent/cst_secretToken?state=s'), '/consent/:token');
    assert.equal(withoutSecrets('/consent/assets/page.js'), '/consent/assets/page.js');
    assert.equal(withoutSecrets('http://service.example/consent/cst_secretToken'), '/consent/:token');
    assert.equal(withoutSecrets('HTTPS://service.example:8443/consent/cst_secretToken/decline?x=1'), '/consent/:token/decline');
  });
});

/** Counts the schemas added to any Ajv instance (the validator's among them) until restored. */
function countAjvSchemasAdded(): { readonly count: number; restore(): void } {
  const core = (createRequire(import.meta.url)('ajv/dist/core') as { default: { prototype: { addSchema: (...args: unknown[]) => unknown } } }).default
    .prototype;
  const addSchema = core.addSchema;
  let count = 0;
  core.addSchema = function (this: unknown, ...args: unknown[]) {
    count++;
    return addSchema.apply(this, args);
  };
  return {
    get count() {
      return count;
    },
    restore: () => {
      core.addSchema = addSchema;
    },
  };
}
