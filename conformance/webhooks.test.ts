import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import {
  forEachPrivateTargetsRefusedTarget,
  forEachTarget,
  hasPrivateTargetsRefusedTarget,
  requireKey,
  requireSandbox,
  type ApiResponse,
  type Target,
} from './harness.ts';
import { SYNTHETIC_CREATORS } from './sandbox.ts';
import { EventContract } from './event-contract.ts';
import {
  attemptWaitMs,
  finished,
  placeholderUrl,
  QUIET_EVENTS,
  requirePrivateTargets,
  requireWebhooks,
  WEBHOOKS_PATH,
  WebhookSession,
  type WebhookResource,
} from './webhooks.ts';
import { assertError, type ErrorBody } from './assertions.ts';
import { skipBecause } from './skip.ts';

/**
 * Webhook endpoints (4.5 to 4.7, D16, P13, P14): register, list, delete; what a registration is
 * refused for; tenant isolation; and the private-target guard with WEBHOOK_ALLOW_PRIVATE_TARGETS on
 * (loopback, private and CGNAT admitted, metadata and link-local still refused) and off (all refused).
 */

/** How far the target's clock may be from ours when checking created_at. */
const CLOCK_SKEW_MS = 5 * 60 * 1000;
const SECRET = /^whsec_[A-Za-z0-9]{32,}$/;
const WEBHOOK_ID = /^whk_[A-Za-z0-9]{8,64}$/;
const neverIssuedWebhookId = () => `whk_${randomBytes(10).toString('hex')}`;

/** A validation_error about `url` (the message or details name it). */
function assertUrlRefused(response: ApiResponse, url: string): void {
  const body = assertError(response, 400, 'validation_error');
  assert.match(JSON.stringify(body), /\burl\b/, `the refusal of ${url} names the url: ${response.text}`);
}

/** An answer about an id, with the id masked, so answers about different ids can be compared. */
const masked = (response: ApiResponse, id: string) => ({ status: response.status, body: JSON.parse(response.text.split(id).join('<id>')) as unknown });

/** D16 and the task's list: every spelling of a loopback, private, CGNAT, link-local or metadata target. */
const PRIVATE_TARGETS = [
  'https://127.0.0.1/',
  'https://localhost/',
  'https://10.0.0.1/',
  'https://192.168.1.1/',
  'https://172.16.0.1/',
  'https://169.254.169.254/',
  'https://[::1]/',
  'https://[::ffff:127.0.0.1]/',
  'https://2130706433/',
  'https://0x7f000001/',
  'https://0177.0.0.1/',
  'https://100.64.0.1/',
  'https://[fe80::1]/',
  'https://metadata.google.internal/',
];
/** P13: what WEBHOOK_ALLOW_PRIVATE_TARGETS=1 admits. */
const ADMITTED_WHEN_ALLOWED = [
  'https://127.0.0.1/',
  'https://localhost/',
  'https://10.0.0.1/',
  'https://192.168.1.1/',
  'https://172.16.0.1/',
  'https://100.64.0.1/',
  'https://[::1]/',
  'https://[::ffff:127.0.0.1]/',
  'https://2130706433/',
];
/** P13: metadata, link-local, multicast and reserved addresses stay refused whatever the setting. */
const REFUSED_EVEN_WHEN_ALLOWED = [
  'https://169.254.169.254/',
  'https://169.254.169.254/latest/meta-data/',
  'https://0xa9fea9fe/',
  'https://[::ffff:169.254.169.254]/',
  'https://169.254.1.1/',
  'https://[fe80::1]/',
  'https://metadata.google.internal/',
  'https://224.0.0.1/',
  'https://0.0.0.0/',
  'https://[::]/',
  // Metadata addresses inside ranges the setting admits (CGNAT, public) and in IPv6.
  'https://100.100.100.200/',
  'https://168.63.129.16/',
  'https://[fd00:ec2::254]/',
  // The metadata address behind IPv6 encodings that end up at it (NAT64, 6to4, IPv4-compatible).
  'https://[::ffff:a9fe:a9fe]/',
  'https://[64:ff9b::a9fe:a9fe]/',
  'https://[2002:a9fe:a9fe::]/',
  'https://[::169.254.169.254]/',
  'https://metadata/',
  'https://METADATA.GOOGLE.INTERNAL./',
];
/** More spellings of loopback and private hosts the URL parser or the resolver turn into them. */
const OTHER_PRIVATE_SPELLINGS = [
  'https://127.1/',
  'https://0x7f.1/',
  'https://127.000.000.001/',
  'https://[0:0:0:0:0:0:0:1]/',
  'https://[::ffff:7f00:1]/',
  'https://[::127.0.0.1]/',
  'https://[64:ff9b::7f00:1]/',
  'https://[2002:7f00:1::]/',
  'https://[fc00::1]/',
  'https://LOCALHOST/',
  'https://localhost./',
  'https://hooks.localhost/',
  'https://printer.local/',
  'https://intranet/',
  'https://0.0.0.0/',
  'https://[::]/',
  'https://255.255.255.255/',
  'https://192.0.2.1/',
];

