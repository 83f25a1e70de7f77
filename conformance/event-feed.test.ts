import assert from 'node:assert/strict';
import { assertError } from './assertions.ts';
import { forEachTarget, requireKey } from './harness.ts';
import { cancelVerification, created, randomReference } from './sandbox.ts';

/**
 * GET /api/v1/events: the lender's events newest first, each as its webhook carries it, with the
 * filters, keyset pages and refusals. Each test reads only the events of verifications it made
 * (cancelled at once, which every deployment allows), so other tests on the same lender do not
 * disturb it.
 */

const EVENTS_PATH = '/api/v1/events';

interface FeedEvent {
  event: string;
  event_id: string;
  verification_id: string;
  obligor_reference: string;
  occurred_at: string;
}

forEachTarget((target) => {
  /** A verification cancelled at once: one `verification.cancelled` event. */
  const cancelledOne = async (reference: string) => {
    const verification = await created(target, { obligor_reference: reference, creator_platforms: ['youtube'] });
    const cancel = await cancelVerification(target, verification.verification_id);
    assert.equal(cancel.status, 200, cancel.text);
    return verification.verification_id;
  };
  const events = (response: { json: unknown }) => (response.json as { data: FeedEvent[] }).data;

  describe('happy: the event feed (GET /api/v1/events) [op:listEvents 200] [event:verification.cancelled]', () => {
    it("a cancelled verification's event is in the feed, once, with its verification and reference", async () => {
      const reference = randomReference('conformance-events-');
      const id = await cancelledOne(reference);
      const response = await target.api.get(`${EVENTS_PATH}?verification_id=${id}`);
      assert.equal(response.status, 200, response.text);
      const [event, ...rest] = events(response);
      assert.deepEqual(rest, []);
      assert.equal(event?.event, 'verification.cancelled');
      assert.equal(event.verification_id, id);
      assert.equal(event.obligor_reference, reference);
      assert.match(event.event_id, /^evt_[A-Za-z0-9]+$/);
      // The same event, found by its type among the newest.
      const byType = await target.api.get(`${EVENTS_PATH}?type=verification.cancelled&limit=100`);
      assert.ok(events(byType).some((e) => e.event_id === event.event_id && e.event === 'verification.cancelled'));
      assert.ok(events(byType).every((e) => e.event === 'verification.cancelled'));
    });

    it('newest first, and pages of one with starting_after walk each event once', async () => {
      const reference = randomReference('conformance-events-order-');
      const first = await cancelledOne(reference);
      const second = await cancelledOne(reference);
      const newest = events(await target.api.get(`${EVENTS_PATH}?type=verification.cancelled&limit=100`)).filter((e) => e.obligor_reference === reference);
      assert.deepEqual(
        newest.map((e) => e.verification_id),
        [second, first],
      );
      const page = await target.api.get(`${EVENTS_PATH}?limit=1&starting_after=${newest[0]!.event_id}&verification_id=${first}`);
      assert.equal(page.status, 200, page.text);
      assert.deepEqual(
        events(page).map((e) => e.event_id),
        [newest[1]!.event_id],
      );
      assert.equal((page.json as { has_more: boolean }).has_more, false);
      const one = await target.api.get(`${EVENTS_PATH}?limit=1`);
      assert.equal(events(one).length, 1);
      assert.equal((one.json as { has_more: boolean }).has_more, true);
    });
  });

  describe('security and errors: GET /api/v1/events [op:listEvents 400 validation_error]', () => {
    it("another lender's key sees none of this lender's events, and its cursor here is 400 validation_error", async function () {
      requireKey(this, target, 'otherLender');
      const id = await cancelledOne(randomReference('conformance-events-tenant-'));
      const mine = events(await target.api.get(`${EVENTS_PATH}?verification_id=${id}`));
      assert.equal(mine.length, 1);
      const theirs = await target.api.get(`${EVENTS_PATH}?verification_id=${id}`, { key: 'otherLender' });
      assert.equal(theirs.status, 200, theirs.text);
      assert.deepEqual(events(theirs), []);
      assertError(
        await target.api.get(`${EVENTS_PATH}?starting_after=${mine[0]!.event_id}`, { key: 'otherLender' }),
        400,
        'validation_error',
        /starting_after/,
      );
    });

    for (const [query, field] of [
      ['limit=0', 'limit'],
      ['limit=101', 'limit'],
      ['type=verification.paused', 'type'],
      ['starting_after=evt_neverissued000000', 'starting_after'],
      ['starting_after=vrf_notanevent', 'starting_after'],
      ['order=asc', 'order'],
    ] as const) {
      it(`${query}: 400 validation_error naming ${field}`, async () => {
        assertError(await target.api.get(`${EVENTS_PATH}?${query}`), 400, 'validation_error', new RegExp(field));
      });
    }
  });
});
