import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { AccountsRepository } from '../accounts/accounts-repository.ts';
import * as admin from '../accounts/lender-admin.ts';
import { ManualClock } from '../platform/clock.ts';
import { loadConfig } from '../platform/config.ts';
import { testDatabases, type TestDatabase } from '../../test/support/test-databases.ts';
import { createLogger } from '../platform/logger.ts';
import { adminContext } from '../admin/admin-context.ts';
import { startService, type Service } from '../service.ts';

for (const factory of testDatabases()) {
  describe(`creator consent pages on ${factory.name}`, function () {
    this.timeout(60_000);
    let testDb: TestDatabase;
    let service: Service;
    let clock: ManualClock;
    let key: string;

    const create = async (platforms: string[], reference = `obligor-${randomUUID()}`) => {
      const response = await request(service.app)
        .post('/api/v1/verifications')
        .auth(key, { type: 'bearer' })
        .set('Idempotency-Key', randomUUID())
        .send({ obligor_reference: reference, creator_platforms: platforms, lender_name: 'Northwind <Capital>' });
      assert.equal(response.status, 201, response.text);
      return { id: response.body.verification_id as string, path: new URL(response.body.consent_url).pathname };
    };
    const status = async (id: string) => (await request(service.app).get(`/api/v1/verifications/${id}`).auth(key, { type: 'bearer' })).body;
    const connect = async (path: string, platform: string) => {
      const start = await request(service.app).post(`${path}/connect/${platform}`);
      assert.equal(start.status, 303);
      assert.equal(start.headers.location, `${path}/sandbox/${platform}`);
      const page = await request(service.app).get(start.headers.location);
      assert.equal(page.status, 200);
      assert.match(page.text, /sandbox simulation/);
      return request(service.app).post(start.headers.location).type('form').send({ decision: 'allow' });
    };

    before(async () => {
      testDb = await factory.create();
      clock = new ManualClock('2026-11-21T10:00:00.000Z');
      service = await startService(
        loadConfig({ DATABASE_URL: testDb.url, VALIDATE_RESPONSES: '1', PROCESSING_WINDOW_SECONDS: '900' }),
        createLogger({ level: 'silent' }),
        { clock },
      );
      const ctx = adminContext({ mode: 'sandbox' }, new AccountsRepository(service.db.knex), clock);
      // Registered under the name its requests give, so the pages show that name alone.
      const lender = await admin.createLender(ctx, { name: 'Northwind <Capital>' });
      key = (await admin.createKey(ctx, { lenderId: lender.id, role: 'lender' })).apiKey;
    });
    after(async () => {
      await service.close();
      await testDb.drop();
    });

    it("shows the account's registered name beside a lender_name that differs from it, in every language and on every page", async () => {
      const response = await request(service.app)
        .post('/api/v1/verifications')
        .auth(key, { type: 'bearer' })
        .set('Idempotency-Key', randomUUID())
        .send({ obligor_reference: `obligor-${randomUUID()}`, creator_platforms: ['youtube'], lender_name: 'Acme Capital' });
      assert.equal(response.status, 201, response.text);
      const path = new URL(response.body.consent_url).pathname;
      const expected: Record<string, string> = {
        en: '<h1>Acme Capital (account: Northwind &lt;Capital&gt;) asks to verify your creator income</h1>',
        de: '<h1>Acme Capital (Konto: Northwind &lt;Capital&gt;) möchte Ihre Einnahmen als Creator prüfen</h1>',
        es: 'Acme Capital (cuenta: Northwind &lt;Capital&gt;)',
        fr: 'Acme Capital (compte : Northwind &lt;Capital&gt;)',
        ar: '\u2068Acme Capital\u2069 (الحساب: \u2068Northwind &lt;Capital&gt;\u2069)',
      };
      for (const [lang, text] of Object.entries(expected)) {
        const page = await request(service.app).get(`${path}?lang=${lang}`);
        assert.equal(page.status, 200);
        assert.ok(page.text.includes(text), `${lang}: ${text}`);
        assert.doesNotMatch(page.text.replaceAll(text, ''), /Acme Capital(?! \(|\u2069 \()/, `${lang}: the supplied name never appears alone`);
      }
      const privacy = await request(service.app).get(`${path}/privacy?lang=en`);
      assert.ok(privacy.text.includes('Acme Capital (account: Northwind &lt;Capital&gt;) is the controller'));
    });

    it('shows the lender, the platforms, what is read and never seen, and the expiry, with strict headers', async () => {
      const { path } = await create(['youtube', 'stripe']);
      const page = await request(service.app).get(path);
      assert.equal(page.status, 200);
      assert.match(page.headers['content-type'] ?? '', /text\/html/);
      assert.match(page.text, /Northwind &lt;Capital&gt; asks to verify your creator income/);
      assert.doesNotMatch(page.text, /<Capital>/, 'the lender name is not escaped');
      for (const text of [
        'YouTube',
        'Stripe',
        'yt-analytics-monetary.readonly',
        'read_only',
        'What is never seen or shared',
        'November 28, 2026 at 10:00 AM UTC',
      ])
        assert.ok(page.text.includes(text), text);
      assert.match(page.text, /<button type="submit" disabled aria-disabled="true">Give consent and finish<\/button>/);
      assert.doesNotMatch(page.text, /<script|https?:\/\/(?!127)/, 'scripts or third-party assets');
      const csp = page.headers['content-security-policy'] ?? '';
      for (const directive of ["default-src 'none'", "frame-ancestors 'none'", "form-action 'self'"]) assert.ok(csp.includes(directive), directive);
      assert.equal(page.headers['referrer-policy'], 'no-referrer');
      assert.equal(page.headers['x-frame-options'], 'DENY');
      const css = await request(service.app).get('/consent/assets/consent.css');
      assert.equal(css.status, 200);
      assert.match(css.headers['content-type'] ?? '', /text\/css/);
    });

    it('connects platforms through the simulated provider step, refuses a second connection, and completes', async () => {
      const { id, path } = await create(['youtube', 'stripe']);
      const back = await connect(path, 'youtube');
      assert.equal(back.status, 303);
      const page = await request(service.app).get(back.headers.location!);
      assert.match(page.text, /YouTube is connected/);
      assert.match(page.text, /id="status-youtube"><span class="label">Status:<\/span> <strong>Connected/);
      const again = await request(service.app).post(`${path}/connect/youtube`);
      assert.equal(again.status, 422);
      assert.match(again.text, /already connected/);
      assert.deepEqual((await status(id)).platform_connections, [
        { platform: 'youtube', status: 'connected' },
        { platform: 'stripe', status: 'not_connected' },
      ]);
      const done = await request(service.app).post(`${path}/complete`);
      assert.equal(done.status, 303);
      assert.equal((await status(id)).status, 'processing');
      assert.match((await request(service.app).get(path)).text, /<h1>Thank you: your income is being read<\/h1>/);
      await service.jobs.runDue();
      const completed = await status(id);
      assert.equal(completed.status, 'completed');
      const tape = await request(service.app).get(`/api/v1/verifications/${id}/tape`).auth(key, { type: 'bearer' });
      assert.equal(tape.status, 200);
      assert.deepEqual(tape.body.platforms, ['youtube']);
      const stripe = tape.body.platform_connections.find((c: { platform: string }) => c.platform === 'stripe');
      assert.equal(stripe.status, 'not_connected');
      assert.ok(stripe.nd_codes.length > 0, 'an unconnected requested platform has no ND code');
    });

    it('refuses to finish before any platform is connected, and a denied platform stays unconnected', async () => {
      const { id, path } = await create(['stripe']);
      const denied = await request(service.app).post(`${path}/sandbox/stripe`).type('form').send({ decision: 'deny' });
      assert.equal(denied.status, 303);
      assert.equal(denied.headers.location, `${path}/denied/stripe`);
      const explained = await request(service.app).get(denied.headers.location);
      assert.equal(explained.status, 200);
      assert.match(explained.text, /<h1>You did not give access to Stripe<\/h1>/);
      assert.ok(explained.text.includes(`<form method="post" action="${path}/connect/stripe">`), 'offers to try again');
      assert.ok(explained.text.includes(`<a href="${path}/decline">I do not want to share</a>`), 'offers to decline');
      const refused = await request(service.app).post(`${path}/complete`);
      assert.equal(refused.status, 422);
      assert.equal((await status(id)).status, 'pending_consent');
    });

    it('declines after a confirmation: failed with consent_declined, one verification.failed event, and a page that says so', async () => {
      const { id, path } = await create(['youtube', 'stripe']);
      await connect(path, 'youtube');
      const page = await request(service.app).get(path);
      assert.ok(page.text.includes(`<a href="${path}/decline">I do not want to share</a>`));
      const confirm = await request(service.app).get(`${path}/decline`);
      assert.equal(confirm.status, 200);
      assert.match(confirm.text, /<h1>Decline to share your income with Northwind &lt;Capital&gt;\?<\/h1>/);
      assert.ok(confirm.text.includes(`<form method="post" action="${path}/decline">`));
      assert.equal((await status(id)).status, 'pending_consent', 'opening the confirmation changes nothing');

      const declined = await request(service.app).post(`${path}/decline`).type('form').send({});
      assert.equal(declined.status, 303);
      assert.equal(declined.headers.location, path);
      const failed = await status(id);
      assert.deepEqual([failed.status, failed.failure_reason], ['failed', 'consent_declined']);
      const events = await service.verifications.eventsOf(id);
      assert.deepEqual(
        events.map((e) => [e.name, (e.payload as { reason?: string }).reason]),
        [['verification.failed', 'consent_declined']],
      );
      const outcome = await request(service.app).get(path);
      assert.equal(outcome.status, 200);
      assert.match(outcome.text, /<h1>You declined to share your income<\/h1>/);
      assert.match(outcome.text, /Northwind &lt;Capital&gt; has been told that you do not want to share/);
      assert.doesNotMatch(outcome.text, /consent_declined|vrf_/, 'no internal detail on the page');

      // A second decline, or consent after it, changes nothing and shows how the link ended.
      for (const step of ['decline', 'complete']) {
        const again = await request(service.app).post(`${path}/${step}`);
        assert.equal(again.status, 303, step);
        assert.equal(again.headers.location, path);
      }
      assert.equal((await service.verifications.eventsOf(id)).length, 1);
    });

    it('takes only youtube and stripe as platform names, not names every object has (toString, constructor)', async () => {
      const { path } = await create(['youtube']);
      for (const name of ['toString', 'constructor', '__proto__', 'hasOwnProperty']) {
        const page = await request(service.app).get(`${path}?connected=${name}`);
        assert.equal(page.status, 200, `?connected=${name}: ${page.status}`);
        assert.doesNotMatch(page.text, /class="notice"/, `?connected=${name} announced a connection`);
        for (const [method, route] of [
          ['post', `${path}/connect/${name}`],
          ['get', `${path}/sandbox/${name}`],
          ['post', `${path}/sandbox/${name}`],
          ['get', `${path}/denied/${name}`],
        ] as const) {
          const response = await request(service.app)[method](route).type('form').send({ decision: 'allow' });
          assert.ok([303, 404].includes(response.status), `${method.toUpperCase()} ${route}: ${response.status}`);
        }
      }
    });

    it('refuses a form posted from another site (Sec-Fetch-Site), changing nothing', async () => {
      const { id, path } = await create(['youtube']);
      const forged = await request(service.app).post(`${path}/decline`).set('Sec-Fetch-Site', 'cross-site');
      assert.equal(forged.status, 403);
      assert.match(forged.text, /This request was refused/);
      assert.equal((await status(id)).status, 'pending_consent');
      const sameOrigin = await request(service.app).post(`${path}/decline`).set('Sec-Fetch-Site', 'same-origin');
      assert.equal(sameOrigin.status, 303);
    });

    it('speaks the language of Accept-Language, or the one chosen (remembered by a cookie), with lang and dir', async () => {
      const { path } = await create(['youtube']);
      const german = await request(service.app).get(path).set('Accept-Language', 'de-AT,de;q=0.9,en;q=0.5');
      assert.match(german.text, /<html lang="de" dir="ltr">/);
      assert.match(german.text, /<h1>Northwind &lt;Capital&gt; möchte Ihre Einnahmen als Creator prüfen<\/h1>/);
      assert.ok(german.text.includes('28. November 2026 um 10:00 UTC'), 'the date in German, the zone named');
      assert.match(german.headers.vary ?? '', /Accept-Language/);
      const arabic = await request(service.app).get(path).set('Accept-Language', 'ar-AE');
      assert.match(arabic.text, /<html lang="ar" dir="rtl">/);
      const unknown = await request(service.app).get(path).set('Accept-Language', 'pt-BR');
      assert.match(unknown.text, /<html lang="en" dir="ltr">/);

      const chosen = await request(service.app).get(`${path}?lang=fr`).set('Accept-Language', 'de');
      assert.match(chosen.text, /<html lang="fr" dir="ltr">/);
      const cookie = chosen.headers['set-cookie']?.[0] ?? '';
      assert.match(cookie, /^consent_lang=fr;/);
      assert.match(cookie, /Path=\/consent/);
      assert.match(cookie, /HttpOnly/);
      assert.match(cookie, /SameSite=Lax/);
      const remembered = await request(service.app).get(path).set('Accept-Language', 'de').set('Cookie', 'consent_lang=fr');
      assert.match(remembered.text, /<html lang="fr" dir="ltr">/);
      for (const locale of ['en', 'de', 'fr', 'es', 'ar'])
        assert.ok(chosen.text.includes(`href="${path}?lang=${locale}" lang="${locale}" hreflang="${locale}"`), locale);
      assert.equal((await request(service.app).get(`${path}?lang=xx`)).status, 200);
    });

    it('shows a privacy notice for the link (naming the lender) and one without a link', async () => {
      const { path } = await create(['youtube']);
      const page = await request(service.app).get(path);
      assert.ok(page.text.includes(`<a href="${path}/privacy">Privacy notice</a>`));
      const notice = await request(service.app).get(`${path}/privacy`);
      assert.equal(notice.status, 200);
      for (const text of [
        'Northwind &lt;Capital&gt; is the controller',
        'is the processor',
        'The consent link works for 7 days',
        'until you or the lender ask for them to be erased',
        'contact Northwind &lt;Capital&gt;',
      ])
        assert.ok(notice.text.includes(text), text);
      const generic = await request(service.app).get('/consent/privacy').set('Accept-Language', 'es');
      assert.equal(generic.status, 200);
      assert.match(generic.text, /<h1>Aviso de privacidad<\/h1>/);
      assert.doesNotMatch(generic.text, /Northwind/);
      assert.equal((await request(service.app).get('/consent/AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcdefg/privacy')).status, 404);
    });

    it('fails with timeout when collection outlasts the processing window (D18)', async () => {
      const { id, path } = await create(['youtube']);
      await connect(path, 'youtube');
      await request(service.app).post(`${path}/complete`);
      // The collection job is held back (its lease is taken) to let the window pass first.
      await service.db
        .knex('jobs')
        .where({ subject_id: id, kind: 'verification.collect_income' })
        .update({ status: 'running', locked_until: '2999-01-01T00:00:00.000Z' });
      clock.advance(900_000 - 1);
      await service.jobs.runDue();
      assert.equal((await status(id)).status, 'processing');
      clock.advance(1);
      await service.jobs.runDue();
      const failed = await status(id);
      assert.deepEqual([failed.status, failed.failure_reason], ['failed', 'timeout']);
    });

    it('answers unknown and expired links with a clear page that names nothing', async () => {
      const unknown = await request(service.app).get('/consent/AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcdefg');
      assert.equal(unknown.status, 404);
      assert.match(unknown.text, /This link does not work/);
      assert.doesNotMatch(unknown.text, /Northwind|vrf_/);
      const malformed = await request(service.app).get('/consent/%3Cscript%3E');
      assert.equal(malformed.status, 404);
      const { path } = await create(['youtube']);
      clock.advance(7 * 24 * 60 * 60 * 1000);
      const expired = await request(service.app).get(path);
      assert.equal(expired.status, 410);
      assert.match(expired.text, /expired/);
      assert.equal((await request(service.app).post(`${path}/connect/youtube`)).status, 410);
      clock.set('2026-11-21T10:00:00.000Z');
    });

    it('answers 503 with Retry-After, as a page for a creator, while the database is down (not a 500)', async () => {
      const scratch = await factory.create();
      const broken = await startService(loadConfig({ DATABASE_URL: scratch.url }), createLogger({ level: 'silent' }));
      await broken.db.close();
      for (const [method, path] of [
        ['get', '/consent/AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcdefg'],
        ['post', '/consent/AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcdefg/complete'],
      ] as const) {
        const page = await request(broken.app)[method](path);
        assert.equal(page.status, 503, `${method} ${path}`);
        assert.ok(Number(page.headers['retry-after']) >= 1);
        assert.match(page.headers['content-type'] ?? '', /text\/html/);
        assert.match(page.text, /try again/i);
      }
      await scratch.drop();
    });
  });
}