forEachTarget((target) => {
  let session: WebhookSession;
  const allEvents = () => [...EventContract.load().eventNames];

  beforeEach(async function () {
    this.timeout(30_000);
    session = await WebhookSession.open(target);
  });
  afterEach(async function () {
    this.timeout(30_000);
    await session?.cleanup();
  });

  describe('happy: register, list and delete webhook endpoints (4.5 to 4.7, D16) [op:createWebhook 201] [op:listWebhooks 200] [op:deleteWebhook 204] [op:deleteWebhook 404 not_found]', () => {
    it('POST /webhooks: 201 with webhook_id, url, events, created_at and the whsec_ secret, shown only here', async () => {
      const url = session.registrationUrl('create');
      const events = session.canReceive ? ['verification.completed', 'verification.failed'] : [...QUIET_EVENTS];
      const started = Date.now();
      const response = await session.create({ url, events });
      assert.equal(response.status, 201, response.text);
      const created = response.json as WebhookResource;
      assert.match(created.webhook_id, WEBHOOK_ID);
      assert.equal(created.url, url);
      assert.deepEqual(created.events, events);
      assert.match(created.secret ?? '', SECRET);
      assert.ok(Math.abs(Date.parse(created.created_at) - started) < CLOCK_SKEW_MS, `created_at ${created.created_at} is now`);

      const again = await session.register(url, events);
      assert.notEqual(again.webhook_id, created.webhook_id, 'each registration is a new endpoint');
      assert.notEqual(again.secret, created.secret, 'each endpoint has its own secret');
    });

    it("GET /webhooks: the lender's endpoints, oldest first, as created but never with a secret", async () => {
      const first = await session.register(session.registrationUrl('list-1'), session.canReceive ? ['verification.completed'] : ['tape.updated']);
      const second = await session.register(session.registrationUrl('list-2'), session.canReceive ? allEvents() : [...QUIET_EVENTS]);
      const response = await session.list();
      assert.equal(response.status, 200, response.text);
      const listed = (response.json as { data: WebhookResource[] }).data;
      const ours = listed.filter((webhook) => [first.webhook_id, second.webhook_id].includes(webhook.webhook_id));
      const { secret: firstSecret, ...firstWithout } = first;
      const { secret: secondSecret, ...secondWithout } = second;
      assert.deepEqual(ours, [firstWithout, secondWithout], 'both endpoints, in the order they were created, with the fields of the creation response');
      for (const webhook of listed) assert.equal('secret' in webhook, false, `${webhook.webhook_id} is listed with a secret`);
      for (const secret of [firstSecret, secondSecret]) assert.ok(!response.text.includes(secret), 'a secret appears in the list');
      const times = listed.map((webhook) => Date.parse(webhook.created_at));
      assert.deepEqual(
        times,
        [...times].sort((a, b) => a - b),
        'oldest first',
      );
    });

    it('DELETE /webhooks/{id}: 204 without a body; then it is not listed, and DELETE and its delivery log are 404', async () => {
      const webhook = await session.register(session.registrationUrl('delete'), ['tape.updated']);
      const removed = await session.remove(webhook.webhook_id);
      assert.equal(removed.status, 204, removed.text);
      assert.equal(removed.text, '');
      const listed = (await session.list()).json as { data: WebhookResource[] };
      assert.ok(!listed.data.some((w) => w.webhook_id === webhook.webhook_id), 'a deleted endpoint is not listed');
      assertError(await session.remove(webhook.webhook_id), 404, 'not_found');
      assertError(await session.deliveries(webhook.webhook_id), 404, 'not_found');
    });

    it('a deleted endpoint receives nothing more, while an endpoint registered beside it does', async function () {
      requireWebhooks(this, target);
      requireSandbox(this, target);
      const receiver = session.receiver;
      const kept = await session.registerReceiver('kept', ['verification.completed']);
      const gone = await session.registerReceiver('gone', ['verification.completed']);
      const reference = SYNTHETIC_CREATORS[0].reference;
      const before = await session.createVerification(reference);
      const forBefore = (requests: ReturnType<typeof receiver.requestsTo>) => requests.some((r) => r.rawBody.toString().includes(before.verification_id));
      // Both work: each receives the event of a verification made while both exist.
      await receiver.waitFor(kept.path, forBefore, attemptWaitMs(target, 1), 'the event of the first verification');
      await receiver.waitFor(gone.path, forBefore, attemptWaitMs(target, 1), 'the event of the first verification');

      assert.equal((await session.remove(gone.webhook.webhook_id)).status, 204);
      const after = await session.createVerification(reference);
      await receiver.waitFor(
        kept.path,
        (requests) => requests.some((r) => r.rawBody.toString().includes(after.verification_id)),
        attemptWaitMs(target, 1),
        'the event of the second verification',
      );
      // The batch that carried it is recorded; anything for the deleted endpoint would have gone with it.
      await session.waitForLog(
        kept.webhook.webhook_id,
        (log) => log.some((d) => d.verification_id === after.verification_id && finished(d)),
        attemptWaitMs(target, 1),
        'the second delivery finished',
      );
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      const toGone = receiver.requestsTo(gone.path).map((r) => r.rawBody.toString());
      assert.ok(!toGone.some((body) => body.includes(after.verification_id)), `the deleted endpoint received ${toGone.join('\n')}`);
    });
  });

  describe('errors: what a registration is refused for (4.5, D4, D16, P14) [op:createWebhook 400 validation_error] [op:createWebhook 422 unprocessable] [limit:webhook endpoints per lender]', () => {
    const validUrl = () => session.registrationUrl('valid');

    it('an http:// URL: 400 validation_error naming url', async () => {
      const url = validUrl().replace(/^https:/, 'http:');
      assertUrlRefused(await session.create({ url, events: ['verification.completed'] }), url);
    });

    it('a URL that is not https at all (ftp://, a relative path, not a URL): 400 validation_error', async () => {
      for (const url of ['ftp://hooks.example.com/x', '/webhooks/receiver', 'not a url']) {
        assertError(await session.create({ url, events: ['verification.completed'] }), 400, 'validation_error');
      }
    });

    it('events empty, unknown or repeated: 400 validation_error naming events', async () => {
      for (const events of [
        [],
        ['verification.created'],
        ['VERIFICATION.COMPLETED'],
        ['verification.completed', 'verification.completed'],
        'verification.completed',
      ]) {
        const body = assertError(await session.create({ url: validUrl(), events }), 400, 'validation_error');
        assert.match(JSON.stringify(body), /\bevents\b/, `events ${JSON.stringify(events)}: ${JSON.stringify(body)}`);
      }
    });

    it('url or events missing: 400 bad_request (D4: a missing required field)', async () => {
      assertError(await session.create({ events: ['verification.completed'] }), 400, 'bad_request');
      assertError(await session.create({ url: validUrl() }), 400, 'bad_request');
    });

    it('an unknown body field (e.g. a client-chosen secret): 400 validation_error', async () => {
      assertError(await session.create({ url: validUrl(), events: ['verification.completed'], secret: 'whsec_mine' }), 400, 'validation_error');
    });

    it('P14: a URL with credentials or a fragment is refused, while the same URL without them is accepted', async () => {
      const url = new URL(validUrl());
      const withCredentials = new URL(url);
      withCredentials.username = 'user';
      withCredentials.password = 'pass';
      assertUrlRefused(await session.create({ url: withCredentials.toString(), events: ['verification.completed'] }), withCredentials.toString());
      const userOnly = new URL(url);
      userOnly.username = 'user';
      assertUrlRefused(await session.create({ url: userOnly.toString(), events: ['verification.completed'] }), userOnly.toString());
      assertUrlRefused(await session.create({ url: `${url.toString()}#fragment`, events: ['verification.completed'] }), `${url.toString()}#fragment`);
      assert.equal((await session.create({ url: url.toString(), events: ['tape.updated'] })).status, 201, 'the URL itself is fine');
    });

    it('P14: at most 20 endpoints per lender; the next is 422 unprocessable, and one more fits after a delete', async function () {
      const existing = ((await session.list()).json as { data: WebhookResource[] }).data.length;
      if (existing > 20) {
        skipBecause(this, `the lender already has ${existing} endpoints`);
      }
      const made: string[] = [];
      for (let i = existing; i < 20; i++) made.push((await session.register(validUrl(), ['tape.updated'])).webhook_id);
      assertError(await session.create({ url: validUrl(), events: ['tape.updated'] }), 422, 'unprocessable');
      if (made.length > 0) {
        assert.equal((await session.remove(made[0]!)).status, 204);
        assert.equal((await session.create({ url: validUrl(), events: ['tape.updated'] })).status, 201, 'a free place can be used again');
      }
    });

    it('the delivery log: limit outside 1 to 100, a starting_after that is not a delivery id, or an unknown parameter: 400 validation_error', async function () {
      const webhook = await session.register(validUrl(), ['tape.updated']);
      for (const query of [
        'limit=0',
        'limit=101',
        'limit=ten',
        'starting_after=not-a-uuid',
        'ending_before=not-a-uuid',
        'status=delivered',
        'status=pending,pending',
        'created_gte=yesterday',
        'page=2',
      ]) {
        const response = await session.request('GET', `${WEBHOOKS_PATH}/${webhook.webhook_id}/deliveries?${query}`);
        assertError(response, 400, 'validation_error');
      }
      // Numbers JavaScript would read but that are no integer page size: refused, never an unbounded page.
      for (const limit of ['Infinity', '1e309', '0x10', '1e1', '10.0', '+10', '010']) {
        const response = await session.request('GET', `${WEBHOOKS_PATH}/${webhook.webhook_id}/deliveries?limit=${encodeURIComponent(limit)}`);
        assertError(response, 400, 'validation_error', /limit/);
      }
      const fine = await session.deliveries(webhook.webhook_id, { limit: 100 });
      assert.equal(fine.status, 200, fine.text);
      assert.deepEqual(fine.json, { data: [], has_more: false }, 'a new endpoint has an empty log');
    });

    it('the delivery log: a starting_after that is no delivery of this endpoint is 400 validation_error, as on the verification list', async function () {
      const webhook = await session.register(validUrl(), ['tape.updated']);
      const neverIssued = randomUUID();
      const response = await session.deliveries(webhook.webhook_id, { starting_after: neverIssued });
      assertError(response, 400, 'validation_error', /starting_after/);
      assertError(
        await session.request('GET', `${WEBHOOKS_PATH}/${webhook.webhook_id}/deliveries?ending_before=${neverIssued}`),
        400,
        'validation_error',
        /ending_before/,
      );
      const list = await session.request('GET', `/api/v1/verifications?starting_after=vrf_neverissued0000000000`);
      assertError(list, 400, 'validation_error', /starting_after/);
      assert.equal((response.json as { error: string }).error, (list.json as { error: string }).error);
    });

    it('an endpoint id that does not exist: 404 not_found on DELETE, on its delivery log and on a replay', async () => {
      const id = neverIssuedWebhookId();
      assertError(await session.remove(id), 404, 'not_found');
      assertError(await session.deliveries(id), 404, 'not_found');
      assertError(await session.replay(id, randomUUID()), 404, 'not_found');
    });
  });

  describe('security: who may manage webhook endpoints (section 5, D9) [header:Authorization] [op:deleteWebhook 404 not_found] [op:listWebhookDeliveries 404 not_found]', () => {
    const operations = (id: string) => [
      {
        name: 'POST /webhooks',
        call: (as: null | 'gdpr') =>
          session.request('POST', WEBHOOKS_PATH, { as, json: { url: 'https://hooks.example.com/x', events: ['verification.completed'] } }),
      },
      { name: 'GET /webhooks', call: (as: null | 'gdpr') => session.request('GET', WEBHOOKS_PATH, { as }) },
      { name: 'DELETE /webhooks/{id}', call: (as: null | 'gdpr') => session.request('DELETE', `${WEBHOOKS_PATH}/${id}`, { as }) },
      { name: 'GET /webhooks/{id}/deliveries', call: (as: null | 'gdpr') => session.request('GET', `${WEBHOOKS_PATH}/${id}/deliveries`, { as }) },
      { name: 'POST .../replay', call: (as: null | 'gdpr') => session.request('POST', `${WEBHOOKS_PATH}/${id}/deliveries/${randomUUID()}/replay`, { as }) },
    ];

    it('every webhook operation without a key: 401 unauthorized', async () => {
      for (const operation of operations(neverIssuedWebhookId())) {
        const response = await operation.call(null);
        assert.equal(response.status, 401, `${operation.name}: ${response.text}`);
        assert.equal((response.json as ErrorBody).error, 'unauthorized');
      }
    });

    it('every webhook operation with a gdpr_admin key: 403 forbidden', async function () {
      requireKey(this, target, 'gdpr');
      for (const operation of operations(neverIssuedWebhookId())) {
        const response = await operation.call('gdpr');
        assert.equal(response.status, 403, `${operation.name}: ${response.text}`);
        assert.equal((response.json as ErrorBody).error, 'forbidden');
      }
    });

    it('another lender neither sees, deletes, reads the log of, nor replays an endpoint: 404 as for an id that never existed', async function () {
      requireKey(this, target, 'otherLender');
      const webhook = await session.register(session.registrationUrl('tenant'), ['tape.updated']);
      const never = neverIssuedWebhookId();
      const listed = await session.list('otherLender');
      assert.equal(listed.status, 200, listed.text);
      assert.ok(!listed.text.includes(webhook.webhook_id), "lender B's list shows lender A's endpoint");

      const deliveryId = randomUUID();
      const pairs: Array<[string, (id: string) => Promise<ApiResponse>]> = [
        ['DELETE', (id) => session.remove(id, 'otherLender')],
        ['deliveries', (id) => session.deliveries(id, {}, 'otherLender')],
        ['replay', (id) => session.replay(id, deliveryId, 'otherLender')],
      ];
      for (const [name, call] of pairs) {
        const foreign = await call(webhook.webhook_id);
        assertError(foreign, 404, 'not_found');
        assert.ok(!foreign.text.includes(webhook.url), `${name}: the answer shows the endpoint's url`);
        assert.deepEqual(masked(foreign, webhook.webhook_id), masked(await call(never), never), `${name}: answered like an id that never existed`);
      }
      const stillThere = ((await session.list()).json as { data: WebhookResource[] }).data;
      assert.ok(
        stillThere.some((w) => w.webhook_id === webhook.webhook_id),
        "lender B's DELETE removed lender A's endpoint",
      );
      assert.equal((await session.deliveries(webhook.webhook_id)).status, 200, 'lender A still reads its log');
    });

    it('P13: with private targets allowed, loopback, private and CGNAT targets are admitted', async function () {
      requirePrivateTargets(this, target, true);
      for (const url of ADMITTED_WHEN_ALLOWED) {
        const response = await session.create({ url, events: ['tape.updated'] });
        assert.equal(response.status, 201, `${url}: ${response.text}`);
        await session.remove((response.json as WebhookResource).webhook_id);
      }
    });

    it('P13: with private targets allowed, metadata, link-local, multicast and unspecified targets are still refused (validation_error)', async function () {
      requirePrivateTargets(this, target, true);
      for (const url of REFUSED_EVEN_WHEN_ALLOWED) assertUrlRefused(await session.create({ url, events: ['tape.updated'] }), url);
    });
  });
});

