import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { AccountsRepository } from '../accounts/accounts-repository.ts';
import * as admin from '../accounts/lender-admin.ts';
import { ManualClock } from '../platform/clock.ts';
import { loadConfig } from '../platform/config.ts';
import { createLogger } from '../platform/logger.ts';
import { adminContext } from '../admin/admin-context.ts';
import { startService, type Service } from '../service.ts';
import { testDatabases, type TestDatabase } from '../../test/support/test-databases.ts';
import { makeTestCertificates, TestReceiver } from '../../test/support/test-receiver.ts';
import { DashboardRepository } from './dashboard-repository.ts';
import { createDashboardUser, deactivateDashboardUser, reactivateDashboardUser, revokeDashboardSessions, type DashboardUsersDeps } from './dashboard-users.ts';
import { SIGN_IN_QUOTA } from './http/dashboard-routes.ts';

const PASSWORD = 'correct horse battery staple';
type Agent = ReturnType<typeof request.agent>;

/** The hidden `_csrf` field of a page's forms. */
const csrfOf = (html: string) => /name="_csrf" value="([^"]+)"/.exec(html)?.[1] ?? assert.fail('no _csrf field on the page');

for (const factory of testDatabases()) {
  describe(`lender dashboard over HTTP on ${factory.name}`, function () {
    this.timeout(60_000);
    let testDb: TestDatabase;
    let service: Service;
    let clock: ManualClock;
    let receiver: TestReceiver;
    let receiverUrl: string;
    let users: DashboardUsersDeps;
    let accounts: AccountsRepository;

    before(async () => {
      testDb = await factory.create();
      const certificates = makeTestCertificates();
      receiver = new TestReceiver(certificates);
      receiverUrl = await receiver.listen();
      clock = new ManualClock('2026-11-21T10:00:00.000Z');
      const config = loadConfig({
        DATABASE_URL: testDb.url,
        WEBHOOK_ALLOW_PRIVATE_TARGETS: '1',
        WEBHOOK_RETRY_SCHEDULE: '0',
        SANDBOX_COMPLETE_DELAY_MS: '2000',
        WEBHOOK_TIMEOUT_MS: '2000',
        LOG_LEVEL: 'silent',
        // The sign-in limit counts per client address: each test that fills it comes from its own.
        TRUST_PROXY: 'loopback',
      });
      service = await startService(config, createLogger({ level: 'silent' }), { clock, webhookCa: certificates.ca });
      accounts = new AccountsRepository(service.db.knex);
      users = { users: new DashboardRepository(service.db.knex), accounts, now: () => clock.now() };
    });
    after(async () => {
      await service?.close();
      await receiver?.close();
      await testDb?.drop();
    });

    /** A lender with an API key and a dashboard user of each role. */
    async function lender() {
      const ctx = adminContext({ mode: 'sandbox' }, accounts, clock);
      const account = await admin.createLender(ctx, { name: `Lender ${randomUUID().slice(0, 8)}` });
      const { apiKey, record } = await admin.createKey(ctx, { lenderId: account.id, role: 'lender' });
      const tag = randomUUID().slice(0, 8);
      const adminUser = await createDashboardUser(users, { lenderId: account.id, email: `admin-${tag}@example.com`, role: 'admin', password: PASSWORD });
      const viewer = await createDashboardUser(users, { lenderId: account.id, email: `viewer-${tag}@example.com`, role: 'viewer', password: PASSWORD });
      const api = {
        post: (path: string, body: object) =>
          request(service.app).post(`/api/v1${path}`).auth(apiKey, { type: 'bearer' }).set('Idempotency-Key', randomUUID()).send(body),
        get: (path: string) => request(service.app).get(`/api/v1${path}`).auth(apiKey, { type: 'bearer' }),
      };
      return { account, keyId: record.id, api, admin: adminUser.user.email, viewer: viewer.user.email };
    }

    async function signIn(email: string, password = PASSWORD): Promise<{ agent: Agent; csrf: string; cookie: string }> {
      const agent = request.agent(service.app);
      const form = await agent.get('/dashboard/sign-in');
      assert.equal(form.status, 200);
      const response = await agent
        .post('/dashboard/sign-in')
        .type('form')
        .send({ _csrf: csrfOf(form.text), email, password });
      assert.equal(response.status, 303, response.text);
      assert.equal(response.headers.location, '/dashboard/verifications');
      const cookie = [response.headers['set-cookie']].flat().find((c) => c?.startsWith('civ_dashboard='));
      assert.ok(cookie, 'a session cookie');
      const page = await agent.get('/dashboard/verifications');
      assert.equal(page.status, 200);
      return { agent, csrf: csrfOf(page.text), cookie };
    }

    /** Sign-in posts without an agent, so many can be sent at once: one form token, any address and client address. */
    async function signInAttempts(): Promise<(email: string, password: string, from: string) => request.Test> {
      const form = await request(service.app).get('/dashboard/sign-in');
      const token = csrfOf(form.text);
      return (email, password, from) =>
        request(service.app)
          .post('/dashboard/sign-in')
          .set('Cookie', `civ_dashboard_login=${token}`)
          .set('X-Forwarded-For', from)
          .type('form')
          .send({ _csrf: token, email, password });
    }

    /** A verification run to completion in the sandbox. */
    async function completed(api: Awaited<ReturnType<typeof lender>>['api'], productType = 'rbf'): Promise<string> {
      const created = await api.post('/verifications', {
        obligor_reference: `test-complete-${randomUUID().slice(0, 8)}`,
        creator_platforms: ['youtube'],
        product_type: productType,
      });
      assert.equal(created.status, 201, created.text);
      clock.advance(5_000);
      await service.jobs.runDue();
      return created.body.verification_id as string;
    }

    /** A verification with ongoing monitoring: the sandbox completes a synthetic creator's at creation. */
    async function monitored(api: Awaited<ReturnType<typeof lender>>['api']): Promise<string> {
      const created = await api.post('/verifications', {
        obligor_reference: 'demo_prime_multi',
        creator_platforms: ['youtube', 'stripe'],
        monitoring: { months: 3 },
      });
      assert.equal(created.status, 201, created.text);
      assert.equal(created.body.status, 'completed');
      assert.equal(created.body.monitoring.state, 'active');
      return created.body.verification_id as string;
    }

    /** The Tape history table's rows: tape id, reason and whether it is the latest. */
    const historyOf = (html: string) => {
      const section = /<section aria-labelledby="tape-history">(.*?)<\/section>/s.exec(html)?.[1] ?? '';
      return [
        ...section.matchAll(
          /<tr><td><a href="[^"]*\?tape_id=(tap_\w+)#tape".*?<\/td>.*?<td>([^<]+)<\/td><td>[^<]+<\/td><td>[^<]+<\/td><td>[^<]+<\/td><td>(latest|—)<\/td><\/tr>/g,
        ),
      ].map((m) => ({ tapeId: m[1]!, reason: m[2]!, latest: m[3] === 'latest' }));
    };

    /** An endpoint whose receiver refuses, and one delivery that failed for good. */
    async function failedDelivery(api: Awaited<ReturnType<typeof lender>>['api']) {
      const path = `/refuses-${randomUUID()}`;
      receiver.answerWith(path, 500);
      const webhook = await api.post('/webhooks', { url: `${receiverUrl}${path}`, events: ['verification.expired'] });
      assert.equal(webhook.status, 201, webhook.text);
      await api.post('/verifications', { obligor_reference: `test-expire-${randomUUID().slice(0, 8)}`, creator_platforms: ['youtube'] });
      clock.advance(5_000);
      await service.jobs.runDue();
      await service.deliveries.runDue();
      const log = await api.get(`/webhooks/${webhook.body.webhook_id}/deliveries`);
      assert.equal(log.body.data[0]?.status, 'failed', log.text);
      return { webhookId: webhook.body.webhook_id as string, secret: webhook.body.secret as string, deliveryId: log.body.data[0].delivery_id as string, path };
    }

    it('shows only its own notices: ?notice= naming what every object has (toString, constructor) shows none', async () => {
      for (const name of ['toString', 'constructor', '__proto__']) {
        const page = await request(service.app).get(`/dashboard/sign-in?notice=${name}`);
        assert.equal(page.status, 200, `${name}: ${page.status}`);
        assert.doesNotMatch(page.text, /class="notice"/, `?notice=${name} showed a notice`);
      }
      const signedOut = await request(service.app).get('/dashboard/sign-in?notice=signed_out');
      assert.match(signedOut.text, /class="notice"[^>]*>You are signed out\./);
    });

    it('signs in with a dashboard user only: cookie HttpOnly and SameSite=Strict, pages need it, a wrong password or a missing form token is refused', async () => {
      const a = await lender();
      assert.equal((await request(service.app).get('/dashboard/verifications')).headers.location, '/dashboard/sign-in');
      const agent = request.agent(service.app);
      const form = await agent.get('/dashboard/sign-in');
      assert.match(form.headers['content-security-policy']!, /default-src 'none'.*form-action 'self'.*frame-ancestors 'none'/);
      const wrong = await agent
        .post('/dashboard/sign-in')
        .type('form')
        .send({ _csrf: csrfOf(form.text), email: a.admin, password: 'not the password' });
      assert.equal(wrong.status, 401);
      assert.ok(![wrong.headers['set-cookie']].flat().some((c) => c?.startsWith('civ_dashboard=')));
      const noToken = await request(service.app).post('/dashboard/sign-in').type('form').send({ email: a.admin, password: PASSWORD });
      assert.equal(noToken.status, 403);
      // An API key is no password here.
      const { cookie } = await signIn(a.admin);
      assert.match(cookie, /HttpOnly/);
      assert.match(cookie, /SameSite=Strict/);
      // A local sandbox over http: without Secure, or the browser would drop it.
      assert.doesNotMatch(cookie, /Secure/);
    });

    it('refuses a form without its session token, with another session token, or posted from another site; the secret stays', async () => {
      const a = await lender();
      const { webhookId, secret } = await failedDelivery(a.api);
      const mine = await signIn(a.admin);
      const other = await signIn(a.viewer);
      const rotate = `/dashboard/webhooks/${webhookId}/rotate-secret`;
      assert.equal((await mine.agent.post(rotate).type('form').send({ overlap_seconds: '0' })).status, 403);
      assert.equal((await mine.agent.post(rotate).type('form').send({ _csrf: other.csrf, overlap_seconds: '0' })).status, 403);
      assert.equal(
        (
          await mine.agent
            .post(rotate)
            .type('form')
            .send({ _csrf: 'x'.repeat(43), overlap_seconds: '0' })
        ).status,
        403,
      );
      const crossSite = await mine.agent.post(rotate).set('Sec-Fetch-Site', 'cross-site').type('form').send({ _csrf: mine.csrf, overlap_seconds: '0' });
      assert.equal(crossSite.status, 403);
      const shown = await mine.agent.post(`/dashboard/webhooks/${webhookId}/secret`).type('form').send({ _csrf: mine.csrf });
      assert.equal(shown.status, 200);
      assert.ok(shown.text.includes(secret), 'the secret is unchanged');
      const rotated = await mine.agent.post(rotate).type('form').send({ _csrf: mine.csrf, overlap_seconds: '0' });
      assert.equal(rotated.status, 200, rotated.text);
      const newSecret = /class="secret" id="secret">(whsec_[A-Za-z0-9]+)</.exec(rotated.text)?.[1];
      assert.ok(newSecret && newSecret !== secret);
    });

    it("keeps each lender to its own data on every page and action: another lender's ids are not found and change nothing", async () => {
      const a = await lender();
      const b = await lender();
      const verificationId = await completed(a.api);
      const { webhookId, deliveryId, secret } = await failedDelivery(a.api);
      const intruder = await signIn(b.admin);
      const list = await intruder.agent.get('/dashboard/verifications');
      assert.ok(!list.text.includes(verificationId));
      for (const path of [
        `/dashboard/verifications/${verificationId}`,
        `/dashboard/verifications/${verificationId}/tape.json?schema_version=2.0.0`,
        `/dashboard/webhooks/${webhookId}`,
      ]) {
        const response = await intruder.agent.get(path);
        assert.equal(response.status, 404, path);
        assert.ok(!response.text.includes(secret));
      }
      assert.ok(!(await intruder.agent.get('/dashboard/webhooks')).text.includes(webhookId));
      const before = (await a.api.get(`/webhooks/${webhookId}`)).body;
      for (const action of ['secret', 'rotate-secret', 'test', 'enabled', 'update', 'delete', `deliveries/${deliveryId}/replay`]) {
        const response = await intruder.agent
          .post(`/dashboard/webhooks/${webhookId}/${action}`)
          .type('form')
          .send({ _csrf: intruder.csrf, enabled: 'false', url: 'https://8.8.8.8/stolen', events: 'tape.updated' });
        assert.equal(response.status, 404, action);
        assert.ok(!response.text.includes(secret), action);
      }
      assert.deepEqual((await a.api.get(`/webhooks/${webhookId}`)).body, before, 'neither disabled nor moved');
      const log = await a.api.get(`/webhooks/${webhookId}/deliveries`);
      assert.equal(log.body.data.length, 1, 'no replay was made');
      assert.equal((await a.api.get(`/webhooks/${webhookId}`)).status, 200, 'not deleted');
      assert.ok(!(await intruder.agent.get('/dashboard/account')).text.includes(a.account.id));
    });

    it('shows a verification, its timeline, tape, benchmark and JSON download at older schema versions', async () => {
      const a = await lender();
      const id = await completed(a.api);
      const { agent } = await signIn(a.viewer);
      const page = await agent.get(`/dashboard/verifications/${id}`);
      assert.equal(page.status, 200);
      for (const text of [
        'pending_consent → processing',
        'processing → completed',
        'verification.completed',
        'Maximum advance',
        'Peer benchmark',
        'Data quality',
      ]) {
        assert.ok(page.text.includes(text), text);
      }
      const filtered = await agent.get('/dashboard/verifications?status=completed&product_type=rbf');
      assert.ok(filtered.text.includes(id));
      assert.ok(!(await agent.get('/dashboard/verifications?status=failed')).text.includes(id));
      const bad = await agent.get('/dashboard/verifications?created_gte=yesterday');
      assert.equal(bad.status, 400);
      assert.match(bad.text, /created_gte is not a date-time/);
      const download = await agent.get(`/dashboard/verifications/${id}/tape.json?schema_version=1.0.0`);
      assert.equal(download.status, 200);
      assert.match(download.headers['content-disposition']!, /attachment/);
      const apiTape = await a.api.get(`/verifications/${id}/tape?schema_version=1.0.0`);
      assert.deepEqual(JSON.parse(download.text), apiTape.body);
    });

    it('offers the tape download only at the schema versions the tape can be rendered at, each of which downloads', async () => {
      const a = await lender();
      const { agent } = await signIn(a.viewer);
      const offered = async (id: string) => {
        const page = await agent.get(`/dashboard/verifications/${id}`);
        assert.equal(page.status, 200);
        const select = /<select id="schema_version" name="schema_version">(.*?)<\/select>/s.exec(page.text)?.[1] ?? '';
        return [...select.matchAll(/<option[^>]*>([^<]+)<\/option>/g)].map((m) => m[1]!);
      };
      const cases = [
        ['rbf', ['2.0.0', '1.2.0', '1.1.0', '1.0.0']],
        ['murabaha', ['2.0.0']],
        ['hpp', ['2.0.0']],
      ] as const;
      for (const [productType, versions] of cases) {
        const id = await completed(a.api, productType);
        assert.deepEqual(await offered(id), versions, productType);
        for (const version of versions) {
          const download = await agent.get(`/dashboard/verifications/${id}/tape.json?schema_version=${version}`);
          assert.equal(download.status, 200, `${productType} at ${version}`);
        }
      }
    });

    it('shows a monitored verification: its monitoring, every tape with a link to each, and the income chart with the same figures as a table', async () => {
      const a = await lender();
      const id = await monitored(a.api);
      const { agent } = await signIn(a.viewer);
      const page = await agent.get(`/dashboard/verifications/${id}`);
      assert.equal(page.status, 200);
      assert.match(page.headers['content-security-policy']!, /default-src 'none'; style-src 'self'/);
      const monitoring = (await a.api.get(`/verifications/${id}`)).body.monitoring;
      for (const text of [
        '<h2 id="monitoring">Ongoing monitoring</h2>',
        '<dt>State</dt><dd>active</dd>',
        '<dt>Months</dt><dd>3</dd>',
        `<dt>Window ends</dt><dd><time datetime="${monitoring.ends_at}">`,
        `<dt>Next refresh</dt><dd><time datetime="${monitoring.next_refresh_at}">`,
        '<dt>Refresh on demand</dt><dd>none waiting</dd>',
        '<dt>Failed refreshes in a row</dt><dd>0</dd>',
        'An admin of your account can refresh or stop monitoring.',
      ]) {
        assert.ok(page.text.includes(text), text);
      }
      assert.ok(!page.text.includes('Refresh now</button>') && !page.text.includes('Stop monitoring…'), 'no actions for a viewer');
      const tapes = (await a.api.get(`/verifications/${id}/tapes`)).body.data;
      assert.deepEqual(historyOf(page.text), [{ tapeId: tapes[0].tape_id, reason: 'completion', latest: true }]);

      // The chart: an image with a name and a description, a bar per platform and month, in the stylesheet's terms only.
      const svg = /<svg [^>]*role="img" aria-labelledby="income-chart-title income-chart-desc".*?<\/svg>/s.exec(page.text)?.[0];
      assert.ok(svg, 'an inline SVG chart');
      assert.match(svg, /<title id="income-chart-title">Monthly income per platform, in euro<\/title>/);
      assert.match(svg, /<desc id="income-chart-desc">Bars per month, one per platform \(youtube, stripe\)/);
      assert.ok(!/\sstyle=|<script/i.test(page.text), 'no style attribute, which the CSP would block, and no script');
      const months = [...svg.matchAll(/<title>youtube, ([A-Z][a-z]{2} \d{4}): /g)].map((m) => m[1]);
      assert.ok(months.length >= 3, `months charted: ${months.join(', ')}`);
      // The table after the chart: the same months, a column per platform and the total.
      const tableHtml = /<table>\s*<caption>Monthly income per platform.*?<\/table>/s.exec(page.text)?.[0] ?? assert.fail('no income table');
      assert.ok(page.text.indexOf(tableHtml) > page.text.indexOf(svg), 'the table follows the chart');
      assert.match(tableHtml, /<th scope="col">youtube<\/th><th scope="col">stripe<\/th><th scope="col">All platforms<\/th>/);
      const rows = [...tableHtml.matchAll(/<tr><th scope="row">([^<]+)<\/th>/g)].map((m) => m[1]);
      for (const month of months) assert.ok(rows.includes(month), `${month} in the table`);
      const css = await agent.get('/dashboard/assets/dashboard.css');
      assert.match(css.text, /svg\.chart \{/);
      assert.match(css.text, /@media print \{[^@]*\.table \{ overflow: visible; \}/, 'the table prints whole');
    });

    it('lets an admin refresh a monitored verification now (CSRF-protected, not a viewer): the refresh waits, then its tape is in the history; another is refused as waiting, then as too soon', async () => {
      const a = await lender();
      const id = await monitored(a.api);
      const base = `/dashboard/verifications/${id}`;
      const viewer = await signIn(a.viewer);
      const adminSession = await signIn(a.admin);
      const page = await adminSession.agent.get(base);
      assert.ok(page.text.includes(`<form method="post" action="${base}/refresh"><input type="hidden" name="_csrf"`), 'a form with the token');
      assert.ok(page.text.includes('Refresh now</button>'));

      assert.equal((await adminSession.agent.post(`${base}/refresh`).type('form').send({})).status, 403, 'no token');
      assert.equal((await adminSession.agent.post(`${base}/refresh`).type('form').send({ _csrf: viewer.csrf })).status, 403, "another session's token");
      const byViewer = await viewer.agent.post(`${base}/refresh`).type('form').send({ _csrf: viewer.csrf });
      assert.equal(byViewer.status, 403);
      assert.match(byViewer.text, /Admins only/);
      assert.equal((await a.api.get(`/verifications/${id}`)).body.monitoring.refresh_requested_at, null, 'nothing was asked');

      const asked = clock.now();
      const requested = await adminSession.agent.post(`${base}/refresh`).type('form').send({ _csrf: adminSession.csrf });
      assert.equal(requested.status, 303, requested.text);
      assert.equal(requested.headers.location, `${base}?notice=refresh_requested#monitoring`);
      const waiting = await adminSession.agent.get(`${base}?notice=refresh_requested`);
      assert.match(waiting.text, /<p class="notice" role="status">Refresh requested/);
      assert.ok(waiting.text.includes(`<dt>Refresh on demand</dt><dd>waiting, asked <time datetime="${asked.toISOString()}">`));

      const again = await adminSession.agent.post(`${base}/refresh`).type('form').send({ _csrf: adminSession.csrf });
      assert.equal(again.status, 409);
      assert.match(again.text, /<p class="error" role="alert">Not refreshed: a refresh is already waiting to run\./);
      assert.ok(again.text.includes('<h2 id="monitoring">'), 'shown on the verification page');

      clock.advance(5_000);
      await service.jobs.runDue();
      const done = await adminSession.agent.get(base);
      const history = historyOf(done.text);
      assert.deepEqual(
        history.map((t) => [t.reason, t.latest]),
        [
          ['refresh', true],
          ['completion', false],
        ],
      );
      assert.ok(done.text.includes('<dt>Refresh on demand</dt><dd>none waiting</dd>'));
      assert.match(done.text, /<dt>Last refresh<\/dt><dd><time/);

      const tooSoon = await adminSession.agent.post(`${base}/refresh`).type('form').send({ _csrf: adminSession.csrf });
      assert.equal(tooSoon.status, 429);
      const next = new Date(asked.getTime() + 24 * 60 * 60 * 1000).toISOString().slice(0, 16).replace('T', ' ');
      assert.ok(tooSoon.text.includes(`Not refreshed: Refresh now works once a day. The next is possible from ${next} UTC.`), tooSoon.text);
      assert.ok(Number(tooSoon.headers['retry-after']) > 24 * 60 * 60 - 60);

      // The earlier tape, from its row: shown with a note, and downloaded as the API gives it.
      const earlier = history[1]!.tapeId;
      const shown = await adminSession.agent.get(`${base}?tape_id=${earlier}`);
      assert.equal(shown.status, 200);
      assert.match(shown.text, /<h2 id="tape">Earlier Risk Tape<\/h2>/);
      assert.ok(shown.text.includes(`<input type="hidden" name="tape_id" value="${earlier}">`));
      assert.ok(shown.text.includes(`${earlier}</a> <span class="hint">(shown below)</span>`));
      const download = await adminSession.agent.get(`${base}/tape.json?tape_id=${earlier}&schema_version=2.0.0`);
      assert.equal(download.status, 200);
      assert.match(download.headers['content-disposition']!, new RegExp(`${earlier}-2\\.0\\.0\\.json`));
      assert.deepEqual(JSON.parse(download.text), (await a.api.get(`/verifications/${id}/tape?tape_id=${earlier}`)).body);
      assert.notDeepEqual(JSON.parse(download.text), (await a.api.get(`/verifications/${id}/tape`)).body, 'not the latest');
      assert.equal((await adminSession.agent.get(`${base}?tape_id=tap_unknown`)).status, 404);
      assert.equal((await adminSession.agent.get(`${base}?tape_id=${encodeURIComponent('<x>')}`)).status, 400);
    });

    it("lets an admin stop monitoring after a confirmation step (CSRF-protected, not a viewer, not another lender's admin); then nothing is offered and a refresh is refused", async () => {
      const a = await lender();
      const b = await lender();
      const id = await monitored(a.api);
      const base = `/dashboard/verifications/${id}`;
      const stateOf = async () => (await a.api.get(`/verifications/${id}`)).body.monitoring;
      const viewer = await signIn(a.viewer);
      assert.equal((await viewer.agent.get(`${base}/monitoring/stop`)).status, 403);
      assert.equal((await viewer.agent.post(`${base}/monitoring/stop`).type('form').send({ _csrf: viewer.csrf, confirm: 'yes' })).status, 403);
      const intruder = await signIn(b.admin);
      assert.equal((await intruder.agent.get(`${base}/monitoring/stop`)).status, 404);
      assert.equal((await intruder.agent.post(`${base}/monitoring/stop`).type('form').send({ _csrf: intruder.csrf, confirm: 'yes' })).status, 404);
      assert.equal((await intruder.agent.post(`${base}/refresh`).type('form').send({ _csrf: intruder.csrf })).status, 404);

      const adminSession = await signIn(a.admin);
      const page = await adminSession.agent.get(base);
      assert.ok(page.text.includes(`<form method="get" action="${base}/monitoring/stop">`));
      const confirm = await adminSession.agent.get(`${base}/monitoring/stop`);
      assert.equal(confirm.status, 200);
      assert.ok(confirm.text.includes(`Stop monitoring verification <span class="mono">${id}</span>?`));
      assert.match(confirm.text, /<input type="hidden" name="confirm" value="yes">/);
      assert.equal((await adminSession.agent.post(`${base}/monitoring/stop`).type('form').send({ confirm: 'yes' })).status, 403, 'no token');
      const unconfirmed = await adminSession.agent.post(`${base}/monitoring/stop`).type('form').send({ _csrf: adminSession.csrf });
      assert.equal(unconfirmed.status, 200);
      assert.match(unconfirmed.text, /Stop monitoring verification/);
      assert.equal((await stateOf()).state, 'active', 'not stopped without confirmation, nor by a viewer or another lender');

      const stopped = await adminSession.agent.post(`${base}/monitoring/stop`).type('form').send({ _csrf: adminSession.csrf, confirm: 'yes' });
      assert.equal(stopped.status, 303);
      assert.equal(stopped.headers.location, `${base}?notice=monitoring_stopped#monitoring`);
      assert.deepEqual([(await stateOf()).state, (await stateOf()).end_reason], ['ended', 'stopped_by_lender']);
      const after = await adminSession.agent.get(`${base}?notice=monitoring_stopped`);
      assert.match(after.text, /role="status">Monitoring stopped/);
      assert.ok(after.text.includes('<dt>State</dt><dd>ended: stopped from your account</dd>'));
      assert.ok(!after.text.includes('Refresh now</button>') && !after.text.includes('Stop monitoring…'), 'nothing left to do');
      const refused = await adminSession.agent.post(`${base}/refresh`).type('form').send({ _csrf: adminSession.csrf });
      assert.equal(refused.status, 422);
      assert.match(refused.text, /Not refreshed: only active monitoring is refreshed\. The monitoring of verification \S+ is ended \(stopped_by_lender\)/);
      // Stopping again changes nothing; its confirmation leads back to the page.
      assert.equal((await adminSession.agent.post(`${base}/monitoring/stop`).type('form').send({ _csrf: adminSession.csrf, confirm: 'yes' })).status, 303);
      assert.equal((await adminSession.agent.get(`${base}/monitoring/stop`)).headers.location, `${base}#monitoring`);
    });

    it('shows a one-time verification without a monitoring section or its actions, and refuses them', async () => {
      const a = await lender();
      const id = await completed(a.api);
      const base = `/dashboard/verifications/${id}`;
      const { agent, csrf } = await signIn(a.admin);
      const page = await agent.get(base);
      assert.equal(page.status, 200);
      assert.ok(page.text.includes('<dt>Monitoring</dt><dd>none: a one-time verification</dd>'));
      for (const absent of ['Ongoing monitoring', 'Refresh now', 'Stop monitoring', '/refresh"', '/monitoring/stop"'])
        assert.ok(!page.text.includes(absent), absent);
      assert.equal(historyOf(page.text).length, 1, 'its one tape is listed');
      assert.match(page.text, /<svg [^>]*role="img"/, 'its income charted');
      const refresh = await agent.post(`${base}/refresh`).type('form').send({ _csrf: csrf });
      assert.equal(refresh.status, 422);
      assert.match(refresh.text, /created without monitoring/);
      assert.equal((await agent.post(`${base}/monitoring/stop`).type('form').send({ _csrf: csrf, confirm: 'yes' })).status, 422);
      assert.equal((await agent.get(`${base}/monitoring/stop`)).status, 422);
      assert.equal((await a.api.get(`/verifications/${id}`)).body.monitoring, undefined);
    });

    it('lets a viewer read but not change, and an admin replay a failed delivery (a new delivery, the log shows it)', async () => {
      const a = await lender();
      const { webhookId, deliveryId, path } = await failedDelivery(a.api);
      const viewer = await signIn(a.viewer);
      const detail = await viewer.agent.get(`/dashboard/webhooks/${webhookId}`);
      assert.equal(detail.status, 200);
      assert.ok(detail.text.includes('HTTP 500'));
      assert.ok(!detail.text.includes('Replay</button>'), 'no replay button for a viewer');
      assert.ok(!detail.text.includes('Disable endpoint') && !detail.text.includes('Save changes'), 'no edit form for a viewer');
      const before = (await a.api.get(`/webhooks/${webhookId}`)).body;
      for (const action of ['secret', 'rotate-secret', 'enabled', 'update', `deliveries/${deliveryId}/replay`]) {
        const form = { _csrf: viewer.csrf, enabled: 'false', url: 'https://8.8.8.8/elsewhere', events: 'tape.updated' };
        assert.equal((await viewer.agent.post(`/dashboard/webhooks/${webhookId}/${action}`).type('form').send(form)).status, 403, action);
      }
      assert.deepEqual((await a.api.get(`/webhooks/${webhookId}`)).body, before, 'a viewer changed the endpoint');
      receiver.clearScript(path);
      // The log is newest first; the replay comes a moment after the original.
      clock.advance(1000);
      const adminSession = await signIn(a.admin);
      const replay = await adminSession.agent
        .post(`/dashboard/webhooks/${webhookId}/deliveries/${deliveryId}/replay`)
        .type('form')
        .send({ _csrf: adminSession.csrf });
      assert.equal(replay.status, 303);
      await service.deliveries.runDue();
      const log = await a.api.get(`/webhooks/${webhookId}/deliveries`);
      assert.equal(log.body.data[0].replay_of, deliveryId);
      assert.equal(log.body.data[0].status, 'succeeded');
      const after = await adminSession.agent.get(`/dashboard/webhooks/${webhookId}`);
      assert.ok(after.text.includes(`replay of ${deliveryId}`));
      assert.ok(after.text.includes('HTTP 200'));
      assert.ok(after.text.includes('>ok<'), "the receiver's answer");
    });

    it('ends sessions on sign-out, on revocation by the operator, and when idle; each ended cookie signs nobody in', async () => {
      const a = await lender();
      const first = await signIn(a.admin);
      assert.equal((await first.agent.post('/dashboard/sign-out').type('form').send({ _csrf: first.csrf })).status, 303);
      assert.equal((await first.agent.get('/dashboard/account')).status, 303);
      const second = await signIn(a.admin);
      assert.equal(await revokeDashboardSessions(users, a.admin), 1);
      assert.equal((await second.agent.get('/dashboard/account')).status, 303);
      const third = await signIn(a.admin);
      // Unused for longer than the 30 minutes of docs/dashboard.md.
      clock.advance(30 * 60 * 1000 + 1000);
      assert.equal((await third.agent.get('/dashboard/account')).status, 303);
    });

    it('limits failed sign-in attempts per email address: past the limit even the right password waits; successful ones do not count', async () => {
      const a = await lender();
      await signIn(a.viewer);
      await signIn(a.viewer);
      const agent = request.agent(service.app);
      // Every answer carries a fresh form, with a fresh token.
      let page = await agent.get('/dashboard/sign-in');
      const statuses: number[] = [];
      for (let i = 0; i <= SIGN_IN_QUOTA.perMinute; i += 1) {
        page = await agent
          .post('/dashboard/sign-in')
          .type('form')
          .send({ _csrf: csrfOf(page.text), email: a.viewer, password: `guess ${i}` });
        statuses.push(page.status);
      }
      assert.deepEqual(statuses, [...Array<number>(SIGN_IN_QUOTA.perMinute).fill(401), 429]);
      const right = await agent
        .post('/dashboard/sign-in')
        .type('form')
        .send({ _csrf: csrfOf(page.text), email: a.viewer, password: PASSWORD });
      assert.equal(right.status, 429);
      assert.ok(Number(right.headers['retry-after']) >= 1);
    });

    it('reserves each sign-in attempt before its password is checked: of 40 wrong passwords sent at once 10 are checked, and the right one sent during the batch does not sign in', async () => {
      const a = await lender();
      const attempt = await signInAttempts();
      const wrong = Array.from({ length: 40 }, (_, i) => attempt(a.viewer, `wrong guess ${i}`, '198.51.100.10').then((r) => r));
      // Sent once the server has answered one of the batch, while the rest are still being handled.
      await Promise.race(wrong);
      const right = await attempt(a.viewer, PASSWORD, '198.51.100.10');
      const statuses = (await Promise.all(wrong)).map((r) => r.status);
      assert.equal(statuses.filter((status) => status === 401).length, SIGN_IN_QUOTA.perMinute, `checked: ${statuses.join(' ')}`);
      assert.equal(statuses.filter((status) => status === 429).length, 40 - SIGN_IN_QUOTA.perMinute);
      assert.equal(right.status, 429, 'the right password waits too');
      assert.ok(Number(right.headers['retry-after']) > 1, 'until the minute window ends, not the burst second');
      assert.ok(![right.headers['set-cookie']].flat().some((c) => c?.startsWith('civ_dashboard=')), 'no session');
    });

    it('counts every spelling of an address in one counter: padded, upper-case, full-width or cut at 254 characters, the right password waits', async () => {
      const a = await lender();
      const attempt = await signInAttempts();
      for (let i = 0; i < SIGN_IN_QUOTA.perMinute; i += 1) assert.equal((await attempt(a.viewer, `guess ${i}`, '198.51.100.20')).status, 401);
      const fullWidth = [...a.viewer].map((c) => String.fromCodePoint(c.codePointAt(0)! + 0xfee0)).join('');
      for (const spelling of [`  ${a.viewer.toUpperCase()}\t`, `\u00a0${fullWidth}`]) {
        const response = await attempt(spelling, PASSWORD, '198.51.100.21');
        assert.equal(response.status, 429, JSON.stringify(spelling));
      }
      // Padding past 254 characters used to be cut off for the counter and trimmed for the lookup.
      const padded = `${a.viewer}${' '.repeat(260 - a.viewer.length)}x`;
      const response = await attempt(padded, PASSWORD, '198.51.100.22');
      assert.notEqual(response.status, 303, 'a padded address does not sign in');
      assert.ok(![response.headers['set-cookie']].flat().some((c) => c?.startsWith('civ_dashboard=')), 'no session');
    });

    it('bounds the password checks running and waiting: a flood of sign-ins beyond them is answered 503 at once with a clear page, then sign-in works', async () => {
      const a = await lender();
      const attempt = await signInAttempts();
      const tag = randomUUID().slice(0, 8);
      const flood = await Promise.all(Array.from({ length: 60 }, (_, i) => attempt(`nobody-${i}-${tag}@example.com`, 'not a password', `203.0.113.${i + 1}`)));
      const statuses = flood.map((r) => r.status);
      assert.deepEqual([...new Set(statuses)].sort(), [401, 503], statuses.join(' '));
      const busy = flood.find((r) => r.status === 503)!;
      assert.match(busy.text, /Too many sign-ins are being checked right now/);
      assert.equal(busy.headers['retry-after'], '5');
      assert.equal((await attempt(a.admin, PASSWORD, '203.0.113.200')).status, 303);
    });

    it("ends a deactivated lender's dashboard: sessions at their next request, every form refused and nothing changed, sign-in refused after the password; reactivation restores sign-in, not old sessions", async () => {
      const a = await lender();
      const ctx = adminContext({ mode: 'sandbox' }, accounts, clock);
      const webhook = await a.api.post('/webhooks', { url: `${receiverUrl}/deactivation`, events: ['verification.completed'] });
      assert.equal(webhook.status, 201, webhook.text);
      const webhookId = webhook.body.webhook_id as string;
      const adding = await signIn(a.admin);
      const rotating = await signIn(a.admin);
      const reading = await signIn(a.viewer);
      const untouched = await signIn(a.viewer);
      await admin.deactivateLender(ctx, a.account.id);

      const added = await adding.agent
        .post('/dashboard/webhooks')
        .type('form')
        .send({ _csrf: adding.csrf, url: `${receiverUrl}/added`, events: 'verification.completed' });
      assert.equal(added.status, 403);
      assert.match(added.text, /deactivated/);
      const rotated = await rotating.agent
        .post(`/dashboard/webhooks/${webhookId}/rotate-secret`)
        .type('form')
        .send({ _csrf: rotating.csrf, overlap_seconds: '0' });
      assert.equal(rotated.status, 403);
      assert.ok(!/whsec_/.test(rotated.text));
      const page = await reading.agent.get('/dashboard/webhooks');
      assert.equal(page.status, 303);
      assert.equal(page.headers.location, '/dashboard/sign-in?notice=deactivated');
      assert.match((await reading.agent.get(page.headers.location)).text, /has been deactivated/);
      for (const session of [adding, rotating, reading]) assert.equal((await session.agent.get('/dashboard/account')).headers.location, '/dashboard/sign-in');

      const attempt = await signInAttempts();
      const wrong = await attempt(a.admin, 'not the password', '198.51.100.30');
      assert.equal(wrong.status, 401);
      assert.match(wrong.text, /do not match/);
      const right = await attempt(a.admin, PASSWORD, '198.51.100.30');
      assert.equal(right.status, 403);
      assert.match(right.text, /deactivated, so it cannot sign in/);
      assert.ok(![right.headers['set-cookie']].flat().some((c) => c?.startsWith('civ_dashboard=')), 'no session');

      await admin.reactivateLender(ctx, a.account.id);
      // Never used while deactivated, and still over.
      assert.equal((await untouched.agent.get('/dashboard/verifications')).status, 303);
      const back = await signIn(a.admin);
      const list = await a.api.get('/webhooks');
      assert.deepEqual(
        list.body.data.map((w: { webhook_id: string }) => w.webhook_id),
        [webhookId],
        'no endpoint was added',
      );
      const shown = await back.agent.post(`/dashboard/webhooks/${webhookId}/secret`).type('form').send({ _csrf: back.csrf });
      assert.ok(shown.text.includes(webhook.body.secret as string), 'the secret was not rotated');
    });

    it('ends a deactivated dashboard user alone: refused sign-in and sessions, the other users of the lender unaffected; reactivation restores sign-in, not old sessions', async () => {
      const a = await lender();
      const viewer = await signIn(a.viewer);
      const untouched = await signIn(a.viewer);
      const colleague = await signIn(a.admin);
      assert.ok((await deactivateDashboardUser(users, a.viewer)).deactivatedAt);
      const page = await viewer.agent.get('/dashboard/verifications');
      assert.equal(page.headers.location, '/dashboard/sign-in?notice=deactivated');
      assert.equal((await colleague.agent.get('/dashboard/verifications')).status, 200);
      const attempt = await signInAttempts();
      assert.equal((await attempt(a.viewer, 'not the password', '198.51.100.40')).status, 401);
      assert.equal((await attempt(a.viewer, PASSWORD, '198.51.100.40')).status, 403);
      await reactivateDashboardUser(users, a.viewer);
      assert.equal((await untouched.agent.get('/dashboard/verifications')).status, 303);
      await signIn(a.viewer);
    });

    it("shows the account's keys by prefix with their last use (written at most once a minute) and this minute's usage", async () => {
      const a = await lender();
      const { agent } = await signIn(a.viewer);
      assert.match((await agent.get('/dashboard/account')).text, /never/);
      await a.api.get('/webhooks');
      const lastUse = async () => (await service.db.knex('api_keys').where({ id: a.keyId }).first('last_used_at')).last_used_at as string | null;
      // The write is not awaited by the request; it lands right after.
      for (let i = 0; i < 50 && !(await lastUse()); i += 1) await new Promise((resolve) => setTimeout(resolve, 20));
      const first = await lastUse();
      assert.equal(first, clock.now().toISOString());
      clock.advance(30_000);
      await a.api.get('/webhooks');
      await new Promise((resolve) => setTimeout(resolve, 100));
      assert.equal(await lastUse(), first, 'not again within the minute');
      const page = await agent.get('/dashboard/account');
      assert.ok(page.text.includes(`<time datetime="${first}">`));
      assert.match(page.text, /2 of 1000/);
    });
  });
}
