import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createRequire } from 'node:module';
import { chromium, type Browser, type Page } from 'playwright-core';
import type { components } from '../../generated/api.ts';
import { AccountsRepository } from '../../src/accounts/accounts-repository.ts';
import * as admin from '../../src/accounts/lender-admin.ts';
import { adminContext } from '../../src/admin/admin-context.ts';
import { CATALOGUES, type Locale } from '../../src/consent/i18n/catalogue.ts';
import { loadConfig } from '../../src/platform/config.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { startService, type Service } from '../../src/service.ts';
import { testDatabases, type TestDatabase } from '../support/test-databases.ts';

type Verification = components['schemas']['Verification'];

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
const LENDER = 'Northwind Capital';
const LANGUAGES: Array<{ locale: Locale; acceptLanguage: string; dir: 'ltr' | 'rtl' }> = [
  { locale: 'en', acceptLanguage: 'en-GB,en;q=0.9', dir: 'ltr' },
  { locale: 'ar', acceptLanguage: 'ar-AE,ar;q=0.9', dir: 'rtl' },
];

/** Arabic pages isolate Latin names; the words to compare are the catalogue's without the marks. */
const plain = (text: string) => text.replace(/[\u2068\u2069]/g, '');
const click = (page: Page, action: () => Promise<unknown>) => Promise.all([page.waitForNavigation(), action()]);

