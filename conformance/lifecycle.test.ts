import assert from 'node:assert/strict';
import { loadContract } from './contract.ts';
import { covers } from './matrix.ts';
import { forEachTarget, requireSandbox, type ApiResponse, type Target } from './harness.ts';
import { assertEventRequest, movesAlong, type EventPayload, type ReceivedEvent, type TransitionRow } from './event-contract.ts';
import { attemptWaitMs, WEBHOOKS_PATH, webhookReceiver, type WebhookResource } from './webhooks.ts';
import type { WebhookReceiver } from './webhook-receiver.ts';
import {
  assertResourceInvariants,
  cancelVerification,
  createVerification,
  follow,
  getTape,
  getVerification,
  randomReference,
  sleep,
  statesOf,
  SYNTHETIC_CREATORS,
  TERMINAL_STATES,
  type Observation,
  type Verification,
} from './sandbox.ts';

/**
 * Happy: the state table of section 3, as the contract writes it (`x-transitions` of
 * `VerificationStatus`), walked through the status endpoint of a sandbox. Every row must be
 * reached by one of the scenarios below; a row the suite does not know fails the run.
 */

interface Row {
  from: string | null;
  trigger: string;
  to: string;
  emits: string | null;
  reasons?: string[];
}

const rowKey = (row: Pick<Row, 'from' | 'trigger' | 'to'>) => `${row.from ?? '(creation)'} -[${row.trigger}]-> ${row.to}`;

interface Scenario {
  name: string;
  prefix: string;
  platforms: Array<'youtube' | 'stripe'>;
  /** The distinct states the status endpoint must show, in order, from the creation response on. */
  path: Verification['status'][];
  failureReason?: string;
  /** The lender cancels it right after creation. */
  cancel?: true;
}

/** D11: the `test-` prefixes, and a reference without one (a real creator, who never consents here). */
const SCENARIOS: Scenario[] = [
  { name: 'real creator', prefix: 'conformance-real-', platforms: ['youtube', 'stripe'], path: ['pending_consent'] },
  // P9: a `test-` reference without one of the trigger prefixes waits for consent like a real one.
  { name: 'other test- reference', prefix: 'test-conformance-', platforms: ['youtube'], path: ['pending_consent'] },
  { name: 'test-complete-', prefix: 'test-complete-', platforms: ['youtube'], path: ['pending_consent', 'processing', 'completed'] },
  {
    name: 'test-fail-',
    prefix: 'test-fail-',
    platforms: ['youtube', 'stripe'],
    path: ['pending_consent', 'processing', 'failed'],
    failureReason: 'platform_error',
  },
  { name: 'test-revoke-', prefix: 'test-revoke-', platforms: ['stripe'], path: ['pending_consent', 'processing', 'failed'], failureReason: 'consent_revoked' },
  { name: 'test-timeout-', prefix: 'test-timeout-', platforms: ['youtube'], path: ['pending_consent', 'processing', 'failed'], failureReason: 'timeout' },
  { name: 'test-expire-', prefix: 'test-expire-', platforms: ['youtube'], path: ['pending_consent', 'expired'] },
  { name: 'cancelled by the lender', prefix: 'conformance-cancel-', platforms: ['youtube'], path: ['pending_consent', 'cancelled'], cancel: true },
];
const SYNTHETIC = 'synthetic creators (section 2.6)';

/** Which scenarios reach each row of the table. Kept by hand: a new row in the contract must be added here. */
/** `pending_consent -[consent_completed]-> processing` → the matrix row `transition:pending_consent->processing`. */
const transitionTag = (key: string) => `transition:${key.replace(/^\(creation\)/, 'new').replace(/ -\[[^\]]*\]-> /, '->')}`;

const COVERAGE: Record<string, string[]> = {
  '(creation) -[created]-> pending_consent': [
    'real creator',
    'other test- reference',
    'test-complete-',
    'test-fail-',
    'test-revoke-',
    'test-timeout-',
    'test-expire-',
  ],
  '(creation) -[created_synthetic]-> completed': [SYNTHETIC],
  'pending_consent -[consent_completed]-> processing': ['test-complete-', 'test-fail-', 'test-revoke-', 'test-timeout-'],
  'processing -[tape_computed]-> completed': ['test-complete-'],
  'processing -[collection_failed]-> failed': ['test-fail-', 'test-revoke-', 'test-timeout-'],
  'pending_consent -[consent_expired]-> expired': ['test-expire-'],
  'pending_consent -[cancelled_by_lender]-> cancelled': ['cancelled by the lender'],
};

