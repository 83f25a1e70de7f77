import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { AccountsRepository } from '../accounts/accounts-repository.ts';
import * as admin from '../accounts/lender-admin.ts';
import { adminContext } from '../admin/admin-context.ts';
import { ManualClock } from '../platform/clock.ts';
import { loadConfig } from '../platform/config.ts';
import { escapeHtml } from '../platform/html.ts';
import { createLogger } from '../platform/logger.ts';
import { startService, type Service } from '../service.ts';
import type { MonitoringRecord } from '../verifications/monitoring.ts';
import { testDatabases, type TestDatabase } from '../../test/support/test-databases.ts';
import { CATALOGUES, formatDateTime, LOCALES, type Locale } from './i18n/catalogue.ts';
import { outcomePage } from './pages.ts';
import { stopFormToken } from './stop-sharing.ts';

const LENDER = 'Northwind <Capital>';
/** The lender's name as a page of `locale` shows it: escaped, and isolated inside right-to-left text. */
const isolated = (locale: Locale, text: string) => (locale === 'ar' ? `\u2068${text}\u2069` : text);
const lenderOn = (locale: Locale) => isolated(locale, LENDER);
/** A catalogue text as the page holds it. */
const onPage = (text: string) => escapeHtml(text);
/** The stop form's token and the cookie it needs, read from a confirmation page's answer. */
const formOf = (page: request.Response) => ({
  token: /name="_csrf" value="([^"]+)"/.exec(page.text)?.[1] ?? assert.fail('no _csrf field on the page'),
  cookie:
    (page.headers['set-cookie'] as unknown as string[] | undefined)?.find((c) => c.startsWith('consent_stop='))?.split(';')[0] ?? assert.fail('no cookie'),
});

