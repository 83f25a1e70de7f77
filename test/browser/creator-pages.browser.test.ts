import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import type { components } from '../../generated/api.ts';
import { AccountsRepository } from '../../src/accounts/accounts-repository.ts';
import * as admin from '../../src/accounts/lender-admin.ts';
import { loadConfig } from '../../src/platform/config.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { CATALOGUES } from '../../src/consent/i18n/catalogue.ts';
import { adminContext } from '../../src/admin/admin-context.ts';
import { startService, type Service } from '../../src/service.ts';
import { startGoogleSimulator, type GoogleSimulator } from '../simulators/google.ts';
import { providerEnv } from '../simulators/provider-env.ts';
import { startStripeSimulator, type StripeSimulator } from '../simulators/stripe.ts';
import { testDatabases, type TestDatabase } from '../support/test-databases.ts';

type Verification = components['schemas']['Verification'];

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
const SCREENSHOT_DIR = join(tmpdir(), 'civ-creator-pages');
/** SCREENSHOTS=1 keeps a picture of every page in English and Arabic at both widths (slower). */
const SCREENSHOTS = process.env.SCREENSHOTS === '1';
const LANGUAGES = [
  { locale: 'en', acceptLanguage: 'en-GB,en;q=0.9', dir: 'ltr' },
  { locale: 'de', acceptLanguage: 'de-DE,de;q=0.9', dir: 'ltr' },
  { locale: 'fr', acceptLanguage: 'fr-FR,fr;q=0.9', dir: 'ltr' },
  { locale: 'es', acceptLanguage: 'es-ES,es;q=0.9', dir: 'ltr' },
  { locale: 'ar', acceptLanguage: 'ar-AE,ar;q=0.9', dir: 'rtl' },
] as const;
const WIDTHS = [375, 1280];

interface Stack {
  testDb: TestDatabase;
  service: Service;
  server: Server;
  base: string;
  key: string;
}

/** A service on its own database and port, with a lender named Northwind Capital and its key. */
async function startStack(mode: 'production' | 'sandbox', extra: Record<string, string>, returnOrigins: string[] = []): Promise<Stack> {
  const testDb = await testDatabases()[0]!.create();
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const config = loadConfig({
    DATABASE_URL: testDb.url,
    SERVICE_MODE: mode,
    ENCRYPTION_KEY: 'e'.repeat(64),
    PUBLIC_BASE_URL: base,
    PROCESSING_WINDOW_SECONDS: '3',
    LOG_LEVEL: 'silent',
    ...extra,
  });
  const service = await startService(config, createLogger({ level: 'silent' }));
  server.on('request', service.app);
  service.jobs.start(100);
  const ctx = adminContext(config, new AccountsRepository(service.db.knex));
  const lender = await admin.createLender(ctx, { name: 'Northwind Capital' });
  await admin.updateLender(ctx, { id: lender.id, rateLimit: 100000, burst: 10000, ...(returnOrigins.length ? { returnOrigins } : {}) });
  const key = (await admin.createKey(ctx, { lenderId: lender.id, role: 'lender' })).apiKey;
  return { testDb, service, server, base, key };
}

async function stopStack(stack: Stack | undefined) {
  if (!stack) return;
  await stack.service.close();
  stack.server.close();
  await stack.testDb.drop();
}

async function api<Body>(stack: Stack, method: string, path: string, body?: object): Promise<Body> {
  const response = await fetch(`${stack.base}/api/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${stack.key}`, 'content-type': 'application/json', 'idempotency-key': randomUUID() },
    body: body ? JSON.stringify(body) : undefined,
  });
  assert.ok(response.ok, `${method} ${path}: ${response.status} ${await response.clone().text()}`);
  return (await response.json()) as Body;
}

const createVerification = (stack: Stack, platforms: Array<'youtube' | 'stripe'> = ['youtube', 'stripe'], extra: { return_url?: string } = {}) =>
  api<Verification>(stack, 'POST', '/verifications', { obligor_reference: `obligor-${randomUUID()}`, creator_platforms: platforms, ...extra });

