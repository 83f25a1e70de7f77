import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import type { components } from '../../generated/api.ts';
import { AccountsRepository } from '../../src/accounts/accounts-repository.ts';
import * as admin from '../../src/accounts/lender-admin.ts';
import { loadConfig } from '../../src/platform/config.ts';
import { testDatabases, type TestDatabase } from '../support/test-databases.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { adminContext } from '../../src/admin/admin-context.ts';
import { startService, type Service } from '../../src/service.ts';
import { makeTestCertificates, TestReceiver } from '../support/test-receiver.ts';
import { verifyWebhookSignature } from '../../src/webhooks/verify-signature.ts';
import { startGoogleSimulator, type GoogleSimulator } from '../simulators/google.ts';
import { startStripeSimulator, type StripeSimulator } from '../simulators/stripe.ts';
import { providerEnv } from '../simulators/provider-env.ts';

type Schemas = components['schemas'];

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
// Without the background-networking flags Chromium floods a closed network with refused connections.
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
export const SCREENSHOT_DIR = join(tmpdir(), 'civ-consent-screenshots');

/** The same loopback server under the name `localhost`, another site than `127.0.0.1` to a browser. */
const crossSite = (url: string) => url.replace('//127.0.0.1:', '//localhost:');

const lastMonths = (count: number, now = new Date()) =>
  Array.from({ length: count }, (_, i) => new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - count + i, 1)).toISOString().slice(0, 7));