describe('stopping ongoing monitoring in a real browser: summary, confirmation, result (headless Chromium)', function () {
  this.timeout(120_000);
  let testDb: TestDatabase;
  let service: Service;
  let server: Server;
  let base: string;
  let key: string;
  let browser: Browser;

  before(async function () {
    if (!existsSync(CHROMIUM)) {
      // CI installs Chromium and sets REQUIRE_CHROMIUM, so there a missing browser fails instead of skipping.
      if (process.env.REQUIRE_CHROMIUM) throw new Error(`no Chromium at ${CHROMIUM}`);
      this.skip();
    }
    testDb = await testDatabases()[0]!.create();
    server = createServer();
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    const config = loadConfig({ DATABASE_URL: testDb.url, SERVICE_MODE: 'sandbox', PUBLIC_BASE_URL: base, LOG_LEVEL: 'silent' });
    service = await startService(config, createLogger({ level: 'silent' }));
    server.on('request', service.app);
    const ctx = adminContext(config, new AccountsRepository(service.db.knex));
    const lender = await admin.createLender(ctx, { name: LENDER });
    key = (await admin.createKey(ctx, { lenderId: lender.id, role: 'lender' })).apiKey;
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
  });
  after(async () => {
    await browser?.close();
    await service?.close();
    server?.close();
    await testDb?.drop();
  });

  async function api<Body>(method: string, path: string, body?: object): Promise<Body> {
    const response = await fetch(`${base}/api/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': randomUUID() },
      body: body ? JSON.stringify(body) : undefined,
    });
    assert.ok(response.ok, `${method} ${path}: ${response.status} ${await response.clone().text()}`);
    return (await response.json()) as Body;
  }

  /**
   * The page as the creator's browser shows it: its language and direction, no accessibility
   * violation axe-core finds, and nothing scrolling sideways on a phone. axe is evaluated through
   * the DevTools protocol, which the pages' CSP does not govern: the walk runs under the real policy.
   */
  async function check(page: Page, where: string, dir: 'ltr' | 'rtl', locale: Locale) {
    assert.deepEqual([await page.locator('html').getAttribute('lang'), await page.locator('html').getAttribute('dir')], [locale, dir], where);
    const violations: string[] = [];
    for (const width of [375, 1280]) {
      await page.setViewportSize({ width, height: 800 });
      const results: { violations: Array<{ id: string; help: string; nodes: Array<{ target: unknown }> }> } = await page.evaluate(
        `${axeSource}; axe.run({ runOnly: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'], resultTypes: ['violations'] })`,
      );
      for (const v of results.violations) violations.push(`${where} at ${width}px: ${v.id} ${v.help} ${JSON.stringify(v.nodes.map((n) => n.target))}`);
      const overflow: number = await page.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth');
      assert.ok(overflow <= 0, `${where} at ${width}px scrolls sideways by ${overflow}px`);
    }
    assert.deepEqual(violations, []);
  }

  for (const { locale, acceptLanguage, dir } of LANGUAGES) {
    it(`[${locale}] the consent page of a monitored verification says what ongoing access means before consent is given`, async () => {
      const m = CATALOGUES[locale];
      const created = await api<Verification>('POST', '/verifications', {
        obligor_reference: `obligor-${randomUUID()}`,
        creator_platforms: ['youtube'],
        monitoring: { months: 3 },
      });
      const context = await browser.newContext({ extraHTTPHeaders: { 'accept-language': acceptLanguage } });
      const page = await context.newPage();
      await page.goto(created.consent_url);
      const ongoing = page.locator('section[aria-labelledby="ongoing"]');
      assert.equal(plain(await ongoing.locator('h2').innerText()), m.monitoringTitle);
      const words = plain(await ongoing.innerText());
      assert.ok(words.includes(plain(m.monitoringPlanned({ lender: LENDER, months: 3 }))), words);
      assert.ok(words.includes(plain(m.monitoringStopAnyTime({ lender: LENDER }))), words);
      await check(page, `consent [${locale}]`, dir, locale);
      await context.close();
    });

    it(`[${locale}] a monitored synthetic creator: the sharing summary, Stop sharing, the confirmation, the result; monitoring ended by the creator`, async () => {
      const m = CATALOGUES[locale];
      const created = await api<Verification>('POST', '/verifications', {
        obligor_reference: 'demo_prime_multi',
        creator_platforms: ['youtube', 'stripe'],
        monitoring: { months: 6 },
      });
      assert.equal(created.monitoring?.state, 'active', 'a synthetic creator completes at creation, so its monitoring runs at once');
      const context = await browser.newContext({ extraHTTPHeaders: { 'accept-language': acceptLanguage } });
      const page = await context.newPage();
      const errors: string[] = [];
      page.on('console', (message) => {
        // The browser's own favicon request is the only 404 a page has no say in.
        if (message.type() === 'error' && !message.location().url.endsWith('/favicon.ico')) errors.push(message.text());
      });

      const summary = await page.goto(created.consent_url);
      assert.equal(summary?.status(), 200);
      assert.equal(plain(await page.locator('h1').innerText()), m.completedTitle({ lender: LENDER }));
      const shared = page.locator('section[aria-labelledby="shared"]');
      assert.equal(plain(await shared.locator('h2').innerText()), m.sharingTitle);
      const words = plain(await shared.innerText());
      assert.ok(words.includes(LENDER), `${locale}: who receives it`);
      const endsAt = created.monitoring?.ends_at;
      assert.ok(endsAt, 'active monitoring has its end');
      const until = new Intl.DateTimeFormat(locale, { year: 'numeric', month: 'long', day: 'numeric', timeZone: 'UTC' }).format(new Date(endsAt));
      assert.ok(words.includes(until), `${locale}: until ${until}: ${words}`);
      assert.ok(words.includes(plain(m.monitoringStopAnyTime({ lender: LENDER }))), locale);
      await check(page, `summary [${locale}]`, dir, locale);

      await click(page, () => page.getByRole('button', { name: m.stopButton }).click());
      assert.equal(new URL(page.url()).pathname, `${new URL(created.consent_url).pathname}/stop`);
      assert.equal(plain(await page.locator('h1').innerText()), plain(m.stopConfirmTitle({ lender: LENDER })));
      assert.match(
        plain(await page.locator('main').innerText()),
        new RegExp(plain(m.stopConfirmKept({ lender: LENDER })).replace(/[.?*+^$()[\]{}|\\]/g, '\\$&')),
      );
      await check(page, `confirmation [${locale}]`, dir, locale);
      assert.equal(
        (await api<Verification>('GET', `/verifications/${created.verification_id}`)).monitoring?.state,
        'active',
        'the confirmation page stops nothing',
      );

      await click(page, () => page.getByRole('button', { name: m.stopConfirmButton }).click());
      assert.equal(page.url(), created.consent_url, 'back on the link, which now says sharing has stopped');
      assert.equal(plain(await page.locator('h1').innerText()), plain(m.stoppedTitle({ lender: LENDER })));
      const result = plain(await page.locator('main').innerText());
      assert.ok(result.includes(plain(m.endedByYou({ lender: LENDER }))), result);
      assert.ok(result.includes(plain(m.endedKept({ lender: LENDER }))), result);
      assert.equal(await page.getByRole('button', { name: m.stopButton }).count(), 0);
      await check(page, `result [${locale}]`, dir, locale);

      const ended = await api<Verification>('GET', `/verifications/${created.verification_id}`);
      assert.deepEqual([ended.monitoring?.state, ended.monitoring?.end_reason], ['ended', 'stopped_by_creator']);
      const events = await service.verifications.eventsOf(created.verification_id);
      assert.deepEqual(
        events.filter((e) => e.name === 'verification.monitoring_ended').map((e) => (e.payload as { reason?: string }).reason),
        ['stopped_by_creator'],
      );
      assert.deepEqual(errors, [], 'the browser reported errors (a CSP refusal among them)');
      await context.close();
    });
  }
});
