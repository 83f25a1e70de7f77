import assert from 'node:assert/strict';
import { assertError } from './assertions.ts';
import { forEachTarget, requireKey, requireSandbox } from './harness.ts';
import { skipBecause } from './skip.ts';
import {
  cancelVerification,
  CREATE_PATH,
  created,
  getVerification,
  outcomeTimeoutMs,
  pollIntervalMs,
  randomReference,
  sleep,
  type Monitoring,
  type Tape,
  type Verification,
} from './sandbox.ts';

/**
 * Ongoing monitoring (P33): a verification created with `monitoring` is read again once a month for
 * the months asked, on demand at most once a day, with a tape history, and ends by its window, the
 * lender, the creator or a refused grant, each end announced once. The suite observes it through
 * the resource, the tape history, the tapes themselves and the event feed (GET /api/v1/events),
 * never the service's internals. The monthly schedule is learnt from the resource (`next_refresh_at`
 * minus `starts_at`): a deployment whose month is a calendar month skips the tests that wait for one.
 */

const EVENTS_PATH = '/api/v1/events';
const DAY_SECONDS = 24 * 60 * 60;
/** How far past a scheduled time the suite waits for the job that runs it. */
const SCHEDULE_GRACE_MS = 10_000;
/** The longest sandbox month the suite waits for. */
const LONGEST_WAITED_MONTH_MS = 20_000;

interface TapeSummary {
  tape_id: string;
  stored_at: string;
  reason: string;
  tape_generated_at: string;
  schema_version: string;
  tier: string;
  max_advance_eur: number;
  latest: boolean;
}

interface FeedEvent {
  event: string;
  event_id: string;
  verification_id: string;
  reason?: string;
  tape_id?: string;
  failed_refreshes?: number;
  next_refresh_at?: string | null;
  changes?: { tier: { before: string; after: string }; max_advance_eur: { before: number; after: number }; income_trend: unknown };
  data?: Record<string, unknown>;
}