describe('consent page in a real browser (headless Chromium)', function () {
  this.timeout(120_000);
  let testDb: TestDatabase;
  let google: GoogleSimulator;
  let stripe: StripeSimulator;
  let service: Service;
  let server: Server;
  let base: string;
  let browser: Browser;
  let key: string;
  let receiver: TestReceiver;
  let receiverUrl: string;
  let webhookSecret: string;
  const months = lastMonths(24);

  before(async function () {
    if (!existsSync(CHROMIUM)) {
      // CI installs Chromium and sets REQUIRE_CHROMIUM, so there a missing browser fails instead of skipping.
      if (process.env.REQUIRE_CHROMIUM) throw new Error(`no Chromium at ${CHROMIUM}`);
      this.skip();
    }
    testDb = await testDatabases()[0]!.create();
    google = await startGoogleSimulator();
    stripe = await startStripeSimulator();
    const certificates = makeTestCertificates();
    receiver = new TestReceiver(certificates);
    receiverUrl = await receiver.listen();
    server = createServer();
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    const config = loadConfig({
      DATABASE_URL: testDb.url,
      SERVICE_MODE: 'production',
      ENCRYPTION_KEY: 'f'.repeat(64),
      PUBLIC_BASE_URL: base,
      PROCESSING_WINDOW_SECONDS: '3',
      ...providerEnv(google, stripe),
      // Google's sign-in on another site than the service's, as in production (localhost and
      // 127.0.0.1 are different sites to a browser): the browser binding cookie must come back
      // across sites, on the provider's top-level redirect.
      GOOGLE_AUTHORIZATION_URL: crossSite(google.endpoints.authorize),
      LOG_LEVEL: 'silent',
    });
    // Production refuses private webhook targets; this test's receiver is local, so the sender trusts it explicitly.
    service = await startService({ ...config, webhookAllowPrivateTargets: true }, createLogger({ level: 'silent' }), { webhookCa: certificates.ca });
    server.on('request', service.app);
    service.jobs.start(100);
    service.deliveries.start(200);
    const ctx = adminContext(config, new AccountsRepository(service.db.knex));
    const lender = await admin.createLender(ctx, { name: 'Northwind Capital' });
    await admin.updateLender(ctx, { id: lender.id, rateLimit: 100000, burst: 10000 });
    key = (await admin.createKey(ctx, { lenderId: lender.id, role: 'lender' })).apiKey;
    const webhook = await api<Schemas['WebhookWithSecret']>('POST', '/webhooks', {
      url: `${receiverUrl}/browser`,
      events: ['verification.completed', 'verification.failed'],
    });
    webhookSecret = webhook.secret;
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
    mkdirSync(SCREENSHOT_DIR, { recursive: true });
  });
  after(async () => {
    await browser?.close();
    await service?.close();
    server?.close();
    await receiver?.close();
    await google?.close();
    await stripe?.close();
    await testDb?.drop();
  });

  /** The operation's response body; `Body` is what the spec gives the request's operation. */
  async function api<Body>(method: string, path: string, body?: object): Promise<Body> {
    const response = await fetch(`${base}/api/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': randomUUID() },
      body: body ? JSON.stringify(body) : undefined,
    });
    assert.ok(response.ok, `${method} ${path}: ${response.status} ${await response.clone().text()}`);
    return (await response.json()) as Body;
  }

  async function waitForStatus(id: string, statuses: string[]) {
    for (let i = 0; i < 100; i++) {
      const verification = await api<Schemas['Verification']>('GET', `/verifications/${id}`);
      if (statuses.includes(verification.status)) return verification;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`verification ${id} never reached ${statuses.join('/')}`);
  }

  function creator(monthlyBase = 800) {
    const email = `creator-${randomUUID()}@example.org`;
    const revenue = Object.fromEntries(months.map((m, i) => [m, monthlyBase + 5 * i]));
    google.addAccount({ email, channelId: `UC${randomUUID().slice(0, 8)}`, currency: 'EUR', monthlyRevenue: revenue });
    const accountId = `acct_${randomUUID().replace(/-/g, '').slice(0, 16)}`;
    stripe.addAccount({
      accountId,
      email: `billing-${randomUUID()}@example.org`,
      transactions: months.map((m, i) => ({
        amount: 25000 + 50 * i,
        currency: 'eur',
        created: Date.parse(`${m}-10T09:00:00Z`) / 1000,
        type: 'charge' as const,
      })),
    });
    return { email, accountId, revenue };
  }

  /** Tabs through the page until the focused element's text matches, then presses Enter: a keyboard-only user. */
  async function pressByKeyboard(page: Page, text: RegExp) {
    for (let i = 0; i < 40; i++) {
      await page.keyboard.press('Tab');
      // Evaluated in the page (a string, since this project's types are Node's, not the DOM's).
      const focused: string = await page.evaluate(`(() => {
        const el = document.activeElement;
        return el ? (el.textContent || '') + ' ' + (el.getAttribute('data-email') || '') + ' ' + ((el.closest('form') || {}).innerHTML || '').slice(0, 400) : '';
      })()`);
      if (text.test(focused)) {
        await Promise.all([page.waitForNavigation(), page.keyboard.press('Enter')]);
        return;
      }
    }
    throw new Error(`no focusable element matching ${text}`);
  }

  it("connects both platforms, gives consent, completes with a tape from the providers' data and sends the webhook", async () => {
    const { email, accountId, revenue } = creator();
    const { verification_id: id, consent_url } = await api<Schemas['Verification']>('POST', '/verifications', {
      obligor_reference: `obligor-${randomUUID()}`,
      creator_platforms: ['youtube', 'stripe'],
    });
    const page = await browser.newPage();
    await page.goto(consent_url);
    assert.equal(await page.locator('h1').innerText(), 'Northwind Capital asks to verify your creator income');
    await page.screenshot({ path: join(SCREENSHOT_DIR, 'consent-page.png'), fullPage: true });

    await Promise.all([page.waitForNavigation(), page.getByRole('button', { name: 'Connect YouTube' }).click()]);
    assert.match(page.url(), new RegExp(`^${crossSite(google.baseUrl)}`));
    await Promise.all([page.waitForNavigation(), page.locator(`button[data-email="${email}"]`).click()]);
    assert.equal(new URL(page.url()).pathname, new URL(consent_url).pathname);
    assert.match(await page.locator('#status-youtube').innerText(), /Connected/);

    await Promise.all([page.waitForNavigation(), page.getByRole('button', { name: 'Connect Stripe' }).click()]);
    await Promise.all([page.waitForNavigation(), page.locator(`form:has(input[value="${accountId}"]) button`).click()]);
    assert.match(await page.locator('#status-stripe').innerText(), /Connected/);
    await page.screenshot({ path: join(SCREENSHOT_DIR, 'consent-page-connected.png'), fullPage: true });

    await Promise.all([page.waitForNavigation(), page.getByRole('button', { name: 'Give consent and finish' }).click()]);
    // Collection is quick against the simulators: the page shows either moment, never a claim of consent nobody gave.
    assert.match(await page.locator('h1').innerText(), /^(Thank you: your income is being read|Your income summary was shared with Northwind Capital)$/);
    const done = await waitForStatus(id, ['completed', 'failed']);
    assert.equal(done.status, 'completed');
    const tape = await api<Schemas['RiskTapeV2_0_0']>('GET', `/verifications/${id}/tape`);
    const last12 = months.slice(-12);
    const byPlatform = Object.fromEntries(
      tape.cashflow_summary.per_platform.map((p: { platform: string; revenue_12m_total_eur: number }) => [p.platform, p.revenue_12m_total_eur]),
    );
    assert.equal(
      byPlatform.youtube,
      last12.reduce((sum, m) => sum + revenue[m]!, 0),
    );
    assert.equal(
      byPlatform.stripe,
      last12.reduce((sum, m) => sum + (25000 + 50 * months.indexOf(m)) / 100, 0),
    );

    for (let i = 0; i < 50 && !receiver.to('/browser').some((r) => JSON.parse(r.rawBody.toString()).verification_id === id); i++)
      await new Promise((r) => setTimeout(r, 100));
    const delivery = receiver.to('/browser').find((r) => JSON.parse(r.rawBody.toString()).verification_id === id);
    assert.ok(delivery, 'no webhook for the completed verification');
    assert.ok(verifyWebhookSignature(delivery.rawBody, delivery.headers['x-service-signature'], webhookSecret));
    assert.equal(JSON.parse(delivery.rawBody.toString()).event, 'verification.completed');
    await page.close();
  });

  it('connects nothing when a sign-in begun in one browser is finished in another, which sees nothing of the link (RFC 9700, 4.7)', async () => {
    const applicant = creator();
    const other = creator(9000);
    const { verification_id: id, consent_url } = await api<Schemas['Verification']>('POST', '/verifications', {
      obligor_reference: `obligor-${randomUUID()}`,
      creator_platforms: ['youtube'],
    });
    const applicantContext = await browser.newContext();
    const otherContext = await browser.newContext();
    try {
      // The applicant presses Connect, stops on the provider's page and copies its address...
      const applicantPage = await applicantContext.newPage();
      await applicantPage.goto(consent_url);
      await Promise.all([applicantPage.waitForNavigation(), applicantPage.getByRole('button', { name: 'Connect YouTube' }).click()]);
      const authorizationUrl = applicantPage.url();
      assert.match(authorizationUrl, new RegExp(`^${crossSite(google.baseUrl)}`));

      // ...and someone else opens it in their own browser and allows access to their channel.
      const otherPage = await otherContext.newPage();
      await otherPage.goto(authorizationUrl);
      await Promise.all([otherPage.waitForNavigation(), otherPage.locator(`button[data-email="${other.email}"]`).click()]);
      assert.equal(await otherPage.locator('h1').innerText(), 'That did not work');
      assert.match(await otherPage.locator('main').innerText(), /nothing was connected: this YouTube sign-in was started in a different browser/);
      assert.ok(!(await otherPage.content()).includes(new URL(consent_url).pathname), 'the other browser was shown the consent link');
      assert.ok(!otherPage.url().includes(new URL(consent_url).pathname), 'the other browser was sent to the consent link');
      await otherPage.screenshot({ path: join(SCREENSHOT_DIR, 'consent-other-browser.png'), fullPage: true });
      const refused = await api<Schemas['Verification']>('GET', `/verifications/${id}`);
      assert.deepEqual(
        refused.platform_connections?.map((c) => [c.platform, c.status]),
        [['youtube', 'not_connected']],
      );

      // The applicant's own browser still connects, with its own account only.
      await applicantPage.goto(consent_url);
      await Promise.all([applicantPage.waitForNavigation(), applicantPage.getByRole('button', { name: 'Connect YouTube' }).click()]);
      await Promise.all([applicantPage.waitForNavigation(), applicantPage.locator(`button[data-email="${applicant.email}"]`).click()]);
      assert.match(await applicantPage.locator('#status-youtube').innerText(), /Connected/);
      await Promise.all([applicantPage.waitForNavigation(), applicantPage.getByRole('button', { name: 'Give consent and finish' }).click()]);
      assert.equal((await waitForStatus(id, ['completed', 'failed'])).status, 'completed');
      const tape = await api<Schemas['RiskTapeV2_0_0']>('GET', `/verifications/${id}/tape`);
      const youtube = tape.cashflow_summary.per_platform.find((p: { platform: string }) => p.platform === 'youtube') as { revenue_12m_total_eur: number };
      assert.equal(
        youtube.revenue_12m_total_eur,
        months.slice(-12).reduce((sum, m) => sum + applicant.revenue[m]!, 0),
      );
    } finally {
      await applicantContext.close();
      await otherContext.close();
    }
  });

  it('works by keyboard alone', async () => {
    const { email, accountId } = creator();
    const { verification_id: id, consent_url } = await api<Schemas['Verification']>('POST', '/verifications', {
      obligor_reference: `obligor-${randomUUID()}`,
      creator_platforms: ['youtube', 'stripe'],
    });
    const page = await browser.newPage();
    await page.goto(consent_url);
    await pressByKeyboard(page, /^Connect YouTube/);
    await pressByKeyboard(page, new RegExp(`Allow ${email.replace(/[.]/g, '\\.')}`));
    await pressByKeyboard(page, /^Connect Stripe/);
    await pressByKeyboard(page, new RegExp(`^Connect [\\s\\S]*${accountId}`));
    await pressByKeyboard(page, /^Give consent and finish/);
    assert.equal((await waitForStatus(id, ['completed', 'failed'])).status, 'completed');
    await page.close();
  });

  it('passes an axe-core accessibility scan of the consent page', async () => {
    creator();
    const { consent_url } = await api<Schemas['Verification']>('POST', '/verifications', {
      obligor_reference: `obligor-${randomUUID()}`,
      creator_platforms: ['youtube', 'stripe'],
    });
    // The page's CSP forbids scripts, rightly; only this scan's context bypasses it to inject axe.
    const context = await browser.newContext({ bypassCSP: true });
    const page = await context.newPage();
    await page.goto(consent_url);
    await page.addScriptTag({ content: axeSource });
    const results: { violations: Array<{ id: string; help: string; nodes: unknown[] }> } = await page.evaluate(
      `axe.run({ runOnly: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] })`,
    );
    assert.deepEqual(
      results.violations.map((v) => `${v.id}: ${v.help} (${v.nodes.length})`),
      [],
    );
    await context.close();
  });

  const failures: Array<[string, (email: string, accountId: string) => void, string]> = [
    ['a provider answering 5xx', (email) => google.inject('server_error', { times: 10, email }), 'platform_error'],
    ['a creator who revoked access', (_email, accountId) => stripe.inject('revoked', { accountId }), 'consent_revoked'],
    ['a provider slower than the processing window', (email) => google.inject('slow', { slowMs: 4000, email }), 'timeout'],
  ];
  const PLAIN_REASONS: Record<string, RegExp> = {
    platform_error: /A connected platform returned an error/,
    consent_revoked: /Access to a connected platform was withdrawn/,
    timeout: /took too long/,
  };
  for (const [what, inject, reason] of failures) {
    it(`ends in ${reason} for ${what}`, async () => {
      const { email, accountId } = creator();
      const { verification_id: id, consent_url } = await api<Schemas['Verification']>('POST', '/verifications', {
        obligor_reference: `obligor-${randomUUID()}`,
        creator_platforms: ['youtube', 'stripe'],
      });
      const page = await browser.newPage();
      await page.goto(consent_url);
      await Promise.all([page.waitForNavigation(), page.getByRole('button', { name: 'Connect YouTube' }).click()]);
      await Promise.all([page.waitForNavigation(), page.locator(`button[data-email="${email}"]`).click()]);
      await Promise.all([page.waitForNavigation(), page.getByRole('button', { name: 'Connect Stripe' }).click()]);
      await Promise.all([page.waitForNavigation(), page.locator(`form:has(input[value="${accountId}"]) button`).click()]);
      inject(email, accountId);
      await Promise.all([page.waitForNavigation(), page.getByRole('button', { name: 'Give consent and finish' }).click()]);
      const done = await waitForStatus(id, ['completed', 'failed']);
      assert.deepEqual([done.status, done.failure_reason], ['failed', reason]);
      // The creator's page says so in plain words, without the internal reason code.
      await page.reload();
      assert.equal(await page.locator('h1').innerText(), 'Your income could not be verified');
      assert.match(await page.locator('main').innerText(), PLAIN_REASONS[reason]!);
      assert.doesNotMatch(await page.content(), new RegExp(reason));
      await page.close();
    });
  }
});