const click = (page: Page, action: () => Promise<unknown>) => Promise.all([page.waitForNavigation(), action()]);

describe('creator pages in a real browser: decline, outcomes, provider denial, privacy, languages (headless Chromium)', function () {
  this.timeout(300_000);
  let google: GoogleSimulator;
  let stripe: StripeSimulator;
  let live: Stack;
  let sandbox: Stack;
  let browser: Browser;
  /** The lender's own app, on a loopback origin the lender registered: where the pages lead back to. */
  let lenderApp: Server;
  let lenderAppOrigin: string;
  const arrivals: URL[] = [];

  before(async function () {
    if (!existsSync(CHROMIUM)) {
      if (process.env.REQUIRE_CHROMIUM) throw new Error(`no Chromium at ${CHROMIUM}`);
      this.skip();
    }
    google = await startGoogleSimulator();
    stripe = await startStripeSimulator();
    lenderApp = createServer((req, res) => {
      arrivals.push(new URL(req.url ?? '/', lenderAppOrigin));
      res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><html lang="en"><title>Lender app</title><h1>Welcome back</h1></html>');
    });
    lenderApp.listen(0, '127.0.0.1');
    await once(lenderApp, 'listening');
    lenderAppOrigin = `http://127.0.0.1:${(lenderApp.address() as { port: number }).port}`;
    live = await startStack('production', providerEnv(google, stripe), [lenderAppOrigin]);
    sandbox = await startStack('sandbox', {});
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
    mkdirSync(SCREENSHOT_DIR, { recursive: true });
  });
  after(async () => {
    await browser?.close();
    await stopStack(live);
    await stopStack(sandbox);
    await google?.close();
    await stripe?.close();
    lenderApp?.close();
  });

  const heading = (page: Page) => page.locator('h1').innerText();

  it('declines: the link on the consent page, the confirmation, then the outcome; verification.failed with consent_declined', async () => {
    const { verification_id: id, consent_url } = await createVerification(live);
    const context = await browser.newContext({ locale: 'en-GB' });
    const page = await context.newPage();
    await page.goto(consent_url);
    await click(page, () => page.getByRole('link', { name: 'I do not want to share' }).click());
    assert.equal(await heading(page), 'Decline to share your income with Northwind Capital?');
    assert.equal((await api<Verification>(live, 'GET', `/verifications/${id}`)).status, 'pending_consent');
    await page.screenshot({ path: join(SCREENSHOT_DIR, 'decline-confirm-en.png'), fullPage: true });
    await click(page, () => page.getByRole('button', { name: 'Yes, I do not want to share' }).click());
    assert.equal(page.url(), consent_url);
    assert.equal(await heading(page), 'You declined to share your income');
    assert.match(await page.locator('main').innerText(), /Northwind Capital has been told that you do not want to share\. Nothing was read/);
    const failed = await api<Verification>(live, 'GET', `/verifications/${id}`);
    assert.deepEqual([failed.status, failed.failure_reason], ['failed', 'consent_declined']);
    const events = await live.service.verifications.eventsOf(id);
    assert.deepEqual(
      events.map((e) => [e.name, (e.payload as { reason?: string }).reason]),
      [['verification.failed', 'consent_declined']],
    );
    await context.close();
  });

  it("explains a Deny on Google's page, tries again and connects; a Deny on Stripe's page leads to declining", async () => {
    const email = `creator-${randomUUID()}@example.org`;
    google.addAccount({ email, channelId: `UC${randomUUID().slice(0, 8)}`, currency: 'EUR', monthlyRevenue: { '2026-01': 100 } });
    const accountId = `acct_${randomUUID().replace(/-/g, '').slice(0, 16)}`;
    stripe.addAccount({ accountId, email: `billing-${randomUUID()}@example.org`, transactions: [] });
    const { verification_id: id, consent_url } = await createVerification(live);
    const context = await browser.newContext({ locale: 'en-GB' });
    const page = await context.newPage();
    await page.goto(consent_url);

    await click(page, () => page.getByRole('button', { name: 'Connect YouTube' }).click());
    assert.ok(page.url().startsWith(google.baseUrl), page.url());
    await click(page, () => page.locator('button[value="deny"]').click());
    assert.equal(new URL(page.url()).pathname, `${new URL(consent_url).pathname}/denied/youtube`);
    assert.equal(await heading(page), 'You did not give access to YouTube');
    assert.match(await page.locator('main').innerText(), /Nothing was read from YouTube, and it is not connected/);
    await page.screenshot({ path: join(SCREENSHOT_DIR, 'denied-youtube-en.png'), fullPage: true });
    await click(page, () => page.getByRole('button', { name: 'Try YouTube again' }).click());
    assert.ok(page.url().startsWith(google.baseUrl), 'trying again goes back to Google');
    await click(page, () => page.locator(`button[data-email="${email}"]`).click());
    assert.equal(await page.locator('#status-youtube').innerText(), 'Status: Connected');

    await click(page, () => page.getByRole('button', { name: 'Connect Stripe' }).click());
    assert.ok(page.url().startsWith(stripe.baseUrl), page.url());
    await click(page, () => page.locator('button[value="deny"]').click());
    assert.equal(await heading(page), 'You did not give access to Stripe');
    await click(page, () => page.getByRole('link', { name: 'I do not want to share' }).click());
    await click(page, () => page.getByRole('button', { name: 'Yes, I do not want to share' }).click());
    assert.equal(await heading(page), 'You declined to share your income');
    const failed = await api<Verification>(live, 'GET', `/verifications/${id}`);
    assert.deepEqual([failed.status, failed.failure_reason], ['failed', 'consent_declined']);
    await context.close();
  });

  it('switches language with the links on the page, remembers it, and sends no Referer', async () => {
    const { consent_url } = await createVerification(live);
    const context = await browser.newContext({ locale: 'en-GB' });
    const page = await context.newPage();
    await page.goto(consent_url);
    const referers: string[] = [];
    page.on('request', (request) => {
      const referer = request.headers()['referer'];
      if (referer) referers.push(referer);
    });
    await click(page, () => page.getByRole('link', { name: 'Deutsch' }).click());
    assert.equal(await page.locator('html').getAttribute('lang'), 'de');
    assert.equal(await heading(page), 'Northwind Capital möchte Ihre Einnahmen als Creator prüfen');
    await click(page, () => page.getByRole('link', { name: 'Datenschutzhinweise' }).click());
    assert.equal(await heading(page), 'Datenschutzhinweise', 'the choice is remembered on the next page');
    await click(page, () => page.getByRole('link', { name: 'العربية' }).click());
    assert.deepEqual([await page.locator('html').getAttribute('lang'), await page.locator('html').getAttribute('dir')], ['ar', 'rtl']);
    assert.deepEqual(referers, [], 'a request carried a Referer (with the token in it)');
    assert.equal(await page.evaluate('document.referrer'), '');
    await context.close();
  });

  it("offers a way back to the lender's app on every page a link ends on, in every language, carrying only the verification and its outcome", async () => {
    const states: Array<[string, Record<string, unknown>]> = [
      ['completed', { status: 'completed', completed_at: new Date().toISOString() }],
      ['processing', { status: 'processing' }],
      ['failed', { status: 'failed', failure_reason: 'platform_error' }],
      ['failed', { status: 'failed', failure_reason: 'consent_declined' }],
      ['expired', { status: 'expired' }],
      ['cancelled', { status: 'cancelled' }],
    ];
    const open = await createVerification(live, ['youtube'], { return_url: `${lenderAppOrigin}/back?step=3` });
    for (const [outcome, fields] of states) {
      const verification = await createVerification(live, ['youtube'], { return_url: `${lenderAppOrigin}/back?step=3` });
      await live.service.db
        .knex('verifications')
        .where({ id: verification.verification_id })
        .update({ ...fields, updated_at: new Date().toISOString() });
      for (const { locale, acceptLanguage } of LANGUAGES) {
        const context = await browser.newContext({ extraHTTPHeaders: { 'accept-language': acceptLanguage } });
        const page = await context.newPage();
        await page.goto(verification.consent_url);
        const where = `${outcome} ${(fields.failure_reason as string | undefined) ?? ''} [${locale}]`;
        const back = page.locator(`a[href^="${lenderAppOrigin}/"]`);
        assert.equal(await back.count(), 1, where);
        const words = CATALOGUES[locale].returnToLender({ lender: 'Northwind Capital' });
        assert.equal((await back.innerText()).replace(/[\u2068\u2069]/g, ''), words, where);
        arrivals.length = 0;
        await Promise.all([page.waitForURL(`${lenderAppOrigin}/**`), back.click()]);
        assert.equal(await page.locator('h1').innerText(), 'Welcome back', where);
        const [arrived] = arrivals;
        assert.equal(arrived?.pathname, '/back', where);
        assert.deepEqual(
          [...arrived.searchParams.entries()].sort(),
          [
            ['outcome', outcome],
            ['step', '3'],
            ['verification_id', verification.verification_id],
          ].sort(),
          where,
        );
        await context.close();
      }
    }
    // A link still asking for consent offers no way back: nothing has ended.
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(open.consent_url);
    assert.equal(await page.locator(`a[href^="${lenderAppOrigin}/"]`).count(), 0);
    await context.close();
  });

  it('every page, in every language, at 375 px and 1280 px: lang and dir right, axe-core finds nothing, nothing overflows, every link resolves', async () => {
    const path = (url: string) => new URL(url).pathname;
    const open = await createVerification(live);
    const states: Array<[string, Record<string, unknown>, string]> = [
      ['completed', { status: 'completed', completed_at: new Date().toISOString() }, 'Your income summary was shared with Northwind Capital'],
      ['processing', { status: 'processing' }, 'Thank you: your income is being read'],
      ['failed-platform_error', { status: 'failed', failure_reason: 'platform_error' }, 'Your income could not be verified'],
      ['failed-consent_revoked', { status: 'failed', failure_reason: 'consent_revoked' }, 'Your income could not be verified'],
      ['failed-timeout', { status: 'failed', failure_reason: 'timeout' }, 'Your income could not be verified'],
      ['declined', { status: 'failed', failure_reason: 'consent_declined' }, 'You declined to share your income'],
      ['expired', { status: 'expired' }, 'This link has expired'],
      // The status the lender's cancel adds; its page exists before it does.
      ['cancelled', { status: 'cancelled' }, 'The lender withdrew this request'],
    ];
    const pages: Array<{ name: string; url: string; h1?: string; status: number }> = [
      { name: 'consent', url: open.consent_url, h1: 'Northwind Capital asks to verify your creator income', status: 200 },
      { name: 'decline-confirm', url: `${open.consent_url}/decline`, h1: 'Decline to share your income with Northwind Capital?', status: 200 },
      { name: 'denied', url: `${open.consent_url}/denied/youtube`, h1: 'You did not give access to YouTube', status: 200 },
      { name: 'provider-error', url: `${open.consent_url}/denied/stripe?why=error`, h1: 'Stripe could not be connected', status: 200 },
      { name: 'privacy', url: `${open.consent_url}/privacy`, h1: 'Privacy notice', status: 200 },
      { name: 'privacy-generic', url: `${live.base}/consent/privacy`, h1: 'Privacy notice', status: 200 },
      { name: 'unknown-link', url: `${live.base}/consent/AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcdefg`, h1: 'This link does not work', status: 404 },
      { name: 'not-found', url: `${live.base}/consent/no/such/page`, h1: 'Page not found', status: 404 },
    ];
    for (const [name, fields, h1] of states) {
      const verification = await createVerification(live);
      await live.service.db
        .knex('verifications')
        .where({ id: verification.verification_id })
        .update({ ...fields, updated_at: new Date().toISOString() });
      pages.push({ name, url: verification.consent_url, h1, status: name === 'expired' || name === 'cancelled' ? 410 : 200 });
    }
    const sandboxed = await createVerification(sandbox, ['youtube']);
    pages.push({ name: 'sandbox-provider', url: `${sandboxed.consent_url}/sandbox/youtube`, h1: 'YouTube sign-in (sandbox simulation)', status: 200 });

    const violations: string[] = [];
    const links = new Map<string, { from: string; status: number; language: string }>();
    const titles = new Map<string, Set<string>>();
    for (const { locale, acceptLanguage, dir } of LANGUAGES) {
      // The pages' CSP forbids scripts, rightly; only this scan's context bypasses it to inject axe.
      const context: BrowserContext = await browser.newContext({ bypassCSP: true, extraHTTPHeaders: { 'accept-language': acceptLanguage } });
      const page = await context.newPage();
      for (const target of pages) {
        await page.setViewportSize({ width: WIDTHS[0]!, height: 800 });
        const response = await page.goto(target.url);
        const where = `${target.name} [${locale}]`;
        assert.equal(response?.status(), target.status, where);
        assert.deepEqual([await page.locator('html').getAttribute('lang'), await page.locator('html').getAttribute('dir')], [locale, dir], where);
        if (locale === 'en' && target.h1) assert.equal(await heading(page), target.h1, where);
        const seen = titles.get(target.name) ?? new Set<string>();
        seen.add(await heading(page));
        titles.set(target.name, seen);
        await page.addScriptTag({ content: axeSource });
        for (const width of WIDTHS) {
          await page.setViewportSize({ width, height: 800 });
          const results: { violations: Array<{ id: string; help: string; nodes: Array<{ target: unknown }> }> } = await page.evaluate(
            `axe.run({ runOnly: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'], resultTypes: ['violations'] })`,
          );
          for (const v of results.violations) violations.push(`${where} at ${width}px: ${v.id} ${v.help} ${JSON.stringify(v.nodes.map((n) => n.target))}`);
          const overflow: number = await page.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth');
          assert.ok(overflow <= 0, `${where} at ${width}px scrolls sideways by ${overflow}px`);
          if (SCREENSHOTS && (locale === 'en' || locale === 'ar'))
            await page.screenshot({ path: join(SCREENSHOT_DIR, `${target.name}-${locale}-${width}.png`), fullPage: true });
        }
        const hrefs: string[] = await page.evaluate(`[...document.querySelectorAll('a[href]')].map((a) => a.href)`);
        for (const href of hrefs) if (!links.has(href)) links.set(href, { from: where, status: target.status, language: acceptLanguage });
      }
      await context.close();
    }
    assert.deepEqual(violations, []);
    // A page's headline is translated: five languages, five headlines.
    for (const [name, seen] of titles) assert.equal(seen.size, LANGUAGES.length, `${name}: ${[...seen].join(' | ')}`);

    // Every link leads somewhere real: a page, or (a language link of a 404 or 410 page) the same page in another language.
    assert.ok(links.size > 20, `only ${links.size} links`);
    const broken: string[] = [];
    for (const [href, { from, status, language }] of links) {
      assert.ok(href.startsWith(live.base) || href.startsWith(sandbox.base), `${from} links off-site: ${href}`);
      const response = await fetch(href, { redirect: 'manual', headers: { 'accept-language': language } });
      const samePage = path(href) === path(pages.find((p) => p.name === from.split(' ')[0])!.url);
      if (!(response.status === 200 || (samePage && response.status === status))) broken.push(`${from} → ${href}: ${response.status}`);
    }
    assert.deepEqual(broken, []);
  });
});
