import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { forEachTarget, requireKey, requireSandbox, type ApiResponse } from './harness.ts';
import { CREATE_PATH, createVerification, follow, getVerification, randomReference, type Verification } from './sandbox.ts';
import { skipBecause } from './skip.ts';

/**
 * Idempotency (section 4.1, D1): the same Idempotency-Key with the same payload replays the original
 * answer and creates nothing; with another payload it is 409 duplicate_request; keys belong to one
 * lender account. Each test uses its own fresh key.
 */

const CONCURRENT_REQUESTS = 30;

const replayed = (response: ApiResponse) => response.headers.get('idempotent-replayed');
const idOf = (response: ApiResponse) => (response.json as Verification).verification_id;

function assertCreated(response: ApiResponse, context = ''): void {
  assert.equal(response.status, 201, `${context}${response.text}`);
  assert.equal(replayed(response), null, `${context}a first creation carries no Idempotent-Replayed header`);
}

function assertReplayOf(replay: ApiResponse, original: ApiResponse): void {
  assert.equal(replay.status, original.status, replay.text);
  assert.equal(replayed(replay), 'true', 'a replay says so in Idempotent-Replayed: true');
  assert.deepEqual(replay.json, original.json, 'a replay returns the original body');
}

function assertDuplicate(response: ApiResponse, key: string): void {
  assert.equal(response.status, 409, response.text);
  const body = response.json as { error: string; message: string };
  assert.equal(body.error, 'duplicate_request');
  assert.ok(body.message.length > 0);
  assert.equal(replayed(response), null);
  assert.ok(response.text.includes(key) || /idempotency/i.test(body.message), `the message says which key: ${body.message}`);
}

