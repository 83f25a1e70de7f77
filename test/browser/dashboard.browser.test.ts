import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createRequire } from 'node:module';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { AccountsRepository } from '../../src/accounts/accounts-repository.ts';
import * as admin from '../../src/accounts/lender-admin.ts';
import { DashboardRepository } from '../../src/dashboard/dashboard-repository.ts';
import { createDashboardUser } from '../../src/dashboard/dashboard-users.ts';
import { loadConfig } from '../../src/platform/config.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { adminContext } from '../../src/admin/admin-context.ts';
import { startService, type Service } from '../../src/service.ts';
import { testDatabases, type TestDatabase } from '../support/test-databases.ts';
import { makeTestCertificates, TestReceiver } from '../support/test-receiver.ts';
import { verifyWebhookSignature } from '../../src/webhooks/verify-signature.ts';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-quic',
  '--no-first-run',
];
const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
const PASSWORD = 'a dashboard password for tests';

describe('lender dashboard in a real browser (headless Chromium)', function () {
  this.timeout(120_000);
  let testDb: TestDatabase;
  let service: Service;
  let server: Server;
  let attacker: Server;
  let base: string;
  let attackerBase: string;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let receiver: TestReceiver;
  let receiverUrl: string;
  const lenders: Record<'ours' | 'theirs', { key: string; email: string }> = {} as never;
  let ctx: admin.AdminContext;
  let users: Parameters<typeof createDashboardUser>[0];
  let attackForm = '';

  before(async function () {
    if (!existsSync(CHROMIUM)) {
      if (process.env.REQUIRE_CHROMIUM) throw new Error(`no Chromium at ${CHROMIUM}`);
      this.skip();
    }
    testDb = await testDatabases()[0]!.create();
    const certificates = makeTestCertificates();
    receiver = new TestReceiver(certificates);
    receiverUrl = await receiver.listen();
    server = createServer();
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    // Another site (localhost is not 127.0.0.1 to a browser) whose page posts a form to the dashboard.
    attacker = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(attackForm));
    attacker.listen(0, '127.0.0.1');
    await once(attacker, 'listening');
    attackerBase = `http://localhost:${(attacker.address() as { port: number }).port}`;
    const config = loadConfig({
      DATABASE_URL: testDb.url,
      PUBLIC_BASE_URL: base,
      WEBHOOK_ALLOW_PRIVATE_TARGETS: '1',
      WEBHOOK_RETRY_SCHEDULE: '0',
      SANDBOX_COMPLETE_DELAY_MS: '300',
      LOG_LEVEL: 'silent',
    });
    service = await startService(config, createLogger({ level: 'silent' }), { webhookCa: certificates.ca });
    server.on('request', service.app);
    service.jobs.start(50);
    service.deliveries.start(100);
    const accounts = new AccountsRepository(service.db.knex);
    ctx = adminContext(config, accounts);
    users = { users: new DashboardRepository(service.db.knex), accounts, now: () => new Date() };
    for (const [name, label] of [
      ['ours', 'Northwind Capital'],
      ['theirs', 'Southwind Funding'],
    ] as const) {
      const lender = await admin.createLender(ctx, { name: label });
      const key = (await admin.createKey(ctx, { lenderId: lender.id, role: 'lender' })).apiKey;
      const email = `ops-${name}@example.com`;
      await createDashboardUser(users, { lenderId: lender.id, email, role: 'admin', password: PASSWORD });
      lenders[name] = { key, email };
    }
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
    // The pages' CSP forbids scripts, rightly; only this context bypasses it, to inject axe-core.
    context = await browser.newContext({ bypassCSP: true });
    page = await context.newPage();
  });
  after(async () => {
    await browser?.close();
    await service?.close();
    server?.close();
    attacker?.close();
    await receiver?.close();
    await testDb?.drop();
  });

  async function api<Body>(who: 'ours' | 'theirs', method: string, path: string, body?: object): Promise<Body> {
    const response = await fetch(`${base}/api/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${lenders[who].key}`, 'content-type': 'application/json', 'idempotency-key': randomUUID() },
      body: body ? JSON.stringify(body) : undefined,
    });
    assert.ok(response.ok, `${method} ${path}: ${response.status} ${await response.clone().text()}`);
    return (await response.json()) as Body;
  }

  async function until<T>(what: string, check: () => Promise<T | undefined | false>): Promise<T> {
    for (let i = 0; i < 100; i += 1) {
      const value = await check();
      if (value) return value;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error(`timed out waiting for ${what}`);
  }

  const violations: string[] = [];
  async function audit(name: string): Promise<void> {
    await page.addScriptTag({ content: axeSource });
    const results: { violations: Array<{ id: string; help: string; nodes: Array<{ target: unknown }> }> } = await page.evaluate(
      `axe.run({ runOnly: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'], resultTypes: ['violations'] })`,
    );
    for (const v of results.violations) violations.push(`${name}: ${v.id} ${v.help} ${JSON.stringify(v.nodes.map((n) => n.target))}`);
  }

  it('signs in, finds a verification, reads its tape, rotates a secret, replays a failed delivery, signs out; every page passes axe-core', async () => {
    const reference = `test-complete-${randomUUID().slice(0, 8)}`;
    const verification = await api<{ verification_id: string }>('ours', 'POST', '/verifications', {
      obligor_reference: reference,
      creator_platforms: ['youtube', 'stripe'],
    });
    await until(
      'completion',
      async () => (await api<{ status: string }>('ours', 'GET', `/verifications/${verification.verification_id}`)).status === 'completed',
    );
    receiver.answerWith('/refuses', 500);
    const webhook = await api<{ webhook_id: string; secret: string }>('ours', 'POST', '/webhooks', {
      url: `${receiverUrl}/refuses`,
      events: ['verification.expired'],
    });
    await api('ours', 'POST', '/verifications', { obligor_reference: `test-expire-${randomUUID().slice(0, 8)}`, creator_platforms: ['youtube'] });
    const failed = await until('a failed delivery', async () => {
      const log = await api<{ data: Array<{ delivery_id: string; status: string }> }>('ours', 'GET', `/webhooks/${webhook.webhook_id}/deliveries`);
      return log.data.find((d) => d.status === 'failed');
    });

    // Sign in.
    await page.goto(`${base}/dashboard/verifications`);
    assert.equal(new URL(page.url()).pathname, '/dashboard/sign-in');
    await audit('sign-in');
    await page.getByLabel('Email').fill(lenders.ours.email);
    await page.getByLabel('Password').fill('wrong password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    assert.match(await page.getByRole('alert').innerText(), /do not match/);
    await audit('sign-in refused');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    assert.equal(new URL(page.url()).pathname, '/dashboard/verifications');
    await audit('verifications');

    // Find the verification and read its tape.
    await page.getByLabel('Obligor reference').fill(reference);
    await page.getByRole('button', { name: 'Filter' }).click();
    await audit('verifications filtered');
    await page.getByRole('link', { name: verification.verification_id }).click();
    assert.equal(await page.getByRole('heading', { level: 1 }).innerText(), `Verification ${verification.verification_id}`);
    assert.match(await page.locator('dd.tier').innerText(), /^(prime|standard|subprime|ineligible)$/);
    for (const text of ['Maximum advance', 'No-data codes', 'Peer benchmark', 'processing → completed']) assert.ok((await page.content()).includes(text), text);
    await audit('verification');
    await page.getByLabel('Download the tape as JSON at schema version').selectOption('1.2.0');
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download JSON' }).click()]);
    const tape = JSON.parse(readFileSync(await download.path(), 'utf8')) as { schema_version: string; verification_id: string };
    assert.deepEqual([tape.schema_version, tape.verification_id], ['1.2.0', verification.verification_id]);

    // Rotate the endpoint's secret.
    await page.getByRole('link', { name: 'Webhooks' }).click();
    await audit('webhooks');
    await page.getByRole('link', { name: `${receiverUrl}/refuses` }).click();
    await audit('webhook');
    await page.getByRole('button', { name: 'Show signing secret' }).click();
    assert.equal(await page.locator('#secret').innerText(), webhook.secret);
    await page.getByLabel('Keep the current secret signing beside the new one for').selectOption('0');
    await page.getByRole('button', { name: 'Rotate secret' }).click();
    const rotated = await page.locator('#secret').innerText();
    assert.match(rotated, /^whsec_/);
    assert.notEqual(rotated, webhook.secret);
    await audit('webhook rotated');

    // Replay the failed delivery, now that the receiver accepts.
    receiver.clearScript('/refuses');
    await page.getByRole('button', { name: `Replay delivery ${failed.delivery_id}` }).click();
    assert.match(await page.getByRole('status').first().innerText(), /queued again/);
    const replay = await until('the replay delivered', async () => {
      const log = await api<{ data: Array<{ replay_of: string | null; status: string }> }>('ours', 'GET', `/webhooks/${webhook.webhook_id}/deliveries`);
      return log.data.find((d) => d.replay_of === failed.delivery_id && d.status === 'succeeded');
    });
    assert.ok(replay);
    await page.reload();
    assert.ok((await page.content()).includes(`replay of ${failed.delivery_id}`));

    await page.getByRole('link', { name: 'Account' }).click();
    assert.ok((await page.content()).includes('civ_test_'));
    await audit('account');

    // Cross-tenant: another lender's verification and endpoint are not found.
    const theirs = await api<{ verification_id: string }>('theirs', 'POST', '/verifications', {
      obligor_reference: 'theirs-1',
      creator_platforms: ['youtube'],
    });
    assert.equal((await page.goto(`${base}/dashboard/verifications/${theirs.verification_id}`))?.status(), 404);
    await audit('not found');

    // A form posted from another site is refused and changes nothing.
    attackForm = `<!doctype html><html lang="en"><title>x</title><form method="post" action="${base}/dashboard/webhooks/${webhook.webhook_id}/rotate-secret"><input type="hidden" name="_csrf" value="guess"><input type="hidden" name="overlap_seconds" value="0"><button>Go</button></form></html>`;
    await page.goto(attackerBase);
    const [crossSite] = await Promise.all([page.waitForNavigation(), page.getByRole('button', { name: 'Go' }).click()]);
    assert.equal(crossSite?.status(), 403);
    await page.goto(`${base}/dashboard/webhooks/${webhook.webhook_id}`);
    await page.getByRole('button', { name: 'Show signing secret' }).click();
    assert.equal(await page.locator('#secret').innerText(), rotated, 'the secret is still the one rotated in the dashboard');

    // Sign out: the old session opens nothing.
    await page.getByRole('button', { name: 'Sign out' }).click();
    assert.equal(new URL(page.url()).pathname, '/dashboard/sign-in');
    assert.match(await page.getByRole('status').innerText(), /signed out/);
    await page.goto(`${base}/dashboard/account`);
    assert.equal(new URL(page.url()).pathname, '/dashboard/sign-in');

    assert.deepEqual(violations, []);
  });

  async function signInAs(email: string, password = PASSWORD): Promise<void> {
    await page.goto(`${base}/dashboard/sign-in`);
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
  }

  it('an admin disables an endpoint, moves it and changes its events, then enables it; the API and the receiver see each change; a cross-site form changes nothing', async () => {
    const lender = await admin.createLender(ctx, { name: 'Westwind Credit' });
    const key = (await admin.createKey(ctx, { lenderId: lender.id, role: 'lender' })).apiKey;
    const email = 'ops-westwind@example.com';
    await createDashboardUser(users, { lenderId: lender.id, email, role: 'admin', password: PASSWORD });
    const call = async <Body>(method: string, path: string, body?: object): Promise<Body> => {
      const response = await fetch(`${base}/api/v1${path}`, {
        method,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': randomUUID() },
        body: body ? JSON.stringify(body) : undefined,
      });
      assert.ok(response.ok, `${method} ${path}: ${response.status} ${await response.clone().text()}`);
      return (await response.json()) as Body;
    };
    type Shown = { url: string; events: string[]; enabled: boolean };
    const expiry = async () => {
      const { verification_id } = await call<{ verification_id: string }>('POST', '/verifications', {
        obligor_reference: `test-expire-${randomUUID().slice(0, 8)}`,
        creator_platforms: ['youtube'],
      });
      await until('the expiry', async () => (await call<{ status: string }>('GET', `/verifications/${verification_id}`)).status === 'expired');
      return verification_id;
    };
    const webhook = await call<{ webhook_id: string; secret: string }>('POST', '/webhooks', { url: `${receiverUrl}/paused`, events: ['verification.expired'] });
    const shown = () => call<Shown>('GET', `/webhooks/${webhook.webhook_id}`);

    await signInAs(email);
    await page.getByRole('link', { name: 'Webhooks' }).click();
    assert.match(await page.getByRole('row', { name: new RegExp(`${receiverUrl}/paused`) }).innerText(), /enabled/);
    await page.getByRole('link', { name: `${receiverUrl}/paused` }).click();

    // Disable: an expiry meanwhile reaches nobody and leaves no delivery.
    await page.getByRole('button', { name: 'Disable endpoint' }).click();
    assert.match(await page.getByRole('status').first().innerText(), /is disabled/);
    assert.equal((await shown()).enabled, false);
    await audit('webhook disabled');
    const meanwhile = await expiry();
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.deepEqual(receiver.to('/paused'), []);
    assert.deepEqual((await call<{ data: unknown[] }>('GET', `/webhooks/${webhook.webhook_id}/deliveries`)).data, []);

    // Move it and subscribe it to completions too.
    await page.getByLabel('HTTPS URL').fill(`${receiverUrl}/resumed`);
    await page.getByRole('checkbox', { name: 'verification.completed' }).check();
    await page.getByRole('button', { name: 'Save changes' }).click();
    assert.match(await page.getByRole('status').first().innerText(), /was changed/);
    assert.deepEqual(await shown(), {
      ...(await shown()),
      url: `${receiverUrl}/resumed`,
      events: ['verification.completed', 'verification.expired'],
      enabled: false,
    });
    await audit('webhook edited');
    await page.getByLabel('HTTPS URL').fill('https://169.254.169.254/latest/meta-data/');
    await page.getByRole('button', { name: 'Save changes' }).click();
    assert.match(await page.getByRole('heading', { level: 1 }).innerText(), /check the form/i);
    assert.equal((await shown()).url, `${receiverUrl}/resumed`, 'the target guard refused the metadata address');

    // A form posted from another site neither enables nor moves it.
    attackForm = `<!doctype html><html lang="en"><title>x</title><form method="post" action="${base}/dashboard/webhooks/${webhook.webhook_id}/enabled"><input type="hidden" name="_csrf" value="guess"><input type="hidden" name="enabled" value="true"><button>Go</button></form></html>`;
    await page.goto(attackerBase);
    const [crossSite] = await Promise.all([page.waitForNavigation(), page.getByRole('button', { name: 'Go' }).click()]);
    assert.equal(crossSite?.status(), 403);
    assert.equal((await shown()).enabled, false);

    // Enable: the next expiry arrives at the new url, signed with the unchanged secret.
    await page.goto(`${base}/dashboard/webhooks/${webhook.webhook_id}`);
    await page.getByRole('button', { name: 'Enable endpoint' }).click();
    assert.equal((await shown()).enabled, true);
    const after = await expiry();
    const [delivered] = await until('the delivery after enabling', async () => receiver.to('/resumed').length > 0 && receiver.to('/resumed'));
    assert.ok(delivered!.rawBody.toString().includes(after));
    assert.ok(!delivered!.rawBody.toString().includes(meanwhile));
    assert.ok(verifyWebhookSignature(delivered!.rawBody, delivered!.headers['x-service-signature'], webhook.secret));
    assert.deepEqual(receiver.to('/paused'), []);
    await page.reload();
    assert.ok((await page.content()).includes(after), 'the delivery log shows the delivery');
    await page.getByRole('button', { name: 'Sign out' }).click();
    assert.deepEqual(violations, []);
  });

  it('an admin registers return origins on the Account page, which a creation may then lead back to; a viewer sees them and changes nothing', async () => {
    const lender = await admin.createLender(ctx, { name: 'Northeast Advances' });
    const key = (await admin.createKey(ctx, { lenderId: lender.id, role: 'lender' })).apiKey;
    const [adminEmail, viewerEmail] = ['ops-northeast@example.com', 'reader-northeast@example.com'];
    await createDashboardUser(users, { lenderId: lender.id, email: adminEmail, role: 'admin', password: PASSWORD });
    await createDashboardUser(users, { lenderId: lender.id, email: viewerEmail, role: 'viewer', password: PASSWORD });
    const create = (returnUrl: string) =>
      fetch(`${base}/api/v1/verifications`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': randomUUID() },
        body: JSON.stringify({ obligor_reference: `obligor-${randomUUID()}`, creator_platforms: ['youtube'], return_url: returnUrl }),
      });
    assert.equal((await create('https://app.northeast.example/back')).status, 400, 'no origin registered yet');

    await signInAs(adminEmail);
    await page.getByRole('link', { name: 'Account' }).click();
    assert.match(await page.getByRole('region', { name: 'Return origins' }).innerText(), /None/);
    await page.getByLabel('Origins, one per line').fill('https://app.northeast.example\nhttp://localhost:3000/');
    await page.getByRole('button', { name: 'Save return origins' }).click();
    assert.match(await page.getByRole('status').first().innerText(), /Return origins saved/);
    const listed = await page.getByRole('region', { name: 'Return origins' }).getByRole('listitem').allInnerTexts();
    assert.deepEqual(listed, ['https://app.northeast.example', 'http://localhost:3000']);
    await audit('account with return origins');
    const made = await create('https://app.northeast.example/back?step=2');
    assert.equal(made.status, 201, await made.clone().text());
    assert.equal(((await made.json()) as { return_url: string }).return_url, 'https://app.northeast.example/back?step=2');

    // Not an origin: refused with the entry named, and nothing changed.
    await page.getByLabel('Origins, one per line').fill('http://app.northeast.example');
    await page.getByRole('button', { name: 'Save return origins' }).click();
    assert.match(await page.getByRole('heading', { level: 1 }).innerText(), /check the form/i);
    assert.match(await page.locator('main').innerText(), /http:\/\/app\.northeast\.example.*must be https/);
    assert.equal((await create('https://app.northeast.example/back')).status, 201);
    await page.goto(`${base}/dashboard/account`);
    await page.getByRole('button', { name: 'Sign out' }).click();

    // A viewer reads them, has no form, and a post of its own is refused.
    await signInAs(viewerEmail);
    await page.getByRole('link', { name: 'Account' }).click();
    assert.deepEqual(await page.getByRole('region', { name: 'Return origins' }).getByRole('listitem').allInnerTexts(), listed);
    assert.equal(await page.getByLabel('Origins, one per line').count(), 0);
    const csrfToken = await page.locator('input[name="_csrf"]').first().getAttribute('value');
    const refused = await page.request.post(`${base}/dashboard/account/return-origins`, { form: { _csrf: csrfToken!, origins: 'https://evil.example' } });
    assert.equal(refused.status(), 403);
    assert.match(await refused.text(), /Admins only/);
    assert.equal((await create('https://evil.example/back')).status, 400);
    await page.getByRole('button', { name: 'Sign out' }).click();
    assert.deepEqual(violations, []);
  });

  it("ends a deactivated lender's open session at its next page and refuses sign-in; reactivation restores sign-in, not the old session", async () => {
    const lender = await admin.createLender(ctx, { name: 'Eastwind Lending' });
    const email = 'ops-eastwind@example.com';
    await createDashboardUser(users, { lenderId: lender.id, email, role: 'admin', password: PASSWORD });
    await signInAs(email);
    assert.equal(new URL(page.url()).pathname, '/dashboard/verifications');
    const [oldSession] = (await context.cookies(base)).filter((cookie) => cookie.name === 'civ_dashboard');
    assert.ok(oldSession, 'a session cookie');

    await admin.deactivateLender(ctx, lender.id);
    await page.getByRole('link', { name: 'Webhooks' }).click();
    assert.equal(new URL(page.url()).pathname, '/dashboard/sign-in');
    assert.match(await page.getByRole('status').innerText(), /lender account has been deactivated/);
    await audit('signed out: deactivated');
    await signInAs(email, 'wrong password');
    assert.match(await page.getByRole('alert').innerText(), /do not match/);
    await signInAs(email);
    assert.equal(new URL(page.url()).pathname, '/dashboard/sign-in');
    assert.match(await page.getByRole('alert').innerText(), /deactivated, so it cannot sign in/);
    await audit('sign-in refused: deactivated');

    await admin.reactivateLender(ctx, lender.id);
    // The cookie of the session opened before, in a browser of its own.
    const other = await browser.newContext();
    try {
      await other.addCookies([oldSession]);
      const old = await other.newPage();
      await old.goto(`${base}/dashboard/verifications`);
      assert.equal(new URL(old.url()).pathname, '/dashboard/sign-in', 'the old session stays over');
    } finally {
      await other.close();
    }
    await signInAs(email);
    assert.equal(new URL(page.url()).pathname, '/dashboard/verifications');
    assert.ok((await page.content()).includes('Eastwind Lending'));
    assert.deepEqual(violations, []);
  });
});