/** Rows no `test-` prefix reaches, walked by another file of the suite. */
const COVERED_ELSEWHERE: Record<string, string> = {
  'pending_consent -[consent_declined]-> failed': 'consent-decline.test.ts, through the consent page',
};

interface Walk {
  created: ApiResponse;
  observations: Observation[];
  /** GET .../tape at the first sight of each state. */
  tapes: Map<string, ApiResponse>;
  /** One more GET, a whole sandbox delay after the last state was reached. */
  settled: Verification;
  /**
   * The events of this verification the suite's endpoint received by then, in order of arrival;
   * undefined when the deployment cannot reach the suite's receiver.
   */
  events: ReceivedEvent[] | undefined;
}

/**
 * The suite's endpoint for lender A's verification events while the walks run. `processing` emits
 * nothing and lasts half the sandbox delay, so a poll can miss it on a loaded machine (or a service
 * whose two sandbox steps run back to back after a stall); the event of the move out of it cannot be
 * missed, and the table says which move emits it (D11: every move emits its event as production would).
 */
class EventInbox {
  private constructor(
    private readonly target: Target,
    private readonly receiver: WebhookReceiver,
    private readonly path: string,
    private readonly endpoint: { events: string[]; secret: string; webhookId: string },
    private readonly rows: TransitionRow[],
  ) {}

  static async open(target: Target, rows: TransitionRow[]): Promise<EventInbox> {
    const receiver = await webhookReceiver(target);
    const path = receiver.newPath('lifecycle');
    const events = [...new Set(rows.map((row) => row.emits).filter((emits): emits is string => emits !== null))];
    const response = await target.api.post(WEBHOOKS_PATH, { json: { url: receiver.urlFor(path), events } });
    assert.equal(response.status, 201, response.text);
    const webhook = response.json as WebhookResource & { secret: string };
    receiver.expectSignedWith(path, webhook.secret);
    return new EventInbox(target, receiver, path, { events, secret: webhook.secret, webhookId: webhook.webhook_id }, rows);
  }

  /** The events of `verificationId` received so far, each checked against the contract. */
  eventsOf(verificationId: string): ReceivedEvent[] {
    return this.receiver
      .requestsTo(this.path)
      .map((request) => assertEventRequest(request, this.endpoint, this.rows))
      .filter((event) => event.payload.verification_id === verificationId);
  }

  /** Waits, with a deadline, until `count` events of `verificationId` arrived. */
  async waitFor(verificationId: string, count: number): Promise<ReceivedEvent[]> {
    const timeoutMs = this.target.sandboxDelayMs + attemptWaitMs(this.target, 1);
    const ours = (requests: Array<{ rawBody: Buffer }>) => requests.filter((r) => r.rawBody.toString('utf8').includes(verificationId));
    await this.receiver.waitFor(this.path, (requests) => ours(requests).length >= count, timeoutMs, `${count} event(s) of ${verificationId}`);
    return this.eventsOf(verificationId);
  }

  async close(): Promise<void> {
    const response = await this.target.api.request('DELETE', `${WEBHOOKS_PATH}/${this.endpoint.webhookId}`);
    assert.equal(response.status, 204, response.text);
  }
}

/** The events the moves along `path` emit, in order. */
const eventsAlong = (rows: TransitionRow[], path: readonly string[]) =>
  movesAlong(rows, path)
    .map((row) => row.emits)
    .filter((emits): emits is string => emits !== null);

/** `to` follows `from` in the table, directly or through states in between. */
function reachable(rows: TransitionRow[], from: string, to: string): boolean {
  const seen = new Set([from]);
  const queue = [from];
  while (queue.length > 0) {
    const state = queue.shift()!;
    for (const row of rows.filter((candidate) => candidate.from === state)) {
      if (row.to === to) return true;
      if (seen.has(row.to)) continue;
      seen.add(row.to);
      queue.push(row.to);
    }
  }
  return false;
}

/** `states` holds the first and last of `path`, and nothing that is not in `path`, in its order (a poll may miss a short state, nothing more). */
function isPollOf(states: readonly string[], path: readonly string[]): boolean {
  if (states[0] !== path[0] || states.at(-1) !== path.at(-1)) return false;
  let at = 0;
  for (const state of states) {
    at = path.indexOf(state, at);
    if (at < 0) return false;
  }
  return true;
}

/**
 * How `walk` shows the move `row`, or undefined when it does not: the status endpoint showed its two
 * states one after the other, or an event arrived that the table emits only on this move or only on
 * moves out of its target state while the status endpoint showed the states around it. Without
 * webhooks, a state the polls missed is shown only by a later state the table reaches from it alone.
 */
