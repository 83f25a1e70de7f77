import assert from 'node:assert/strict';
import { forEachTarget, requireSandbox, type Target } from './harness.ts';
import { assertEventRequest, movesAlong, transitionRows, type ReceivedEvent, type TransitionRow } from './event-contract.ts';
import { randomReference, TERMINAL_STATES, type Verification } from './sandbox.ts';
import { attemptWaitMs, finished, requireWebhooks, WebhookSession, type Delivery, type DeliveryList, type ReceiverEndpoint } from './webhooks.ts';
import type { ReceivedRequest } from './webhook-receiver.ts';

/**
 * Happy: the events of section 6.1 as the lender's endpoints receive them. Endpoints subscribed to
 * different sets of events watch verifications of every `test-` prefix, a few synthetic creators
 * and a real creator; each endpoint must receive exactly one event per move of the state table
 * (`x-transitions`) that emits one of its events, signed, valid against its schema, with the
 * reason of its prefix and `occurred_at` of the move, in the order of the moves of its verification.
 */

interface Scenario {
  name: string;
  /** `obligor_reference`, or its prefix when `synthetic` is false. */
  reference: string;
  synthetic: boolean;
  /** The states the verification shows, from its creation response on (section 3, P9). */
  path: Verification['status'][];
  reason?: string;
}

const SCENARIOS: Scenario[] = [
  { name: 'test-complete-', reference: 'test-complete-', synthetic: false, path: ['pending_consent', 'processing', 'completed'] },
  { name: 'test-fail-', reference: 'test-fail-', synthetic: false, path: ['pending_consent', 'processing', 'failed'], reason: 'platform_error' },
  { name: 'test-revoke-', reference: 'test-revoke-', synthetic: false, path: ['pending_consent', 'processing', 'failed'], reason: 'consent_revoked' },
  { name: 'test-timeout-', reference: 'test-timeout-', synthetic: false, path: ['pending_consent', 'processing', 'failed'], reason: 'timeout' },
  { name: 'test-expire-', reference: 'test-expire-', synthetic: false, path: ['pending_consent', 'expired'] },
  { name: 'demo_prime_multi', reference: 'demo_prime_multi', synthetic: true, path: ['completed'] },
  { name: 'volatile_subprime', reference: 'volatile_subprime', synthetic: true, path: ['completed'] },
  { name: 'demo-yt-nano', reference: 'demo-yt-nano', synthetic: true, path: ['completed'] },
  // Waits for a consent that never comes here: no move after creation, so no event.
  { name: 'real creator', reference: 'conformance-webhook-real-', synthetic: false, path: ['pending_consent'] },
];

/** Endpoints with different subscriptions; `tape.updated` only is never triggered here (no overlay is attached). */
const ENDPOINTS: Array<{ label: string; events: string[] }> = [
  { label: 'every-event', events: ['verification.completed', 'verification.failed', 'verification.expired', 'tape.updated'] },
  { label: 'completed-only', events: ['verification.completed'] },
  { label: 'failed-and-expired', events: ['verification.failed', 'verification.expired'] },
  { label: 'tape-updated-only', events: ['tape.updated'] },
];

interface Watched {
  scenario: Scenario;
  created: Verification;
  /** The resource once it reached the end of its path. */
  final: Verification;
  /** The rows of x-transitions its path goes through. */
  moves: TransitionRow[];
}

interface EndpointRun {
  endpoint: ReceiverEndpoint;
  /** Every request the endpoint received by the time its log showed every delivery of ours finished. */
  requests: ReceivedRequest[];
  /** The endpoint's whole delivery log at that time. */
  log: Delivery[];
}

interface EventRun {
  rows: TransitionRow[];
  watched: Watched[];
  endpoints: EndpointRun[];
  dedicatedLender: boolean;
  session: WebhookSession;
}