for (const factory of testDatabases()) {
  describe(`stopping ongoing monitoring from the consent link on ${factory.name}`, function () {
    this.timeout(60_000);
    let testDb: TestDatabase;
    let service: Service;
    let clock: ManualClock;
    let key: string;

    /** A synthetic creator (`demo_prime_multi`) completes at creation: with monitoring, it is active at once. */
    const create = async (body: { obligor_reference?: string; monitoring?: { months: number } } = {}) => {
      const response = await request(service.app)
        .post('/api/v1/verifications')
        .auth(key, { type: 'bearer' })
        .set('Idempotency-Key', randomUUID())
        .send({ obligor_reference: `obligor-${randomUUID()}`, creator_platforms: ['youtube', 'stripe'], lender_name: LENDER, ...body });
      assert.equal(response.status, 201, response.text);
      return { id: response.body.verification_id as string, path: new URL(response.body.consent_url).pathname };
    };
    const verification = async (id: string) => (await request(service.app).get(`/api/v1/verifications/${id}`).auth(key, { type: 'bearer' })).body;
    const endings = async (id: string) =>
      (await service.verifications.eventsOf(id)).filter((e) => e.name === 'verification.monitoring_ended').map((e) => (e.payload as { reason: string }).reason);

    before(async () => {
      testDb = await factory.create();
      clock = new ManualClock('2026-11-21T10:00:00.000Z');
      service = await startService(loadConfig({ DATABASE_URL: testDb.url, VALIDATE_RESPONSES: '1' }), createLogger({ level: 'silent' }), { clock });
      const ctx = adminContext({ mode: 'sandbox' }, new AccountsRepository(service.db.knex), clock);
      const lender = await admin.createLender(ctx, { name: LENDER });
      key = (await admin.createKey(ctx, { lenderId: lender.id, role: 'lender' })).apiKey;
    });
    after(async () => {
      await service.close();
      await testDb.drop();
    });

    it('the consent page of a monitored verification says who, how often, for how long and how to stop, in every language; a one-time one says none of it', async () => {
      const monitored = await create({ monitoring: { months: 3 } });
      const oneTime = await create();
      for (const locale of LOCALES) {
        const m = CATALOGUES[locale];
        const lender = lenderOn(locale);
        const page = (await request(service.app).get(`${monitored.path}?lang=${locale}`)).text;
        for (const text of [m.monitoringTitle, m.monitoringPlanned({ lender, months: 3 }), m.monitoringStopAnyTime({ lender }), m.monitoringConsentCovers]) {
          assert.ok(page.includes(onPage(text)), `${locale}: ${text}`);
        }
        const plain = (await request(service.app).get(`${oneTime.path}?lang=${locale}`)).text;
        for (const text of [m.monitoringTitle, m.monitoringStopAnyTime({ lender }), m.monitoringConsentCovers]) {
          assert.ok(!plain.includes(onPage(text)), `${locale}, one-time: ${text}`);
        }
        assert.doesNotMatch(plain, /id="ongoing"|\/stop"/, `${locale}, one-time`);
      }
      // The words themselves, not only the catalogue's: the length and the language's plural.
      const words = {
        en: 'for 3 months after your first summary',
        de: '3 Monate lang',
        fr: 'pendant 3 mois après',
        es: 'durante 3 meses después',
        ar: 'لمدة 3 أشهر',
      };
      for (const [locale, text] of Object.entries(words))
        assert.ok((await request(service.app).get(`${monitored.path}?lang=${locale}`)).text.includes(text), locale);
      assert.equal((await verification(monitored.id)).monitoring.state, 'pending', 'opening the page changes nothing');
    });

    it('after completion the link shows what is shared with whom until a concrete date in the language, and a Stop sharing button; a one-time link does not', async () => {
      const { id, path } = await create({ obligor_reference: 'demo_prime_multi', monitoring: { months: 3 } });
      const monitoring = (await verification(id)).monitoring;
      assert.deepEqual([monitoring.state, monitoring.ends_at], ['active', '2027-02-21T10:00:00.000Z']);
      const dates = {
        en: 'February 21, 2027 at 10:00 AM UTC',
        de: '21. Februar 2027 um 10:00 UTC',
        fr: '21 février 2027',
        es: '21 de febrero de 2027',
        ar: 'فبراير',
      };
      for (const locale of LOCALES) {
        const m = CATALOGUES[locale];
        const page = await request(service.app).get(`${path}?lang=${locale}`);
        assert.equal(page.status, 200);
        assert.ok(page.text.includes(`<h1>${onPage(m.completedTitle({ lender: lenderOn(locale) }))}</h1>`), locale);
        assert.ok(page.text.includes(`<h2 id="shared">${onPage(m.sharingTitle)}</h2>`), locale);
        assert.ok(page.text.includes(dates[locale]), `${locale}: the end of the window, ${dates[locale]}`);
        assert.ok(page.text.includes(`<form method="get" action="${path}/stop">\n<button type="submit">${onPage(m.stopButton)}</button>`), locale);
      }
      const plain = await create({ obligor_reference: 'demo_prime_multi' });
      const page = await request(service.app).get(plain.path);
      assert.match(page.text, /<h1>Your income summary was shared with Northwind &lt;Capital&gt;<\/h1>/);
      assert.doesNotMatch(page.text, /id="shared"|Stop sharing|\/stop"/);
      const stop = await request(service.app).get(`${plain.path}/stop`);
      assert.deepEqual([stop.status, stop.headers.location], [303, plain.path], 'a one-time link has no confirmation page');
    });

    it('stops only after the confirmation, with the token of the browser that opened it; a missing or forged token changes nothing', async () => {
      const { id, path } = await create({ obligor_reference: 'demo_prime_multi', monitoring: { months: 3 } });
      const other = await create({ obligor_reference: 'demo_prime_multi', monitoring: { months: 3 } });
      const stillActive = async (why: string) => {
        assert.equal((await verification(id)).monitoring.state, 'active', why);
        assert.deepEqual(await endings(id), [], why);
      };

      const confirm = await request(service.app).get(`${path}/stop`);
      assert.equal(confirm.status, 200);
      assert.match(confirm.text, /<h1>Stop sharing your income with Northwind &lt;Capital&gt;\?<\/h1>/);
      assert.ok(confirm.text.includes('Northwind &lt;Capital&gt; will no longer receive updates'));
      assert.ok(confirm.text.includes('The summaries already sent stay with Northwind &lt;Capital&gt;'));
      assert.ok(confirm.text.includes(`<form method="post" action="${path}/stop">`));
      assert.ok(confirm.text.includes(`<a href="${path}">No, keep sharing</a>`));
      for (const directive of ["default-src 'none'", "form-action 'self'", "frame-ancestors 'none'"])
        assert.ok(confirm.headers['content-security-policy']?.includes(directive));
      assert.equal(confirm.headers['referrer-policy'], 'no-referrer');
      assert.equal(confirm.headers['cache-control'], 'no-store');
      const cookie = (confirm.headers['set-cookie'] as unknown as string[]).find((c) => c.startsWith('consent_stop=')) ?? '';
      for (const attribute of [/HttpOnly/, /SameSite=Strict/, /Path=\/consent;/, /Max-Age=3600/]) assert.match(cookie, attribute);
      const form = formOf(confirm);
      await stillActive('opening the confirmation');

      const attempts: Array<[string, request.Test]> = [
        ['no token, no cookie', request(service.app).post(`${path}/stop`).type('form').send({})],
        ['no token', request(service.app).post(`${path}/stop`).set('Cookie', form.cookie).type('form').send({})],
        ['no cookie', request(service.app).post(`${path}/stop`).type('form').send({ _csrf: form.token })],
        [
          'a forged token',
          request(service.app)
            .post(`${path}/stop`)
            .set('Cookie', form.cookie)
            .type('form')
            .send({ _csrf: 'x'.repeat(43) }),
        ],
        [
          "a token made with another browser's secret",
          request(service.app)
            .post(`${path}/stop`)
            .set('Cookie', form.cookie)
            .type('form')
            .send({ _csrf: stopFormToken('another-browser', path.split('/').pop()!) }),
        ],
        [
          "another link's token",
          request(service.app)
            .post(`${path}/stop`)
            .set('Cookie', form.cookie)
            .type('form')
            .send({ _csrf: stopFormToken(decodeURIComponent(form.cookie.split('=')[1]!), other.path.split('/').pop()!) }),
        ],
        ['two tokens', request(service.app).post(`${path}/stop`).set('Cookie', form.cookie).type('form').send(`_csrf=${form.token}&_csrf=${form.token}`)],
      ];
      for (const [why, attempt] of attempts) {
        const refused = await attempt;
        assert.equal(refused.status, 403, why);
        assert.match(refused.text, /<h1>This request was refused<\/h1>/, why);
        assert.match(refused.text, /sharing was not stopped/, why);
        await stillActive(why);
      }
      const crossSite = await request(service.app)
        .post(`${path}/stop`)
        .set('Cookie', form.cookie)
        .set('Sec-Fetch-Site', 'cross-site')
        .type('form')
        .send({ _csrf: form.token });
      assert.equal(crossSite.status, 403, 'another site’s form, even with the token');
      await stillActive('cross-site');

      const stopped = await request(service.app)
        .post(`${path}/stop`)
        .set('Cookie', form.cookie)
        .set('Sec-Fetch-Site', 'same-origin')
        .type('form')
        .send({ _csrf: form.token });
      assert.deepEqual([stopped.status, stopped.headers.location], [303, path]);
      const ended = (await verification(id)).monitoring;
      assert.deepEqual([ended.state, ended.end_reason, ended.next_refresh_at], ['ended', 'stopped_by_creator', null]);
      assert.deepEqual(await endings(id), ['stopped_by_creator']);
      assert.equal((await verification(other.id)).monitoring.state, 'active', 'the other link is untouched');

      const result = await request(service.app).get(path);
      assert.equal(result.status, 200);
      assert.match(result.text, /<h1>You stopped sharing your income with Northwind &lt;Capital&gt;<\/h1>/);
      assert.ok(result.text.includes('Sharing has stopped: Northwind &lt;Capital&gt; receives no more updates of your income.'));
      assert.ok(result.text.includes('The summaries sent until then stay with Northwind &lt;Capital&gt;.'));
      assert.doesNotMatch(result.text, /stopped_by_creator|vrf_|\/stop"/, 'no internal words, no second stop');

      // Stopping twice (a double click, the back button) is harmless: the same page, no second event.
      const again = await request(service.app).post(`${path}/stop`).set('Cookie', form.cookie).type('form').send({ _csrf: form.token });
      assert.deepEqual([again.status, again.headers.location], [303, path]);
      assert.deepEqual(await endings(id), ['stopped_by_creator']);
      const confirmAgain = await request(service.app).get(`${path}/stop`);
      assert.deepEqual([confirmAgain.status, confirmAgain.headers.location], [303, path]);
    });

    it('speaks the language of the link on the confirmation and the result, right to left in Arabic', async () => {
      const { path } = await create({ obligor_reference: 'demo_prime_multi', monitoring: { months: 1 } });
      const confirm = await request(service.app).get(`${path}/stop`).set('Accept-Language', 'ar-AE');
      assert.match(confirm.text, /<html lang="ar" dir="rtl">/);
      assert.ok(confirm.text.includes(onPage(CATALOGUES.ar.stopConfirmTitle({ lender: lenderOn('ar') }))));
      assert.ok(confirm.text.includes(`href="${path}/stop?lang=de"`), 'the language links reload the confirmation');
      const form = formOf(confirm);
      await request(service.app).post(`${path}/stop`).set('Cookie', form.cookie).type('form').send({ _csrf: form.token }).expect(303);
      const result = await request(service.app).get(path).set('Accept-Language', 'ar-AE');
      assert.match(result.text, /<html lang="ar" dir="rtl">/);
      assert.ok(result.text.includes(`<h1>${onPage(CATALOGUES.ar.stoppedTitle({ lender: lenderOn('ar') }))}</h1>`));
      const german = await request(service.app).get(path).set('Accept-Language', 'de');
      assert.match(german.text, /<h1>Sie haben das Teilen Ihrer Einnahmen mit Northwind &lt;Capital&gt; beendet<\/h1>/);
    });

    it('says plainly when the lender stopped the updates, and offers no stop', async () => {
      const { id, path } = await create({ obligor_reference: 'demo_prime_multi', monitoring: { months: 6 } });
      const stop = await request(service.app)
        .post(`/api/v1/verifications/${id}/monitoring/stop`)
        .auth(key, { type: 'bearer' })
        .set('Idempotency-Key', randomUUID());
      assert.equal(stop.status, 200, stop.text);
      const page = await request(service.app).get(path);
      assert.match(page.text, /<h1>Your income is no longer shared with Northwind &lt;Capital&gt;<\/h1>/);
      assert.ok(page.text.includes('Northwind &lt;Capital&gt; stopped the monthly updates.'));
      assert.doesNotMatch(page.text, /\/stop"/);
      assert.deepEqual(await endings(id), ['stopped_by_lender']);
    });

    it('stops nothing before the first summary: the pending link declines, the processing page tells what follows', async () => {
      const { id, path } = await create({ monitoring: { months: 2 } });
      assert.deepEqual([(await request(service.app).get(`${path}/stop`)).headers.location], [path], 'an open link has no confirmation page');
      await request(service.app).post(`${path}/connect/youtube`).expect(303);
      await request(service.app).post(`${path}/sandbox/youtube`).type('form').send({ decision: 'allow' }).expect(303);
      await request(service.app).post(`${path}/complete`).expect(303);
      const processing = await request(service.app).get(path);
      assert.match(processing.text, /<h1>Thank you: your income is being read<\/h1>/);
      assert.ok(processing.text.includes('After this first summary, your income is read again once a month for 2 months'));
      assert.doesNotMatch(processing.text, /\/stop"/);
      assert.equal((await verification(id)).monitoring.state, 'pending');
    });
  });
}

describe('the pages of ongoing monitoring, for each way it ends', () => {
  const monitoring = (over: Partial<MonitoringRecord>): MonitoringRecord => ({
    months: 3,
    state: 'ended',
    endReason: null,
    startsAt: '2026-11-21T10:00:00.000Z',
    endsAt: '2027-02-21T10:00:00.000Z',
    lastRefreshAt: null,
    nextRefreshAt: null,
    refreshRequestedAt: null,
    lastDemandedRefreshAt: null,
    refreshes: 0,
    failedRefreshes: 0,
    ...over,
  });
  const completed = {
    id: 'vrf_x',
    status: 'completed' as const,
    failureReason: null,
    updatedAt: '2027-02-21T10:00:00.000Z',
    completedAt: '2026-11-21T10:00:00.000Z',
    returnUrl: null,
  };
  const ctx = (locale: Locale) => ({ locale, token: 'AbCdEfGhIjKlMnOpQrStUv', lenderName: LENDER, registeredLenderName: LENDER });

  it('names the reason in plain words in every language, with the date when the window ran out', () => {
    for (const locale of LOCALES) {
      const m = CATALOGUES[locale];
      const lender = lenderOn(locale);
      const cases: Array<[MonitoringRecord['endReason'], string, string]> = [
        ['window_over', m.sharingEndedTitle({ lender }), m.endedWindowOver({ date: isolated(locale, formatDateTime(locale, '2027-02-21T10:00:00.000Z')) })],
        ['stopped_by_creator', m.stoppedTitle({ lender }), m.endedByYou({ lender })],
        ['stopped_by_lender', m.sharingEndedTitle({ lender }), m.endedByLender({ lender })],
        ['grant_revoked', m.sharingEndedTitle({ lender }), m.endedAccessWithdrawn],
        // A reason the contract adds later still gets a sentence.
        ['some_new_reason' as MonitoringRecord['endReason'], m.sharingEndedTitle({ lender }), m.endedOther],
      ];
      for (const [endReason, title, why] of cases) {
        const page = outcomePage(ctx(locale), { ...completed, monitoring: monitoring({ endReason }) });
        assert.ok(page.includes(`<h1>${onPage(title)}</h1>`), `${locale} ${endReason}`);
        assert.ok(page.includes(onPage(why)), `${locale} ${endReason}: ${why}`);
        assert.ok(page.includes(onPage(m.endedKept({ lender }))), `${locale} ${endReason}`);
        assert.ok(!page.includes('/stop"'), `${locale} ${endReason}`);
      }
    }
    const over = outcomePage(ctx('en'), { ...completed, monitoring: monitoring({ endReason: 'window_over' }) });
    assert.ok(over.includes('The period you agreed to ended on February 21, 2027 at 10:00 AM UTC.'));
  });

  it('leaves the outcome pages of a one-time verification as they were, and those of a monitored one that never completed', () => {
    for (const locale of LOCALES) {
      for (const status of ['completed', 'processing', 'failed', 'expired', 'cancelled'] as const) {
        const oneTime = outcomePage(ctx(locale), { ...completed, status, monitoring: null });
        const failedMonitored = outcomePage(ctx(locale), {
          ...completed,
          status,
          monitoring: monitoring({ state: 'ended', endReason: 'not_completed', startsAt: null }),
        });
        if (status !== 'completed' && status !== 'processing') assert.equal(failedMonitored, oneTime, `${locale} ${status}`);
        assert.ok(!oneTime.includes('id="shared"') && !oneTime.includes('/stop"'), `${locale} ${status}`);
      }
    }
  });
});