function howShown(row: TransitionRow, seen: Walk, rows: TransitionRow[]): string | undefined {
  const states = statesOf(seen.observations);
  if (row.from === null) return (seen.created.json as Verification).status === row.to ? 'the creation response' : undefined;
  const at = states.indexOf(row.from);
  if (at >= 0 && states[at + 1] === row.to) return 'the status endpoint';
  const moves = rows.filter((candidate) => candidate.from !== null);
  // The rows that could have sent an event: those emitting its name and, where a row lists the
  // reasons it sets, only those listing the event's reason (verification.failed leaves processing
  // or pending_consent, and its reason says which).
  const sendersOf = (event: EventPayload) =>
    moves.filter(
      (candidate) => candidate.emits === event.event && (!candidate.reasons || (event.reason !== undefined && candidate.reasons.includes(event.reason))),
    );
  const onlyOn = (event: EventPayload, holds: (candidate: TransitionRow) => boolean) => {
    const senders = sendersOf(event);
    return senders.length > 0 && senders.every(holds);
  };
  const events = seen.events?.map((event) => event.payload) ?? [];
  const after = at < 0 ? [] : states.slice(at + 1);
  const own = events.find((event) => event.event === row.emits && onlyOn(event, (c) => c.from === row.from && c.to === row.to));
  if (own && states.at(-1) === row.to) return `the ${own.event} event`;
  const leaving = events.find((event) => onlyOn(event, (c) => c.from === row.to));
  if (leaving && at >= 0 && after.length > 0)
    return `the ${leaving.event} event${leaving.reason ? ` (${leaving.reason})` : ''}, sent only on a move out of ${row.to}`;
  if (seen.events === undefined && at >= 0 && after.length > 0 && moves.filter((c) => c.to === after[0]).every((c) => c.from === row.to)) {
    return `${after[0]}, which the table reaches only from ${row.to}`;
  }
  return undefined;
}

async function transitionRows(): Promise<Row[]> {
  const { document } = await loadContract();
  const rows = document.components?.schemas?.VerificationStatus?.['x-transitions'] as Row[] | undefined;
  assert.ok(Array.isArray(rows) && rows.length > 0, 'the contract lists the moves in components.schemas.VerificationStatus.x-transitions');
  return rows;
}

async function walk(
  target: Target,
  reference: string,
  platforms: Scenario['platforms'],
  watchOnly: boolean,
  inbox: EventInbox | undefined,
  expectedEvents: number,
  cancel = false,
): Promise<Walk> {
  const created = await createVerification(target, { obligor_reference: reference, creator_platforms: platforms });
  assert.equal(created.status, 201, created.text);
  const id = (created.json as Verification).verification_id;
  if (cancel) {
    const cancelled = await cancelVerification(target, id);
    assert.equal(cancelled.status, 200, cancelled.text);
  }
  const tapes = new Map<string, ApiResponse>();
  const onNewState = async (resource: Verification) => {
    if (!tapes.has(resource.status)) tapes.set(resource.status, await getTape(target, id));
  };
  await onNewState(created.json as Verification);
  // A real creator never consents here: watch it for longer than any `test-` outcome takes.
  // The outcome's event and the polls are awaited together: the event is stored with the move (D14),
  // so once it arrived the status endpoint shows the outcome at its next poll.
  const [polled] = await Promise.all([
    follow(target, id, watchOnly ? { forMs: Math.round(target.sandboxDelayMs * 1.5), onNewState } : { onNewState }),
    inbox && expectedEvents > 0 ? inbox.waitFor(id, expectedEvents) : undefined,
  ]);
  const observations: Observation[] = [{ at: 0, resource: created.json as Verification }, ...polled];
  // Waits out a whole sandbox delay on purpose: what must not happen (a move out of a terminal state, an extra event) has no event to wait for.
  await sleep(target.sandboxDelayMs);
  const settled = await getVerification(target, id);
  return { created, observations, tapes, settled, events: inbox?.eventsOf(id) };
}

/** Starts every walk at once (they run concurrently); each test awaits the walks it needs. */
function startWalks(target: Target, inbox: EventInbox | undefined, rows: TransitionRow[]): Map<string, Promise<Walk>> {
  const walks = new Map<string, Promise<Walk>>();
  for (const scenario of SCENARIOS) {
    const events = eventsAlong(rows, scenario.path).length;
    walks.set(scenario.name, walk(target, randomReference(scenario.prefix), scenario.platforms, scenario.path.length === 1, inbox, events, scenario.cancel));
  }
  const synthetic = eventsAlong(rows, ['completed']).length;
  for (const { reference } of SYNTHETIC_CREATORS) walks.set(reference, walk(target, reference, ['youtube', 'stripe'], false, inbox, synthetic));
  // Failures surface in the tests that await them; this only keeps Node from calling them unhandled.
  for (const promise of walks.values()) promise.catch(() => undefined);
  return walks;
}