forEachTarget((target) => {
  const path = (id: string, rest: string) => `${CREATE_PATH}/${id}${rest}`;
  const refresh = (id: string, key: 'lender' | 'otherLender' = 'lender') => target.api.post(path(id, '/refresh'), { key });
  const stop = (id: string, key: 'lender' | 'otherLender' = 'lender') => target.api.post(path(id, '/monitoring/stop'), { key });
  const monitoringOf = async (id: string): Promise<Monitoring> => {
    const monitoring = (await getVerification(target, id)).monitoring;
    assert.ok(monitoring, 'a monitored verification shows its monitoring');
    return monitoring;
  };
  const history = async (id: string, query = ''): Promise<{ data: TapeSummary[]; has_more: boolean }> => {
    const response = await target.api.get(path(id, `/tapes${query}`));
    assert.equal(response.status, 200, response.text);
    return response.json as { data: TapeSummary[]; has_more: boolean };
  };
  const eventsOf = async (id: string): Promise<FeedEvent[]> => {
    const response = await target.api.get(`${EVENTS_PATH}?verification_id=${id}&limit=100`);
    assert.equal(response.status, 200, response.text);
    return (response.json as { data: FeedEvent[] }).data;
  };
  const named = (events: FeedEvent[], name: string) => events.filter((e) => e.event === name);
  /** Polls until `done` holds (or the time is up), then returns the last value read. */
  const until = async <T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs: number): Promise<T> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = await read();
      if (done(value) || Date.now() > deadline) return value;
      await sleep(pollIntervalMs(target));
    }
  };
  /** A synthetic creator completes at creation: its monitoring is active at once. */
  const monitoredNow = (months: number) =>
    created(target, { obligor_reference: 'demo_prime_multi', creator_platforms: ['youtube', 'stripe'], monitoring: { months } });
  /** The deployment's month (the sandbox's SANDBOX_REFRESH_INTERVAL_MS); skips a test that would wait longer. */
  const shortMonthMs = (context: Mocha.Context, monitoring: Monitoring): number => {
    const month = Date.parse(monitoring.next_refresh_at!) - Date.parse(monitoring.starts_at!);
    if (month > LONGEST_WAITED_MONTH_MS) {
      skipBecause(
        context,
        `the deployment's month is ${month} ms; run a sandbox with SANDBOX_REFRESH_INTERVAL_MS ≤ ${LONGEST_WAITED_MONTH_MS} to see its schedule`,
      );
    }
    return month;
  };
  const waitForRefreshDone = (id: string) =>
    until(
      () => monitoringOf(id),
      (m) => m.refresh_requested_at === null,
      outcomeTimeoutMs(target),
    );

  describe('happy: asking for monitoring [op:createVerification 201]', () => {
    it('a real creator: monitoring pending until the first tape, with nothing scheduled yet', async () => {
      const verification = await created(target, {
        obligor_reference: randomReference('conformance-monitoring-'),
        creator_platforms: ['youtube'],
        monitoring: { months: 6 },
      });
      assert.deepEqual(verification.monitoring, {
        months: 6,
        state: 'pending',
        end_reason: null,
        starts_at: null,
        ends_at: null,
        last_refresh_at: null,
        next_refresh_at: null,
        refresh_requested_at: null,
        failed_refreshes: 0,
      });
      assert.deepEqual((await getVerification(target, verification.verification_id)).monitoring, verification.monitoring);
    });

    it('without `monitoring`, a one-time verification exactly as before: no monitoring field', async () => {
      const verification = await created(target, { obligor_reference: randomReference('conformance-one-time-'), creator_platforms: ['youtube'] });
      assert.equal('monitoring' in verification, false);
      assert.equal('monitoring' in (await getVerification(target, verification.verification_id)), false);
    });

    it('a synthetic creator: active from its completion, the window `months` long and the first refresh one month in', async function () {
      requireSandbox(this, target);
      const verification = await monitoredNow(3);
      const monitoring = verification.monitoring!;
      assert.equal(monitoring.state, 'active');
      assert.equal(monitoring.starts_at, verification.completed_at);
      const start = Date.parse(monitoring.starts_at!);
      const month = Date.parse(monitoring.next_refresh_at!) - start;
      assert.ok(month > 0, 'the first refresh is after the start');
      if (month < 28 * DAY_SECONDS * 1000) {
        // The sandbox's fixed month: the window is exactly three of them.
        assert.equal(Date.parse(monitoring.ends_at!) - start, 3 * month);
      } else {
        // Calendar months: 89 to 92 days for three.
        const days = (Date.parse(monitoring.ends_at!) - start) / (DAY_SECONDS * 1000);
        assert.ok(days >= 89 && days <= 92, `a three-month window of ${days} days`);
      }
      assert.equal(monitoring.last_refresh_at, null);
      const tapes = await history(verification.verification_id);
      assert.equal(tapes.data.length, 1);
      assert.equal(tapes.data[0]!.reason, 'completion');
      assert.equal(tapes.data[0]!.latest, true);
    });
  });

  describe('happy: a refresh on demand [op:refreshVerification 202] [op:listVerificationTapes 200] [event:tape.updated]', () => {
    it('202 with the refresh waiting; then a new latest tape, the history, and tape.updated saying what changed', async function () {
      requireSandbox(this, target);
      const verification = await monitoredNow(6);
      const id = verification.verification_id;
      const before = await history(id);
      const asked = await refresh(id);
      assert.equal(asked.status, 202, asked.text);
      const waiting = (asked.json as Verification).monitoring!;
      assert.equal(waiting.state, 'active');
      assert.ok(waiting.refresh_requested_at, 'the refresh is shown waiting');

      const done = await waitForRefreshDone(id);
      assert.equal(done.refresh_requested_at, null, 'the refresh ran within the outcome time');
      assert.ok(done.last_refresh_at && Date.parse(done.last_refresh_at) >= Date.parse(waiting.refresh_requested_at));
      assert.equal(done.failed_refreshes, 0);

      const after = await history(id);
      assert.equal(after.data.length, 2, JSON.stringify(after));
      const [latest, earlier] = after.data;
      assert.equal(latest!.reason, 'refresh');
      assert.equal(latest!.latest, true);
      assert.equal(earlier!.latest, false);
      assert.equal(earlier!.tape_id, before.data[0]!.tape_id, 'the earlier tape keeps its id');
      assert.ok(Date.parse(latest!.stored_at) >= Date.parse(earlier!.stored_at));

      // The latest tape is the refreshed one; the earlier one is still readable by its id, signed.
      const current = (await target.api.get(path(id, '/tape'))).json as Tape;
      assert.equal(current.eligibility.max_advance_eur, latest!.max_advance_eur);
      assert.equal(current.tape_generated_at, latest!.tape_generated_at);
      const old = await target.api.get(path(id, `/tape?tape_id=${earlier!.tape_id}`));
      assert.equal(old.status, 200, old.text);
      assert.ok(old.headers.get('x-tape-signature'), 'an earlier tape is signed too');
      const oldTape = old.json as Tape;
      assert.equal(oldTape.eligibility.max_advance_eur, earlier!.max_advance_eur);
      assert.equal(oldTape.tape_generated_at, earlier!.tape_generated_at);
      assert.equal(oldTape.verification_id, id);

      const updates = named(await eventsOf(id), 'tape.updated');
      assert.equal(updates.length, 1, 'one tape.updated per refresh');
      const update = updates[0]!;
      assert.equal(update.reason, 'refresh');
      assert.equal(update.tape_id, latest!.tape_id);
      assert.deepEqual(update.changes?.tier, { before: earlier!.tier, after: latest!.tier });
      assert.deepEqual(update.changes?.max_advance_eur, { before: earlier!.max_advance_eur, after: latest!.max_advance_eur });
    });

    it('the history pages by tape_id, newest first; an unknown cursor is 400 and an unknown tape_id 404', async function () {
      requireSandbox(this, target);
      const verification = await monitoredNow(6);
      const id = verification.verification_id;
      assert.equal((await refresh(id)).status, 202);
      await waitForRefreshDone(id);
      const whole = await history(id);
      assert.equal(whole.data.length, 2);
      const first = await history(id, '?limit=1');
      assert.deepEqual(first.data, [whole.data[0]]);
      assert.equal(first.has_more, true);
      const second = await history(id, `?limit=1&starting_after=${first.data[0]!.tape_id}`);
      assert.deepEqual(second.data, [whole.data[1]]);
      assert.equal(second.has_more, false);
      assertError(await target.api.get(path(id, '/tapes?starting_after=tap_neverIssued')), 400, 'validation_error', /starting_after/);
      assertError(await target.api.get(path(id, '/tape?tape_id=tap_neverIssued')), 404, 'not_found');
      // The latest tape's own id reads the latest tape.
      const byId = await target.api.get(path(id, `/tape?tape_id=${whole.data[0]!.tape_id}`));
      assert.equal(byId.status, 200, byId.text);
      assert.equal(byId.text, (await target.api.get(path(id, '/tape'))).text);
    });

    it('a one-time or not yet completed verification has an empty history', async () => {
      const verification = await created(target, { obligor_reference: randomReference('conformance-monitoring-'), creator_platforms: ['youtube'] });
      assert.deepEqual(await history(verification.verification_id), { data: [], has_more: false });
    });
  });

  describe('errors: refreshes on demand', () => {
    it('a second one while the first waits: 409 duplicate_request [op:refreshVerification 409 duplicate_request]', async function () {
      requireSandbox(this, target);
      const { verification_id: id } = await monitoredNow(6);
      assert.equal((await refresh(id)).status, 202);
      const again = await refresh(id);
      // The sandbox runs the refresh after its outcome delay: the first one still waits.
      assertError(again, 409, 'duplicate_request', /queued|wait/i);
      await waitForRefreshDone(id);
      assert.equal((await history(id)).data.length, 2, 'the refused request made no second refresh');
    });

    it('one on demand a day: the next within 24 hours is 429 with Retry-After counting down from a day [op:refreshVerification 429 rate_limited]', async function () {
      requireSandbox(this, target);
      const { verification_id: id } = await monitoredNow(6);
      const askedAt = Date.now();
      assert.equal((await refresh(id)).status, 202);
      await waitForRefreshDone(id);
      const refused = await refresh(id);
      assertError(refused, 429, 'rate_limited');
      const retryAfter = Number(refused.headers.get('retry-after'));
      const elapsed = (Date.now() - askedAt) / 1000;
      // Both ways, a minute's tolerance for clocks and the time the calls took.
      assert.ok(retryAfter <= DAY_SECONDS && retryAfter >= DAY_SECONDS - elapsed - 60, `Retry-After ${retryAfter} after ${elapsed} s`);
      assert.equal((await history(id)).data.length, 2, 'the refused request made no refresh');
    });

    it('monitoring not active: one-time, pending, or ended: 422 unprocessable [op:refreshVerification 422 unprocessable]', async () => {
      const oneTime = await created(target, { obligor_reference: randomReference('conformance-one-time-'), creator_platforms: ['youtube'] });
      assertError(await refresh(oneTime.verification_id), 422, 'unprocessable', /monitoring/);
      const pending = await created(target, {
        obligor_reference: randomReference('conformance-monitoring-'),
        creator_platforms: ['youtube'],
        monitoring: { months: 2 },
      });
      assertError(await refresh(pending.verification_id), 422, 'unprocessable', /pending/);
      assert.equal((await stop(pending.verification_id)).status, 200);
      assertError(await refresh(pending.verification_id), 422, 'unprocessable', /ended/);
    });

    it("unknown or another lender's verification: 404 not_found, nothing refreshed [op:refreshVerification 404 not_found] [op:listVerificationTapes 404 not_found]", async function () {
      requireSandbox(this, target);
      requireKey(this, target, 'otherLender');
      const { verification_id: id } = await monitoredNow(6);
      assertError(await refresh(id, 'otherLender'), 404, 'not_found');
      assertError(await refresh('vrf_neverIssued0000'), 404, 'not_found');
      assertError(await target.api.get(path(id, '/tapes'), { key: 'otherLender' }), 404, 'not_found');
      assertError(await target.api.get(path('vrf_neverIssued0000', '/tapes')), 404, 'not_found');
      assertError(await target.api.get(path(id, `/tape?tape_id=${(await history(id)).data[0]!.tape_id}`), { key: 'otherLender' }), 404, 'not_found');
      assert.equal((await monitoringOf(id)).refresh_requested_at, null);
    });
  });

  describe('happy: the lender stops monitoring [op:stopMonitoring 200] [event:verification.monitoring_ended]', () => {
    it('ended with stopped_by_lender, one event; stopping again answers the same; no refresh follows', async function () {
      requireSandbox(this, target);
      const verification = await monitoredNow(6);
      const id = verification.verification_id;
      const stopped = await stop(id);
      assert.equal(stopped.status, 200, stopped.text);
      const body = stopped.json as Verification;
      assert.equal(body.status, 'completed', 'the verification keeps its status');
      assert.equal(body.monitoring!.state, 'ended');
      assert.equal(body.monitoring!.end_reason, 'stopped_by_lender');
      assert.equal(body.monitoring!.next_refresh_at, null);
      const again = await stop(id);
      assert.equal(again.status, 200, again.text);
      assert.deepEqual((again.json as Verification).monitoring, body.monitoring);
      const ended = named(await eventsOf(id), 'verification.monitoring_ended');
      assert.equal(ended.length, 1, 'one event however often it is stopped');
      assert.equal(ended[0]!.reason, 'stopped_by_lender');
      assert.deepEqual(ended[0]!.data, { verification_id: id, obligor_reference: 'demo_prime_multi', reason: 'stopped_by_lender' });
      assertError(await refresh(id), 422, 'unprocessable');
      // The tapes stay: the history still has the completion's.
      assert.equal((await history(id)).data.length, 1);
    });

    it('the stopped monitoring is not refreshed by its schedule either', async function () {
      requireSandbox(this, target);
      const verification = await monitoredNow(6);
      const month = shortMonthMs(this, verification.monitoring!);
      assert.equal((await stop(verification.verification_id)).status, 200);
      await sleep(month + SCHEDULE_GRACE_MS / 2);
      assert.equal((await history(verification.verification_id)).data.length, 1, 'a refresh ran after the stop');
      assert.deepEqual(named(await eventsOf(verification.verification_id), 'tape.updated'), []);
    });

    it('cancelling a monitored verification waiting for consent ends its monitoring too (cancelled_by_lender)', async () => {
      const verification = await created(target, {
        obligor_reference: randomReference('conformance-monitoring-'),
        creator_platforms: ['youtube'],
        monitoring: { months: 2 },
      });
      assert.equal((await cancelVerification(target, verification.verification_id)).status, 200);
      const monitoring = await monitoringOf(verification.verification_id);
      assert.equal(monitoring.state, 'ended');
      assert.equal(monitoring.end_reason, 'cancelled_by_lender');
      const events = await eventsOf(verification.verification_id);
      assert.deepEqual(
        named(events, 'verification.monitoring_ended').map((e) => e.reason),
        ['cancelled_by_lender'],
      );
    });
  });

  describe('happy: the creator stops sharing from the consent link [event:verification.monitoring_ended]', () => {
    /** The page's forms, by where they post to, with their hidden fields. The suite reads forms, never wording. */
    const formsOf = (html: string, base: string) =>
      [...html.matchAll(/<form\s[^>]*method="(get|post)"[^>]*action="([^"]*)"[^>]*>([\s\S]*?)<\/form>/g)].map((m) => ({
        method: m[1]!,
        action: new URL(m[2]!.replace(/&amp;/g, '&'), base),
        fields: Object.fromEntries([...m[3]!.matchAll(/<input\s[^>]*name="([^"]*)"[^>]*value="([^"]*)"/g)].map((f) => [f[1]!, f[2]!])),
      }));
    const cookieOf = (response: Response) =>
      response.headers
        .getSetCookie()
        .map((c) => c.split(';')[0]!)
        .join('; ');

    it('the link offers to stop; the confirmation posts; monitoring ends with stopped_by_creator, once', async function () {
      requireSandbox(this, target);
      const verification = await monitoredNow(6);
      const id = verification.verification_id;
      const page = await fetch(verification.consent_url, { headers: { accept: 'text/html' }, redirect: 'manual' });
      assert.equal(page.status, 200);
      const offer = formsOf(await page.text(), verification.consent_url).find((f) => f.method === 'get' && f.action.pathname.endsWith('/stop'));
      assert.ok(offer, 'the completed link of an active monitoring offers to stop sharing');
      const confirmation = await fetch(offer.action, { headers: { accept: 'text/html' }, redirect: 'manual' });
      assert.equal(confirmation.status, 200);
      const form = formsOf(await confirmation.text(), offer.action.toString()).find((f) => f.method === 'post');
      assert.ok(form, 'the confirmation page posts');
      // A post without the confirmation page's cookie stops nothing.
      const forged = await fetch(form.action, { method: 'POST', body: new URLSearchParams(form.fields), redirect: 'manual' });
      assert.ok(forged.status >= 400, `a post without the page's cookie answered ${forged.status}`);
      assert.equal((await monitoringOf(id)).state, 'active');
      const stopped = await fetch(form.action, {
        method: 'POST',
        body: new URLSearchParams(form.fields),
        headers: { cookie: cookieOf(confirmation) },
        redirect: 'manual',
      });
      assert.ok(stopped.status < 400, `the confirmed stop answered ${stopped.status}`);
      const monitoring = await monitoringOf(id);
      assert.equal(monitoring.state, 'ended');
      assert.equal(monitoring.end_reason, 'stopped_by_creator');
      // Posted again (a double click): nothing more.
      await fetch(form.action, { method: 'POST', body: new URLSearchParams(form.fields), headers: { cookie: cookieOf(confirmation) }, redirect: 'manual' });
      assert.deepEqual(
        named(await eventsOf(id), 'verification.monitoring_ended').map((e) => e.reason),
        ['stopped_by_creator'],
      );
      const after = await fetch(verification.consent_url, { headers: { accept: 'text/html' }, redirect: 'manual' });
      assert.equal(
        formsOf(await after.text(), verification.consent_url).some((f) => f.action.pathname.endsWith('/stop')),
        false,
        'nothing left to stop',
      );
    });
  });

  describe('errors: stopping monitoring', () => {
    it('a one-time verification: 422 unprocessable [op:stopMonitoring 422 unprocessable]', async () => {
      const verification = await created(target, { obligor_reference: randomReference('conformance-one-time-'), creator_platforms: ['youtube'] });
      assertError(await stop(verification.verification_id), 422, 'unprocessable', /monitoring/);
      assert.deepEqual(await eventsOf(verification.verification_id), []);
    });

    it("another lender's verification: 404 not_found, and its monitoring goes on [op:stopMonitoring 404 not_found]", async function () {
      requireKey(this, target, 'otherLender');
      const verification = await created(target, {
        obligor_reference: randomReference('conformance-monitoring-'),
        creator_platforms: ['youtube'],
        monitoring: { months: 2 },
      });
      assertError(await stop(verification.verification_id, 'otherLender'), 404, 'not_found');
      assertError(await stop('vrf_neverIssued0000'), 404, 'not_found');
      assert.equal((await monitoringOf(verification.verification_id)).state, 'pending');
    });
  });

  describe('happy: the monthly schedule and the end of the window (a sandbox with a short month) [event:tape.updated] [event:verification.monitoring_ended]', () => {
    it('a one-month window: its refresh runs at the window end, then monitoring ends with window_over', async function () {
      requireSandbox(this, target);
      const verification = await monitoredNow(1);
      const id = verification.verification_id;
      const month = shortMonthMs(this, verification.monitoring!);
      this.timeout(month + SCHEDULE_GRACE_MS + 10_000);
      const ended = await until(
        () => monitoringOf(id),
        (m) => m.state === 'ended',
        month + SCHEDULE_GRACE_MS,
      );
      assert.equal(ended.state, 'ended', 'the window ended on time');
      assert.equal(ended.end_reason, 'window_over');
      assert.ok(ended.last_refresh_at && Date.parse(ended.last_refresh_at) >= Date.parse(verification.monitoring!.ends_at!), 'the last refresh ran at the end');
      const tapes = await history(id);
      assert.deepEqual(
        tapes.data.map((t) => t.reason),
        ['refresh', 'completion'],
      );
      const events = await eventsOf(id);
      // Newest first: the end follows the last refresh's tape.
      assert.deepEqual(
        events.filter((e) => e.event !== 'verification.completed').map((e) => `${e.event}:${e.reason}`),
        ['verification.monitoring_ended:window_over', 'tape.updated:refresh'],
      );
      assertError(await refresh(id), 422, 'unprocessable', /window_over/);
    });

    it('two months: one refresh at each mark, the next one scheduled a month after the last', async function () {
      requireSandbox(this, target);
      const verification = await monitoredNow(2);
      const id = verification.verification_id;
      const month = shortMonthMs(this, verification.monitoring!);
      this.timeout(month + SCHEDULE_GRACE_MS + 10_000);
      const afterFirst = await until(
        () => monitoringOf(id),
        (m) => m.last_refresh_at !== null,
        month + SCHEDULE_GRACE_MS,
      );
      assert.equal(afterFirst.state, 'active');
      assert.equal(afterFirst.next_refresh_at, afterFirst.ends_at, 'the second mark is the window end');
      assert.equal(Date.parse(afterFirst.next_refresh_at!) - Date.parse(afterFirst.starts_at!), 2 * month);
      assert.deepEqual(
        (await history(id)).data.map((t) => t.reason),
        ['refresh', 'completion'],
      );
    });
  });

  describe('happy: refreshes that fail (sandbox test- prefixes)', () => {
    const monitoredTest = async (prefix: string) => {
      const verification = await created(target, { obligor_reference: randomReference(prefix), creator_platforms: ['youtube'], monitoring: { months: 6 } });
      const id = verification.verification_id;
      const completed = await until(
        () => getVerification(target, id),
        (v) => v.status === 'completed',
        outcomeTimeoutMs(target),
      );
      assert.equal(completed.status, 'completed');
      return completed;
    };

    it('test-refresh-fail-: retried, then counted and announced; the last tape stays the latest [event:verification.refresh_failed]', async function () {
      requireSandbox(this, target);
      const verification = await monitoredTest('test-refresh-fail-');
      const id = verification.verification_id;
      const month = shortMonthMs(this, verification.monitoring!);
      this.timeout(outcomeTimeoutMs(target) + month + SCHEDULE_GRACE_MS + 10_000);
      assert.equal((await refresh(id)).status, 202);
      // The retries take a few tenths of the month after the outcome delay.
      const failed = await until(
        () => monitoringOf(id),
        (m) => m.failed_refreshes > 0,
        outcomeTimeoutMs(target) + month,
      );
      assert.equal(failed.failed_refreshes, 1);
      assert.equal(failed.state, 'active', 'a failing provider does not end monitoring');
      assert.equal(failed.refresh_requested_at, null);
      assert.equal(failed.last_refresh_at, null);
      const tapes = await history(id);
      assert.deepEqual(
        tapes.data.map((t) => t.reason),
        ['completion'],
        'no tape from a failed refresh',
      );
      const events = named(await eventsOf(id), 'verification.refresh_failed');
      assert.equal(events.length, 1, 'announced once, after its retries');
      assert.equal(events[0]!.reason, 'platform_error');
      assert.equal(events[0]!.failed_refreshes, 1);
      assert.equal(events[0]!.next_refresh_at, failed.next_refresh_at);
      assert.deepEqual(named(await eventsOf(id), 'tape.updated'), []);
    });

    it('test-refresh-revoke-: the refused grant ends monitoring with grant_revoked [event:verification.monitoring_ended]', async function () {
      requireSandbox(this, target);
      const verification = await monitoredTest('test-refresh-revoke-');
      const id = verification.verification_id;
      assert.equal((await refresh(id)).status, 202);
      const ended = await until(
        () => monitoringOf(id),
        (m) => m.state === 'ended',
        outcomeTimeoutMs(target),
      );
      assert.equal(ended.end_reason, 'grant_revoked');
      const resource = await getVerification(target, id);
      assert.equal(resource.status, 'completed', 'the verification keeps its tape and status');
      assert.ok(resource.platform_connections.some((c) => c.status === 'revoked'));
      assert.deepEqual(
        named(await eventsOf(id), 'verification.monitoring_ended').map((e) => e.reason),
        ['grant_revoked'],
      );
    });
  });
});