forEachTarget((target) => {
  const realCreator = () => ({
    obligor_reference: randomReference('conformance-idem-'),
    creator_platforms: ['youtube', 'stripe'] as Array<'youtube' | 'stripe'>,
  });

  describe('happy: idempotent replay (section 4.1, D1) [op:createVerification 201] [header:Idempotency-Key] [header:Idempotent-Replayed]', function () {
    this.timeout(target.sandboxDelayMs * 2 + 30_000);

    it('same key, same payload: the original status and body with Idempotent-Replayed: true, and the same single verification', async () => {
      const key = randomUUID();
      const body = realCreator();
      const first = await createVerification(target, body, { idempotencyKey: key });
      assertCreated(first);
      const second = await createVerification(target, body, { idempotencyKey: key });
      const third = await createVerification(target, body, { idempotencyKey: key });
      assertReplayOf(second, first);
      assertReplayOf(third, first);
      assert.equal(new Set([first, second, third].map(idOf)).size, 1, 'one verification id seen');
      assert.deepEqual(await getVerification(target, idOf(first)), first.json, 'the one verification exists, unchanged');
    });

    it('a synthetic creator, completed at creation, replays the same completed resource', async function () {
      requireSandbox(this, target);
      const key = randomUUID();
      const body = { obligor_reference: 'demo-yt-mid', creator_platforms: ['youtube'] };
      const first = await createVerification(target, body, { idempotencyKey: key });
      assertCreated(first);
      assert.equal((first.json as Verification).status, 'completed');
      assertReplayOf(await createVerification(target, body, { idempotencyKey: key }), first);
    });

    it('a replay after the verification moved on still returns the original answer (pending_consent), not the current state', async function () {
      requireSandbox(this, target);
      const key = randomUUID();
      const body = { obligor_reference: randomReference('test-complete-'), creator_platforms: ['stripe'] };
      const first = await createVerification(target, body, { idempotencyKey: key });
      assertCreated(first);
      assert.equal((first.json as Verification).status, 'pending_consent');
      const observations = await follow(target, idOf(first));
      assert.equal(observations.at(-1)!.resource.status, 'completed');
      const replay = await createVerification(target, body, { idempotencyKey: key });
      assertReplayOf(replay, first);
      assert.equal((replay.json as Verification).status, 'pending_consent');
    });

    it('the same payload with its JSON keys in another order is the same payload (a replay)', async () => {
      const key = randomUUID();
      const reference = randomReference('conformance-idem-');
      const first = await createVerification(
        target,
        { obligor_reference: reference, creator_platforms: ['youtube'], lender_name: 'Order Test', product_type: 'term_loan' },
        { idempotencyKey: key },
      );
      assertCreated(first);
      const reordered = await createVerification(
        target,
        { product_type: 'term_loan', lender_name: 'Order Test', creator_platforms: ['youtube'], obligor_reference: reference },
        { idempotencyKey: key },
      );
      assertReplayOf(reordered, first);
    });

    it('the same payload sent with other whitespace is the same payload (a replay)', async () => {
      const key = randomUUID();
      const body = realCreator();
      const first = await createVerification(target, body, { idempotencyKey: key });
      assertCreated(first);
      const pretty = await target.api.post(CREATE_PATH, {
        headers: { 'idempotency-key': key, 'content-type': 'application/json' },
        body: `\n{\n  "obligor_reference" :  ${JSON.stringify(body.obligor_reference)},\n\t"creator_platforms": [ "youtube",  "stripe" ]\n}\n`,
      });
      assertReplayOf(pretty, first);
    });

    it('the key is compared case-insensitively, as UUIDs are (P12): the same key in capitals is a replay', async () => {
      const key = randomUUID();
      const body = realCreator();
      const first = await createVerification(target, body, { idempotencyKey: key });
      assertCreated(first);
      assertReplayOf(await createVerification(target, body, { idempotencyKey: key.toUpperCase() }), first);
    });

    it(`${CONCURRENT_REQUESTS} concurrent requests with one key (fewer when the plan's burst is smaller): all 201 with one verification, exactly one of them not a replay`, async () => {
      const key = randomUUID();
      const body = realCreator();
      // All at once, in a burst window of their own and with room in the minute: a 429 here would be
      // the suite's own doing, and would hide whether the replays are right (D8).
      const count = await target.api.quietBurst(CONCURRENT_REQUESTS);
      assert.ok(count >= 2, `the plan's burst allows ${count} requests at once, too few to race`);
      const responses = await Promise.all(Array.from({ length: count }, () => createVerification(target, body, { idempotencyKey: key, unpaced: true })));
      const statuses = responses.map((r) => r.status);
      assert.deepEqual(statuses, Array(count).fill(201), `statuses: ${statuses.join(',')}; first non-201: ${responses.find((r) => r.status !== 201)?.text}`);
      assert.equal(new Set(responses.map(idOf)).size, 1, `verification ids: ${[...new Set(responses.map(idOf))].join(', ')}`);
      const originals = responses.filter((r) => replayed(r) === null);
      assert.equal(originals.length, 1, `${originals.length} responses without Idempotent-Replayed`);
      for (const response of responses) assert.deepEqual(response.json, originals[0]!.json);
      assert.equal((await getVerification(target, idOf(originals[0]!))).verification_id, idOf(originals[0]!));
    });
  });

  describe('errors: duplicate_request (409) for a key reused with another payload [op:createVerification 409 duplicate_request] [header:Idempotency-Key]', () => {
    it('another obligor_reference with the same key is 409 duplicate_request, and the key still replays its first answer', async () => {
      const key = randomUUID();
      const body = realCreator();
      const first = await createVerification(target, body, { idempotencyKey: key });
      assertCreated(first);
      assertDuplicate(await createVerification(target, { ...body, obligor_reference: randomReference('conformance-idem-') }, { idempotencyKey: key }), key);
      assertReplayOf(await createVerification(target, body, { idempotencyKey: key }), first);
    });

    it('an added optional field (lender_name) is another payload: 409', async () => {
      const key = randomUUID();
      const body = realCreator();
      assertCreated(await createVerification(target, body, { idempotencyKey: key }));
      assertDuplicate(await createVerification(target, { ...body, lender_name: 'Someone Else' }, { idempotencyKey: key }), key);
    });

    it('another platform list is another payload: 409', async () => {
      const key = randomUUID();
      const body = realCreator();
      assertCreated(await createVerification(target, body, { idempotencyKey: key }));
      assertDuplicate(await createVerification(target, { ...body, creator_platforms: ['youtube'] }, { idempotencyKey: key }), key);
    });
  });

  describe('security: Idempotency-Keys belong to one lender account [header:Idempotency-Key]', () => {
    it("another lender using the same key with the same payload gets its own new verification, and neither sees the other's", async function () {
      requireKey(this, target, 'otherLender');
      const key = randomUUID();
      const body = realCreator();
      const mine = await createVerification(target, body, { idempotencyKey: key, key: 'lender' });
      assertCreated(mine, 'lender A: ');
      const theirs = await createVerification(target, body, { idempotencyKey: key, key: 'otherLender' });
      assertCreated(theirs, 'lender B: ');
      assert.notEqual(idOf(theirs), idOf(mine));
      assert.equal((await target.api.get(`${CREATE_PATH}/${idOf(theirs)}`, { key: 'lender' })).status, 404, "A cannot read B's verification");
      assert.equal((await target.api.get(`${CREATE_PATH}/${idOf(mine)}`, { key: 'otherLender' })).status, 404, "B cannot read A's verification");
      assertReplayOf(await createVerification(target, body, { idempotencyKey: key, key: 'lender' }), mine);
      assertReplayOf(await createVerification(target, body, { idempotencyKey: key, key: 'otherLender' }), theirs);
    });

    it('another lender using the key with another payload is not a duplicate_request either', async function () {
      requireKey(this, target, 'otherLender');
      const key = randomUUID();
      assertCreated(await createVerification(target, realCreator(), { idempotencyKey: key, key: 'lender' }));
      assertCreated(await createVerification(target, realCreator(), { idempotencyKey: key, key: 'otherLender' }), 'lender B: ');
    });

    it("another key of the same lender account replays the account's answer (the key is scoped to the lender, not the API key)", async function () {
      if (!target.operator || !target.lenderId) {
        skipBecause(this, 'needs a self-started target, whose operator CLI can issue a second key');
      }
      const key = randomUUID();
      const body = realCreator();
      const first = await createVerification(target, body, { idempotencyKey: key });
      assertCreated(first);
      const secondKey = await target.operator.createKey(target.lenderId, 'lender');
      assertReplayOf(await createVerification(target, body, { idempotencyKey: key, apiKey: secondKey.api_key }), first);
    });

    it('a request refused as unauthorized does not use up the key', async () => {
      const key = randomUUID();
      const body = realCreator();
      const refused = await target.api.post(CREATE_PATH, { authorization: 'Bearer not-a-key', json: body, headers: { 'idempotency-key': key } });
      assert.equal(refused.status, 401, refused.text);
      assertCreated(await createVerification(target, body, { idempotencyKey: key }));
    });

    it('a request refused by validation does not use up the key', async () => {
      const key = randomUUID();
      const body = realCreator();
      const refused = await createVerification(target, { ...body, creator_platforms: ['patreon'] }, { idempotencyKey: key });
      assert.equal(refused.status, 400, refused.text);
      assertCreated(await createVerification(target, body, { idempotencyKey: key }));
    });
  });
});