forEachTarget((target) => {
  describe('happy: the state table (x-transitions), walked in the sandbox [op:getVerification 200] [limit:consent session]', function () {
    // Every walk runs concurrently: one sandbox delay to the outcome, one more to see it stay put.
    this.timeout(target.sandboxDelayMs * 3 + 30_000);
    let walks: Map<string, Promise<Walk>>;
    let inbox: EventInbox | undefined;
    const walkOf = (name: string) => {
      const found = walks.get(name);
      assert.ok(found, `no walk ${name}`);
      return found;
    };
    const scenarioWalks = async (names: string[]) => {
      const expanded = names.flatMap((name) => (name === SYNTHETIC ? SYNTHETIC_CREATORS.map((c) => c.reference) : [name]));
      return Promise.all(expanded.map(async (name) => ({ name, walk: await walkOf(name) })));
    };
    const allWalks = () => scenarioWalks([...SCENARIOS.map((s) => s.name), SYNTHETIC]);

    before(async function () {
      requireSandbox(this, target);
      const rows = await transitionRows();
      inbox = target.webhooks.unavailable ? undefined : await EventInbox.open(target, rows);
      walks = startWalks(target, inbox, rows);
    });
    after(async function () {
      if (!walks) return;
      await Promise.allSettled(walks.values());
      await inbox?.close();
    });

    it('the suite covers exactly the rows of x-transitions (a new row fails here until a scenario reaches it)', async () => {
      const rows = (await transitionRows()).map(rowKey).sort();
      assert.deepEqual(rows, [...Object.keys(COVERAGE), ...Object.keys(COVERED_ELSEWHERE)].sort());
    });

    for (const [key, scenarioNames] of Object.entries(COVERAGE)) {
      it(`row ${key}: observed with ${scenarioNames.join(', ')}${covers(transitionTag(key))}`, async () => {
        const row = (await transitionRows()).find((candidate) => rowKey(candidate) === key);
        assert.ok(row, `x-transitions has no row ${key}`);
        const rows = await transitionRows();
        for (const { name, walk: seen } of await scenarioWalks(scenarioNames)) {
          assert.ok(
            howShown(row, seen, rows),
            `${name}: expected ${row.from ?? '(creation)'} then ${row.to}; states seen: ${statesOf(seen.observations).join(' → ')}; events: ${
              seen.events?.map((event) => event.payload.event).join(', ') ?? '(no webhooks)'
            }`,
          );
        }
      });
    }

    it('every scenario shows its path of states (polls may miss a short one) and sends exactly the events of its moves, and every move seen is a row of the table', async () => {
      const rows = await transitionRows();
      for (const scenario of SCENARIOS) {
        const seen = await walkOf(scenario.name);
        const states = statesOf(seen.observations);
        assert.ok(isPollOf(states, scenario.path), `${scenario.name}: states seen ${states.join(' → ')}, expected ${scenario.path.join(' → ')}`);
        if (seen.events) {
          assert.deepEqual(
            seen.events.map((event) => event.payload.event),
            eventsAlong(rows, scenario.path),
            `${scenario.name}: the events of the moves ${scenario.path.join(' → ')}`,
          );
          for (const event of seen.events)
            assert.equal(event.payload.occurred_at, seen.settled.updated_at, `${scenario.name}: occurred_at is the move's updated_at`);
          if (scenario.failureReason) assert.equal(seen.events.at(-1)?.payload.reason, scenario.failureReason, `${scenario.name}: the event's reason`);
        }
      }
      for (const { name, walk: seen } of await allWalks()) {
        const states = statesOf(seen.observations);
        assert.ok(
          rows.some((row) => row.from === null && row.to === states[0]),
          `${name}: created as ${states[0]}, which no row allows`,
        );
        for (let i = 1; i < states.length; i++) {
          assert.ok(
            reachable(rows, states[i - 1]!, states[i]!),
            `${name}: ${states[i - 1]} → ${states[i]} is not a row of the table, nor a chain of rows through states a poll may have missed`,
          );
        }
      }
    });

    it('a synthetic creator is completed in the creation response itself, with its tape (no consent step)', async () => {
      for (const { name, walk: seen } of await scenarioWalks([SYNTHETIC])) {
        const resource = seen.created.json as Verification;
        assert.equal(resource.status, 'completed', name);
        assert.equal(seen.tapes.get('completed')?.status, 200, `${name}: the tape is there at once`);
      }
    });

    for (const name of ['real creator', 'other test- reference']) {
      it(`a ${name} waits in pending_consent (nothing moves without consent${name === 'real creator' ? '' : ', P9'})`, async () => {
        const seen = await walkOf(name);
        assert.deepEqual(statesOf(seen.observations), ['pending_consent']);
        assert.equal(seen.settled.status, 'pending_consent');
        assert.ok(
          seen.settled.platform_connections.every((c) => c.status === 'not_connected'),
          JSON.stringify(seen.settled.platform_connections),
        );
        assert.ok(Date.parse(seen.settled.expires_at) > Date.now(), 'its consent session is still open');
      });
    }

    for (const scenario of SCENARIOS.filter((s) => s.failureReason)) {
      it(`processing → failed with failure_reason ${scenario.failureReason} (${scenario.name})`, async () => {
        const seen = await walkOf(scenario.name);
        const last = seen.observations.at(-1)!.resource;
        assert.equal(last.status, 'failed');
        assert.equal(last.failure_reason, scenario.failureReason);
      });
    }

    it('D2: completed_at only when completed, failure_reason only when failed, schema_version only with a tape, expires_at = created_at + 7 days, consent_url without the id, in every state seen', async () => {
      for (const { walk: seen } of await allWalks()) {
        const original = seen.created.json as Verification;
        for (const { resource } of seen.observations) assertResourceInvariants(resource, original);
        assertResourceInvariants(seen.settled, original);
      }
    });

    it('updated_at moves forward with every change of state, and never back', async () => {
      for (const { name, walk: seen } of await allWalks()) {
        const observations = [...seen.observations.map((o) => o.resource), seen.settled];
        for (let i = 1; i < observations.length; i++) {
          const [before, after] = [observations[i - 1]!, observations[i]!];
          const [t0, t1] = [Date.parse(before.updated_at), Date.parse(after.updated_at)];
          assert.ok(t1 >= t0, `${name}: updated_at went back from ${before.updated_at} to ${after.updated_at}`);
          if (before.status !== after.status) assert.ok(t1 > t0, `${name}: ${before.status} → ${after.status} left updated_at at ${before.updated_at}`);
        }
      }
    });

    it('a terminal state never changes afterwards (the resource is the same a whole sandbox delay later)', async () => {
      for (const { name, walk: seen } of await allWalks()) {
        const last = seen.observations.at(-1)!.resource;
        if (!(TERMINAL_STATES as readonly string[]).includes(last.status)) continue;
        assert.deepEqual(seen.settled, last, `${name}: ${last.status} changed`);
      }
    });

    it('the tape is 404 naming the status in every state before completion, and 200 at 2.0.0 once completed (D5)', async () => {
      const rows = await transitionRows();
      /** `status` and every state the state table can move it to: polls can miss a short-lived state. */
      const reachableFrom = (status: string): string[] => {
        const reached = new Set([status]);
        for (let grew = true; grew;) {
          grew = false;
          for (const row of rows)
            if (row.from !== null && reached.has(row.from) && !reached.has(row.to)) {
              reached.add(row.to);
              grew = true;
            }
        }
        return [...reached];
      };
      for (const { name, walk: seen } of await allWalks()) {
        const states = statesOf(seen.observations);
        for (const [status, response] of seen.tapes) {
          // The tape was asked for right after `status` was seen; the verification may have moved on
          // since, through states the polls did not see.
          const observedSince = states.slice(states.indexOf(status));
          const since = [...new Set([...observedSince, ...reachableFrom(status)])];
          if (response.status === 200) {
            assert.ok(observedSince.includes('completed'), `${name}: a tape while ${observedSince.join(' → ')}`);
            assert.equal((response.json as { schema_version: string }).schema_version, '2.0.0');
          } else {
            assert.equal(response.status, 404, `${name} (${status}): ${response.text}`);
            const body = response.json as { error: string; message: string };
            assert.equal(body.error, 'not_found');
            const named = since.filter((state) => state !== 'completed' && new RegExp(`\\b${state}\\b`).test(body.message));
            assert.ok(named.length > 0, `${name}: the message names the status (${since.join(' or ')}): ${body.message}`);
          }
        }
        if (states.includes('completed')) assert.ok(seen.tapes.get('completed')?.status === 200, `${name}: completed, yet no tape`);
      }
    });
  });
});