const PRIVATE_TARGETS_REFUSED = 'security: private webhook targets refused (D16, WEBHOOK_ALLOW_PRIVATE_TARGETS off) [delivery:private targets refused]';

// Without such a deployment the row is still in the report, skipped with what the run would need.
if (!hasPrivateTargetsRefusedTarget()) {
  forEachTarget((target) => {
    describe(PRIVATE_TARGETS_REFUSED, () => {
      it('loopback, private, link-local and metadata targets are refused at registration', function () {
        requirePrivateTargets(this, target, false);
      });
    });
  });
}

forEachPrivateTargetsRefusedTarget((target: Target) => {
  describe(PRIVATE_TARGETS_REFUSED, () => {
    const create = (url: string) => target.api.post(WEBHOOKS_PATH, { json: { url, events: ['tape.updated'] } });

    for (const url of PRIVATE_TARGETS) {
      it(`${url}: 400 validation_error naming url`, async () => {
        assertUrlRefused(await create(url), url);
      });
    }

    it('other spellings of loopback, private, unspecified and reserved hosts are refused too', async () => {
      for (const url of OTHER_PRIVATE_SPELLINGS) assertUrlRefused(await create(url), url);
    });

    it('with a port and a path the same addresses are refused too', async () => {
      for (const url of [
        'https://127.0.0.1:8443/hooks',
        'https://localhost:443/x?y=1',
        'https://[::1]:9000/',
        'https://10.1.2.3/a/b',
        'https://169.254.169.254/latest/meta-data/',
      ]) {
        assertUrlRefused(await create(url), url);
      }
    });

    it('the refusals are about the address: a public address literal is accepted (then deleted)', async () => {
      // Registration connects nowhere, and the endpoint only takes tape.updated, which nothing here triggers.
      const response = await create(placeholderUrl('public-literal'));
      assert.equal(response.status, 201, response.text);
      const removed = await target.api.request('DELETE', `${WEBHOOKS_PATH}/${(response.json as WebhookResource).webhook_id}`);
      assert.equal(removed.status, 204, removed.text);
    });
  });
});
