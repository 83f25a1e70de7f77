import assert from 'node:assert/strict';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createRequire } from 'node:module';
import { chromium, type Browser } from 'playwright-core';
import { loadConfig } from '../../src/platform/config.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { startService, type Service } from '../../src/service.ts';
import { testDatabases, type TestDatabase } from '../support/test-databases.ts';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/**
 * The docs page at /docs: "Try it out" sends its requests to the deployment serving the page (not
 * the example host of the spec's servers), and the page links the changelog, rendered as a page.
 */
describe('docs page in Chromium', function () {
  this.timeout(60_000);
  let testDb: TestDatabase;
  let service: Service;
  let server: Server;
  let browser: Browser;
  let base: string;

  before(async function () {
    if (!existsSync(CHROMIUM)) {
      if (process.env.REQUIRE_CHROMIUM) throw new Error(`no Chromium at ${CHROMIUM}`);
      this.skip();
    }
    testDb = await testDatabases()[0]!.create();
    service = await startService(loadConfig({ DATABASE_URL: testDb.url }), createLogger({ level: 'silent' }));
    server = createServer(service.app).listen(0, '127.0.0.1');
    await once(server, 'listening');
    base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu', '--no-first-run'] });
  });
  after(async () => {
    await browser?.close();
    server?.close();
    await service?.close();
    await testDb?.drop();
  });

  it('Try it out calls the serving deployment: GET /healthz executed from the page answers 200', async () => {
    const page = await browser.newPage();
    await page.goto(`${base}/docs#/Operations/getHealth`);
    const servers = page.locator('.servers select');
    await servers.waitFor();
    assert.equal(await servers.inputValue(), base, 'the first server is the page origin');
    const operation = page.locator('#operations-Operations-getHealth');
    if (!(await operation.locator('.try-out__btn').isVisible())) await operation.locator('.opblock-summary').click();
    await operation.locator('.try-out__btn').click();
    const answered = page.waitForResponse((response) => response.url() === `${base}/healthz`);
    await operation.locator('.execute').click();
    assert.equal((await answered).status(), 200);
    await operation.locator('.live-responses-table .response-col_status').first().waitFor();
    assert.match(await operation.locator('.request-url pre').innerText(), new RegExp(`^${base}/healthz`));
    await page.close();
  });

  it('links the changelog, rendered as a page under its strict policy, which passes axe-core', async () => {
    const page = await browser.newPage();
    const refused: string[] = [];
    page.on('console', (message) => {
      if (/Content Security Policy/i.test(message.text())) refused.push(message.text());
    });
    // Nothing either page asks for is missing, its icon included (it was a 404).
    const failed: string[] = [];
    page.on('response', (response) => void (response.status() >= 400 && failed.push(`${response.status()} ${response.url()}`)));
    await page.goto(`${base}/docs`);
    await page.getByRole('link', { name: 'Changelog' }).click();
    await page.waitForURL(`${base}/docs/changelog`);
    await page.getByRole('heading', { level: 1, name: 'Changelog' }).waitFor();
    await page.getByRole('heading', { level: 2, name: '2026-03-19: API v1 and Risk Tape schema 1.0.0' }).waitFor();
    assert.ok(await page.locator('code', { hasText: /^declared_monthly_obligations_eur$/ }).count(), 'field names in code');
    assert.ok(!(await page.locator('body').innerText()).includes('## '), 'no Markdown left raw');
    // Its own style applies (allowed by hash), and nothing was refused by the policy.
    assert.match(await page.evaluate<string>('getComputedStyle(document.body).fontFamily'), /system-ui/);
    assert.deepEqual(refused, []);
    for (const path of ['/docs', '/docs/changelog']) {
      await page.goto(`${base}${path}`);
      const icon = await page.locator('link[rel="icon"]').getAttribute('href');
      assert.equal((await page.request.get(`${base}${icon}`)).status(), 200, `${path}: its icon ${icon}`);
    }
    assert.deepEqual(failed, []);
    await page.goto(`${base}/docs/changelog`);
    await page.getByRole('link', { name: 'API reference' }).waitFor();
    await page.close();

    // The policy forbids scripts, rightly; only this context bypasses it, to inject axe-core.
    const context = await browser.newContext({ bypassCSP: true });
    const audited = await context.newPage();
    await audited.goto(`${base}/docs/changelog`);
    await audited.addScriptTag({ content: readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8') });
    const results: { violations: Array<{ id: string; help: string }> } = await audited.evaluate(
      `axe.run({ runOnly: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'], resultTypes: ['violations'] })`,
    );
    assert.deepEqual(
      results.violations.map((v) => `${v.id}: ${v.help}`),
      [],
    );
    await context.close();
  });
});