async function runEvents(target: Target, session: WebhookSession): Promise<EventRun> {
  const rows = await transitionRows();
  const endpoints: ReceiverEndpoint[] = [];
  for (const { label, events } of ENDPOINTS) endpoints.push(await session.registerReceiver(label, events));

  const created = await Promise.all(
    SCENARIOS.map(async (scenario) => ({
      scenario,
      created: await session.createVerification(scenario.synthetic ? scenario.reference : randomReference(scenario.reference), ['youtube', 'stripe']),
    })),
  );
  const watched: Watched[] = await Promise.all(
    created.map(async ({ scenario, created: resource }) => {
      const last = scenario.path.at(-1)!;
      const final = (TERMINAL_STATES as readonly string[]).includes(last)
        ? await session.untilTerminal(resource.verification_id)
        : await session.getVerification(resource.verification_id);
      assert.equal(final.status, last, `${scenario.name}: ends ${last}`);
      return { scenario, created: resource, final, moves: movesAlong(rows, scenario.path) };
    }),
  );

  // D14: a delivery is stored with the state change, so with every verification at the end of its
  // path each log is complete; wait until every delivery of ours in it has finished.
  const ours = new Set(watched.map((w) => w.created.verification_id));
  const runs: EndpointRun[] = [];
  for (const endpoint of endpoints) {
    const log = await session.waitForLog(
      endpoint.webhook.webhook_id,
      (entries) => entries.filter((d) => ours.has(d.verification_id)).every(finished),
      attemptWaitMs(target, 1),
      'every delivery finished',
    );
    runs.push({ endpoint, requests: session.receiver.requestsTo(endpoint.path), log });
  }
  return { rows, watched, endpoints: runs, dedicatedLender: session.lender.dedicated, session };
}

/** The events a verification's moves emit that `events` subscribes to, in the order of the moves. */
const expectedFor = (watched: Watched, events: readonly string[]) =>
  watched.moves.map((row) => row.emits).filter((emits): emits is string => emits !== null && events.includes(emits));

