import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createRequire } from 'node:module';
import { chromium, type Browser, type Page } from 'playwright-core';
import type { components } from '../../generated/api.ts';
import { DEMO_DASHBOARD_USER } from '../../src/dashboard/dashboard-users.ts';
import { loadConfig, PUBLIC_DEMO_API_KEY } from '../../src/platform/config.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { startService, type Service } from '../../src/service.ts';
import { freePort } from '../support/free-port.ts';
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

describe('a monitored verification in the lender dashboard: chart, table, Refresh now, Stop monitoring (headless Chromium)', function () {
  this.timeout(120_000);
  let testDb: TestDatabase;
  let service: Service;
  let server: Server;
  let base: string;
  let browser: Browser;
  let page: Page;
  /** What the browser reports about the page: a CSP refusal of an inline style would be one. */
  const consoleErrors: string[] = [];

  before(async function () {
    if (!existsSync(CHROMIUM)) {
      // CI installs Chromium and sets REQUIRE_CHROMIUM, so there a missing browser fails instead of skipping.
      if (process.env.REQUIRE_CHROMIUM) throw new Error(`no Chromium at ${CHROMIUM}`);
      this.skip();
    }
    testDb = await testDatabases()[0]!.create();
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    // The sandbox's demo lender, its public key and its dashboard admin, as `npm start` makes them.
    const config = loadConfig({
      DATABASE_URL: testDb.url,
      SERVICE_MODE: 'sandbox',
      PUBLIC_BASE_URL: base,
      SANDBOX_COMPLETE_DELAY_MS: '300',
      LOG_LEVEL: 'silent',
    });
    service = await startService(config, createLogger({ level: 'silent' }));
    server = createServer(service.app);
    server.listen(port, '127.0.0.1');
    await once(server, 'listening');
    service.jobs.start(50);
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
    // No bypassCSP: the chart is checked under the dashboard's real policy.
    page = await (await browser.newContext()).newPage();
    page.on('console', (message) => {
      // A refusal page's status (the 429 of a second refresh) and the favicon's 404 are reported too; they are meant.
      if (message.type() === 'error' && !message.text().startsWith('Failed to load resource')) consoleErrors.push(message.text());
    });
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
      headers: { authorization: `Bearer ${PUBLIC_DEMO_API_KEY}`, 'content-type': 'application/json', 'idempotency-key': randomUUID() },
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

  /** axe-core through the DevTools protocol, which the CSP does not govern: the page runs under its real policy. */
  const violations: string[] = [];
  async function audit(where: string): Promise<void> {
    const results: { violations: Array<{ id: string; help: string; nodes: Array<{ target: unknown }> }> } = await page.evaluate(
      `${axeSource}; axe.run({ runOnly: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'], resultTypes: ['violations'] })`,
    );
    for (const v of results.violations) violations.push(`${where}: ${v.id} ${v.help} ${JSON.stringify(v.nodes.map((n) => n.target))}`);
  }

  it('signs in, sees the income chart and its table, presses Refresh now, sees the refresh waiting, then its tape, then the once-a-day refusal, and stops monitoring; axe finds nothing', async () => {
    const created = await api<Verification>('POST', '/verifications', {
      obligor_reference: 'demo_prime_multi',
      creator_platforms: ['youtube', 'stripe'],
      monitoring: { months: 3 },
    });
    assert.equal(created.status, 'completed', 'a synthetic creator completes at creation');
    const id = created.verification_id;

    await page.goto(`${base}/dashboard/sign-in`);
    await page.getByLabel('Email').fill(DEMO_DASHBOARD_USER.email);
    await page.getByLabel('Password').fill(DEMO_DASHBOARD_USER.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    assert.equal(new URL(page.url()).pathname, '/dashboard/verifications');
    await page.getByRole('link', { name: id }).first().click();
    assert.equal(await page.getByRole('heading', { level: 1 }).innerText(), `Verification ${id}`);

    // The chart: drawn at a readable size under the real CSP, named, and followed by its figures.
    const chart = page.locator('svg[role=img]');
    assert.equal(await chart.count(), 1);
    assert.equal(await page.getByRole('img', { name: 'Monthly income per platform, in euro' }).count(), 1);
    const box = await chart.boundingBox();
    assert.ok(box && box.width > 300 && box.height > 100, `chart drawn at ${JSON.stringify(box)}`);
    assert.ok((await chart.locator('rect title').count()) >= 6, 'a bar per platform and month');
    const figures = page.getByRole('table', { name: /Monthly income per platform, in euro/ });
    assert.ok(await figures.isVisible());
    const months = await figures.locator('tbody th[scope=row]').allInnerTexts();
    assert.ok(months.length >= 3, `months tabulated: ${months.join(', ')}`);
    assert.deepEqual(await figures.locator('thead th').allInnerTexts(), ['Month', 'youtube', 'stripe', 'All platforms']);
    const history = page.getByRole('region', { name: 'Tape history table' }).locator('tbody tr');
    assert.equal(await history.count(), 1);
    await audit('monitored verification');

    // Printed: the table whole, the forms not.
    await page.emulateMedia({ media: 'print' });
    assert.ok(await figures.isVisible());
    assert.ok(!(await page.getByRole('button', { name: 'Refresh now' }).isVisible()), 'no buttons on paper');
    await page.emulateMedia({ media: 'screen' });

    // Refresh now: queued, shown waiting, then its tape at the top of the history.
    await page.getByRole('button', { name: 'Refresh now' }).click();
    assert.match(await page.getByRole('status').innerText(), /Refresh requested/);
    const monitoring = page.getByRole('region', { name: 'Ongoing monitoring' });
    assert.match(await monitoring.innerText(), /Refresh on demand\s+waiting, asked/);
    await audit('refresh requested');
    await until('the refresh done', async () => (await api<Verification>('GET', `/verifications/${id}`)).monitoring?.refresh_requested_at === null);
    await page.reload();
    assert.equal(await history.count(), 2);
    assert.match(await history.first().innerText(), /refresh/);
    assert.match(await monitoring.innerText(), /Refresh on demand\s+none waiting/);

    // Again: once a day, and when the next is possible.
    await page.getByRole('button', { name: 'Refresh now' }).click();
    assert.match(
      await page.getByRole('alert').innerText(),
      /Not refreshed: Refresh now works once a day\. The next is possible from \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC\./,
    );
    await audit('refresh refused');

    // The earlier tape, from its row.
    await history.nth(1).getByRole('link').click();
    assert.equal(await page.getByRole('heading', { name: 'Earlier Risk Tape' }).count(), 1);
    await audit('earlier tape');

    // Stop monitoring, through its confirmation.
    await page.getByRole('link', { name: 'Show the latest tape' }).click();
    await page.getByRole('button', { name: 'Stop monitoring…' }).click();
    assert.match(await page.getByRole('heading', { level: 1 }).innerText(), /^Stop monitoring verification .+\?$/);
    await audit('stop confirmation');
    await page.getByRole('button', { name: 'Stop monitoring', exact: true }).click();
    assert.match(await page.getByRole('status').innerText(), /Monitoring stopped/);
    assert.match(await monitoring.innerText(), /ended: stopped from your account/);
    assert.equal(await page.getByRole('button', { name: 'Refresh now' }).count(), 0);
    assert.equal((await api<Verification>('GET', `/verifications/${id}`)).monitoring?.end_reason, 'stopped_by_lender');
    await audit('monitoring stopped');

    assert.deepEqual(consoleErrors, [], 'no CSP refusal or other error in the console');
    assert.deepEqual(violations, []);
  });
});