forEachTarget((target) => {
  describe('happy: events to subscribed endpoints (6.1, D13, D14, x-transitions) [event:verification.completed] [event:verification.failed] [event:verification.expired] [header:X-Service-Signature] [header:X-Service-Event] [header:X-Service-Delivery] [delivery:acknowledgement] [op:listWebhookDeliveries 200]', function () {
    this.timeout(target.sandboxDelayMs + attemptWaitMs(target, 1) * 2 + 30_000);
    let run: Promise<EventRun>;
    let session: WebhookSession | undefined;

    before(async function () {
      requireWebhooks(this, target);
      requireSandbox(this, target);
      session = await WebhookSession.open(target);
      run = runEvents(target, session);
      run.catch(() => undefined);
    });
    after(async function () {
      this.timeout(30_000);
      await session?.cleanup();
    });

    /** Every request of an endpoint run, checked on its own; the ones about our verifications. */
    const received = async (endpointRun: EndpointRun) => {
      const { rows, watched } = await run;
      const ours = new Map(watched.map((w) => [w.created.verification_id, w]));
      const events = endpointRun.requests.map((request) => assertEventRequest(request, endpointRun.endpoint, rows));
      return { all: events, ours: events.filter((event) => ours.has(event.payload.verification_id)) };
    };
    /** One per delivery (a delivery may in principle arrive twice: at least once, D14), in order of arrival. */
    const distinctDeliveries = (events: ReceivedEvent[]) => {
      const seen = new Map<string, ReceivedEvent>();
      for (const event of events) {
        const first = seen.get(event.deliveryId);
        if (first) assert.ok(first.request.rawBody.equals(event.request.rawBody), `delivery ${event.deliveryId} arrived twice with different bodies`);
        else seen.set(event.deliveryId, event);
      }
      return [...seen.values()];
    };

    it('each endpoint receives exactly the events it subscribed to: one per move of x-transitions that emits one', async () => {
      const { watched, endpoints, dedicatedLender } = await run;
      for (const endpointRun of endpoints) {
        const { all, ours } = await received(endpointRun);
        const label = endpointRun.endpoint.path;
        const expected = watched.flatMap((w) => expectedFor(w, endpointRun.endpoint.events).map((event) => `${w.scenario.name} ${event}`)).sort();
        const byId = new Map(watched.map((w) => [w.created.verification_id, w.scenario.name]));
        const got = distinctDeliveries(ours)
          .map((event) => `${byId.get(event.payload.verification_id)} ${event.payload.event}`)
          .sort();
        assert.deepEqual(got, expected, `${label} (${endpointRun.endpoint.events.join(', ')})`);
        // Its own lender account: nothing else can have produced an event for these endpoints.
        if (dedicatedLender) assert.equal(all.length, ours.length, `${label} received events of verifications this test did not make`);
      }
      const total = endpoints.reduce((sum, e) => sum + watched.flatMap((w) => expectedFor(w, e.endpoint.events)).length, 0);
      assert.ok(total > 0, 'x-transitions names no event these scenarios emit');
    });

    it('the endpoint subscribed only to tape.updated receives nothing, and its log is empty', async () => {
      const { endpoints, watched } = await run;
      const tapeOnly = endpoints.find((e) => e.endpoint.events.length === 1 && e.endpoint.events[0] === 'tape.updated')!;
      const ours = new Set(watched.map((w) => w.created.verification_id));
      assert.deepEqual((await received(tapeOnly)).ours, []);
      assert.deepEqual(
        tapeOnly.log.filter((d) => ours.has(d.verification_id)),
        [],
      );
    });

    it('a verification waiting for consent emits nothing', async () => {
      const { endpoints, watched } = await run;
      const waiting = watched.find((w) => w.scenario.name === 'real creator')!;
      assert.equal(waiting.final.status, 'pending_consent');
      for (const endpointRun of endpoints) {
        assert.ok(
          !endpointRun.requests.some((r) => r.rawBody.toString().includes(waiting.created.verification_id)),
          `${endpointRun.endpoint.path} got an event for it`,
        );
        assert.ok(!endpointRun.log.some((d) => d.verification_id === waiting.created.verification_id), `${endpointRun.endpoint.path} logged a delivery for it`);
      }
    });

    it("every request is a signed JSON POST (sha256=<hex> of the raw body), X-Service-Event equal to the body's event, X-Service-Delivery a UUID, headers as AsyncAPI has them", async () => {
      // assertEventRequest checks exactly that on every request of every endpoint, ours or not.
      const { endpoints } = await run;
      let checked = 0;
      for (const endpointRun of endpoints) checked += (await received(endpointRun)).all.length;
      assert.ok(checked > 0, 'no request was checked');
      for (const endpointRun of endpoints) {
        for (const request of endpointRun.requests) assert.equal(request.signature, 'valid', `${endpointRun.endpoint.path}: the receiver's own check`);
      }
    });

    it('every body is valid against its event schema, names the verification, and repeats its fields in data (D13)', async () => {
      const { endpoints, watched } = await run;
      const byId = new Map(watched.map((w) => [w.created.verification_id, w]));
      for (const endpointRun of endpoints) {
        for (const { payload } of (await received(endpointRun)).ours) {
          const w = byId.get(payload.verification_id)!;
          assert.equal(payload.obligor_reference, w.created.obligor_reference, `${w.scenario.name}: obligor_reference`);
          assert.deepEqual(
            payload.data,
            {
              verification_id: w.created.verification_id,
              obligor_reference: w.created.obligor_reference,
              status: w.final.status,
              ...(payload.event === 'verification.failed' ? { reason: payload.reason } : {}),
            },
            `${w.scenario.name}: data`,
          );
          assert.equal(payload.data.status, w.final.status, `${w.scenario.name}: data.status is the state the verification reached`);
        }
      }
    });

    it("verification.failed carries the reason of its prefix, which is the verification's failure_reason", async () => {
      const { endpoints, watched } = await run;
      const byId = new Map(watched.map((w) => [w.created.verification_id, w]));
      let failed = 0;
      for (const endpointRun of endpoints) {
        for (const { payload } of distinctDeliveries((await received(endpointRun)).ours)) {
          const w = byId.get(payload.verification_id)!;
          if (payload.event !== 'verification.failed') {
            assert.equal('reason' in payload, false, `${w.scenario.name}: ${payload.event} has no reason`);
            continue;
          }
          failed++;
          assert.equal(payload.reason, w.scenario.reason, `${w.scenario.name}: reason`);
          assert.equal(payload.reason, w.final.failure_reason, `${w.scenario.name}: reason equals failure_reason`);
        }
      }
      assert.equal(failed, 2 * SCENARIOS.filter((s) => s.reason).length, 'each failure reached the two endpoints subscribed to verification.failed');
    });

    it("occurred_at is the time of the move: the verification's updated_at for every terminal move", async () => {
      const { endpoints, watched } = await run;
      const byId = new Map(watched.map((w) => [w.created.verification_id, w]));
      for (const endpointRun of endpoints) {
        for (const { payload } of (await received(endpointRun)).ours) {
          const w = byId.get(payload.verification_id)!;
          const move = w.moves.find((row) => row.emits === payload.event);
          assert.ok(move, `${w.scenario.name}: no move of its path emits ${payload.event}`);
          if (!(TERMINAL_STATES as readonly string[]).includes(move.to)) continue;
          assert.equal(
            Date.parse(payload.occurred_at),
            Date.parse(w.final.updated_at),
            `${w.scenario.name}: occurred_at ${payload.occurred_at}, updated_at ${w.final.updated_at}`,
          );
          assert.ok(Date.parse(payload.occurred_at) >= Date.parse(w.created.created_at), `${w.scenario.name}: occurred_at before created_at`);
        }
      }
    });

    it('the same event has one event_id at every endpoint; different events have different ids', async () => {
      const { endpoints } = await run;
      const idOf = new Map<string, string>();
      for (const endpointRun of endpoints) {
        for (const { payload } of (await received(endpointRun)).ours) {
          const event = `${payload.verification_id} ${payload.event}`;
          const known = idOf.get(event);
          if (known) assert.equal(payload.event_id, known, `${event}: event_id differs between endpoints`);
          else idOf.set(event, payload.event_id);
        }
      }
      assert.equal(new Set(idOf.values()).size, idOf.size, 'two events share an event_id');
    });

    it('every delivery has its own X-Service-Delivery: the same event to two endpoints is two deliveries', async () => {
      const { endpoints } = await run;
      const owner = new Map<string, string>();
      for (const endpointRun of endpoints) {
        for (const { deliveryId } of (await received(endpointRun)).ours) {
          const seenAt = owner.get(deliveryId);
          assert.ok(seenAt === undefined || seenAt === endpointRun.endpoint.path, `${deliveryId} was sent to ${seenAt} and ${endpointRun.endpoint.path}`);
          owner.set(deliveryId, endpointRun.endpoint.path);
        }
      }
      assert.ok(owner.size > 0);
    });

    it('per verification, events arrive in the order of its moves (D14)', async () => {
      const { endpoints, watched } = await run;
      for (const endpointRun of endpoints) {
        const arrived = distinctDeliveries((await received(endpointRun)).ours).sort((a, b) => a.request.receivedAt - b.request.receivedAt);
        for (const w of watched) {
          const sequence = arrived.filter((event) => event.payload.verification_id === w.created.verification_id).map((event) => event.payload.event);
          assert.deepEqual(sequence, expectedFor(w, endpointRun.endpoint.events), `${endpointRun.endpoint.path}, ${w.scenario.name}`);
        }
      }
    });

    it('the delivery log shows every delivery as it arrived: succeeded, one attempt per request, same ids and event', async () => {
      const { endpoints, watched } = await run;
      const ours = new Set(watched.map((w) => w.created.verification_id));
      for (const endpointRun of endpoints) {
        const events = (await received(endpointRun)).ours;
        const logged = endpointRun.log.filter((d) => ours.has(d.verification_id));
        assert.equal(logged.length, distinctDeliveries(events).length, `${endpointRun.endpoint.path}: one log entry per delivery received`);
        for (const delivery of logged) {
          const requests = events.filter((event) => event.deliveryId === delivery.delivery_id);
          assert.ok(requests.length > 0, `${delivery.delivery_id} is in the log but never arrived`);
          const { payload } = requests[0]!;
          assert.equal(delivery.status, 'succeeded', JSON.stringify(delivery));
          assert.equal(delivery.webhook_id, endpointRun.endpoint.webhook.webhook_id);
          assert.equal(delivery.event_id, payload.event_id);
          assert.equal(delivery.event, payload.event);
          assert.equal(delivery.verification_id, payload.verification_id);
          assert.equal(delivery.next_attempt_at, null, 'nothing more to send');
          assert.equal(delivery.replay_of ?? null, null, 'not a replay');
          assert.deepEqual(
            delivery.attempts.map((a) => a.attempt),
            delivery.attempts.map((_, i) => i + 1),
            'attempts are numbered from 1',
          );
          assert.equal(delivery.attempts.filter((a) => a.status_code !== null).length, requests.length, 'one answered attempt per request received');
          const last = delivery.attempts.at(-1)!;
          assert.equal(last.status_code, 200);
          assert.equal(last.error, null);
        }
      }
    });

    it('the delivery log is newest first and pages with limit and starting_after', async () => {
      const { endpoints, session: s } = await run;
      const busiest = endpoints.reduce((a, b) => (b.log.length > a.log.length ? b : a));
      const full = await s.log(busiest.endpoint.webhook.webhook_id);
      assert.ok(full.length >= 4, `only ${full.length} deliveries to page through`);
      const times = full.map((d) => Date.parse(d.created_at));
      assert.deepEqual(
        times,
        [...times].sort((a, b) => b - a),
        'newest first',
      );
      const paged: Delivery[] = [];
      let startingAfter: string | undefined;
      for (;;) {
        const response = await s.deliveries(busiest.endpoint.webhook.webhook_id, { limit: 3, ...(startingAfter ? { starting_after: startingAfter } : {}) });
        assert.equal(response.status, 200, response.text);
        const page = response.json as DeliveryList;
        assert.ok(page.data.length <= 3, 'limit is respected');
        paged.push(...page.data);
        if (!page.has_more) break;
        assert.equal(page.data.length, 3, 'only the last page is short');
        startingAfter = page.data.at(-1)!.delivery_id;
      }
      assert.deepEqual(
        paged.map((d) => d.delivery_id),
        full.map((d) => d.delivery_id),
      );
    });
  });
});
