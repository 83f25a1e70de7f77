import assert from 'node:assert/strict';
import type { ApiResponse, KeyName, RequestOptions, Target } from './harness.ts';
import { CREATE_PATH, createVerification, outcomeTimeoutMs, pollIntervalMs, sleep, TERMINAL_STATES, type Verification } from './sandbox.ts';
import { receiverFor, type WebhookReceiver } from './webhook-receiver.ts';
import { skipBecause } from './skip.ts';

/**
 * Webhook endpoints and their delivery logs as a lender uses them (4.5 to 4.7, D14, D16), for the
 * webhook test files. Every request still goes through the target's checked API client.
 */

export const WEBHOOKS_PATH = '/api/v1/webhooks';
/** A retry schedule the suite waits out: tests needing later attempts skip on a longer one. */
export const MAX_WAITED_SCHEDULE_SECONDS = 10;
/** How often the suite reads a delivery log while waiting for it. */
const LOG_POLL_MS = 200;
/** Slack on top of the schedule and the receiver timeout for the sender to pick up and record a delivery. */
export const DELIVERY_GRACE_MS = 10_000;

export interface WebhookResource {
  webhook_id: string;
  url: string;
  events: string[];
  created_at: string;
  secret?: string;
}

export interface DeliveryAttempt {
  attempt: number;
  attempted_at: string;
  status_code: number | null;
  duration_ms: number;
  error: string | null;
}

export interface Delivery {
  delivery_id: string;
  webhook_id: string;
  event_id: string;
  event: string;
  verification_id: string;
  status: 'pending' | 'succeeded' | 'failed';
  attempts: DeliveryAttempt[];
  next_attempt_at: string | null;
  replay_of?: string | null;
  created_at: string;
}

export interface DeliveryList {
  data: Delivery[];
  has_more: boolean;
}

/** An endpoint the test registered at its own path of the suite's receiver. */
export interface ReceiverEndpoint {
  webhook: WebhookResource;
  secret: string;
  path: string;
  url: string;
  events: string[];
}

// ---------------------------------------------------------------- skips

/** Skips when the suite cannot receive webhooks from the target (no CA it trusts). */
export function requireWebhooks(context: Mocha.Context, target: Target): void {
  const reason = target.webhooks.unavailable;
  if (reason) {
    skipBecause(context, reason);
  }
}

/** Skips when waiting for attempt number `attempts` (1-based) would take more than a few seconds, or there is no such attempt. */
export function requireRetriesWithin(context: Mocha.Context, target: Target, attempts: number | 'all'): void {
  const schedule = target.webhooks.retryScheduleSeconds;
  const needed = attempts === 'all' ? schedule.length : attempts;
  const offset = schedule[needed - 1];
  if (offset === undefined) {
    skipBecause(context, `the retry schedule ${schedule.join(',')} has fewer than ${needed} attempts`);
  } else if (offset > MAX_WAITED_SCHEDULE_SECONDS) {
    skipBecause(
      context,
      `attempt ${needed} comes ${offset} s after the first; pass --retry-schedule (CONFORMANCE_RETRY_SCHEDULE) with a deployment schedule of at most ${MAX_WAITED_SCHEDULE_SECONDS} s`,
    );
  }
}

/** Skips unless the suite knows the deployment's WEBHOOK_ALLOW_PRIVATE_TARGETS and it is `allowed`. */
export function requirePrivateTargets(context: Mocha.Context, target: Target, allowed: boolean): void {
  const known = target.webhooks.privateTargetsAllowed;
  if (known === allowed) return;
  skipBecause(
    context,
    known === undefined
      ? "pass --private-targets-allowed 1 or 0 (CONFORMANCE_PRIVATE_TARGETS_ALLOWED), the deployment's WEBHOOK_ALLOW_PRIVATE_TARGETS"
      : `the deployment has WEBHOOK_ALLOW_PRIVATE_TARGETS=${known ? 1 : 0}`,
  );
}

// ---------------------------------------------------------------- the lender the webhook tests act as

/**
 * Who the webhook tests act as. On a self-started target, a lender account of their own (made with
 * the operator CLI), so that every event its endpoints receive comes from a verification the tests
 * made and "exactly these events" can be checked strictly. On an external deployment, the lender
 * key: events of that lender's other verifications may then arrive too, and are checked but not
 * counted.
 */
export interface WebhookLender {
  apiKey: string;
  /** Only the webhook tests use this lender account. */
  dedicated: boolean;
}

const lenders = new Map<Target, Promise<WebhookLender>>();

export function webhookLender(target: Target): Promise<WebhookLender> {
  let lender = lenders.get(target);
  if (!lender) {
    lender = (async () => {
      if (!target.operator) return { apiKey: target.keys.lender, dedicated: false };
      const account = await target.operator.createLender('Conformance Webhooks Lender');
      const key = await target.operator.createKey(account.id, 'lender');
      return { apiKey: key.api_key, dedicated: true };
    })();
    lenders.set(target, lender);
  }
  return lender;
}

export function webhookReceiver(target: Target): Promise<WebhookReceiver> {
  const { caDir, receiverHost } = target.webhooks;
  assert.ok(caDir, 'no CA directory for the receiver; guard the test with requireWebhooks');
  return receiverFor(caDir, receiverHost);
}

// ---------------------------------------------------------------- one test's endpoints

/**
 * A test's view of the webhook API as its lender: registers endpoints (deleted again by `cleanup`,
 * so no test leaves an endpoint that receives the next test's events), reads delivery logs, and
 * makes and follows verifications.
 */
export class WebhookSession {
  private readonly registered = new Set<string>();

  private constructor(
    readonly target: Target,
    readonly lender: WebhookLender,
    private readonly receiverOrUndefined: WebhookReceiver | undefined,
  ) {}

  /** With the receiver when the target can reach it; tests that use it guard with requireWebhooks. */
  static async open(target: Target): Promise<WebhookSession> {
    const lender = await webhookLender(target);
    const receiver = target.webhooks.unavailable ? undefined : await webhookReceiver(target);
    return new WebhookSession(target, lender, receiver);
  }

  get receiver(): WebhookReceiver {
    assert.ok(this.receiverOrUndefined, 'no receiver on this target; guard the test with requireWebhooks');
    return this.receiverOrUndefined;
  }

  /** As the session's lender, or as `key` (another of the target's keys), or with no key (`key: null`). */
  request(method: string, path: string, options: RequestOptions & { as?: KeyName | null } = {}): Promise<ApiResponse> {
    const { as, ...rest } = options;
    const who: RequestOptions = as === undefined ? { apiKey: this.lender.apiKey } : { key: as };
    return this.target.api.request(method, path, { ...rest, ...who });
  }

  /** POST /webhooks with `body`; a 201 is remembered for `cleanup`. */
  async create(body: unknown, as?: KeyName): Promise<ApiResponse> {
    const response = await this.request('POST', WEBHOOKS_PATH, { json: body, ...(as === undefined ? {} : { as }) });
    if (response.status === 201) this.registered.add((response.json as WebhookResource).webhook_id);
    return response;
  }

  async register(url: string, events: readonly string[]): Promise<WebhookResource & { secret: string }> {
    const response = await this.create({ url, events });
    assert.equal(response.status, 201, `${response.method} ${response.url}: ${response.text}`);
    return response.json as WebhookResource & { secret: string };
  }

  /** Registers the receiver at a fresh path, which checks the signatures it gets with the new secret. */
  async registerReceiver(label: string, events: readonly string[]): Promise<ReceiverEndpoint> {
    const path = this.receiver.newPath(label);
    const url = this.receiver.urlFor(path);
    const webhook = await this.register(url, events);
    this.receiver.expectSignedWith(path, webhook.secret);
    return { webhook, secret: webhook.secret, path, url, events: [...events] };
  }

  async remove(webhookId: string, as?: KeyName): Promise<ApiResponse> {
    const response = await this.request('DELETE', `${WEBHOOKS_PATH}/${encodeURIComponent(webhookId)}`, as === undefined ? {} : { as });
    if (response.status === 204) this.registered.delete(webhookId);
    return response;
  }

  async cleanup(): Promise<void> {
    for (const id of [...this.registered]) {
      await this.remove(id).catch(() => undefined);
      this.registered.delete(id);
    }
  }

  list(as?: KeyName): Promise<ApiResponse> {
    return this.request('GET', WEBHOOKS_PATH, as === undefined ? {} : { as });
  }

  deliveries(webhookId: string, query: { limit?: number; starting_after?: string } = {}, as?: KeyName): Promise<ApiResponse> {
    const search = new URLSearchParams(Object.entries(query).map(([name, value]): [string, string] => [name, String(value)])).toString();
    return this.request('GET', `${WEBHOOKS_PATH}/${encodeURIComponent(webhookId)}/deliveries${search ? `?${search}` : ''}`, as === undefined ? {} : { as });
  }

  replay(webhookId: string, deliveryId: string, as?: KeyName): Promise<ApiResponse> {
    return this.request(
      'POST',
      `${WEBHOOKS_PATH}/${encodeURIComponent(webhookId)}/deliveries/${encodeURIComponent(deliveryId)}/replay`,
      as === undefined ? {} : { as },
    );
  }

  /** The whole delivery log, newest first, page after page. */
  async log(webhookId: string, pageSize = 100): Promise<Delivery[]> {
    const all: Delivery[] = [];
    let startingAfter: string | undefined;
    for (let page = 0; page < 100; page++) {
      const response = await this.deliveries(webhookId, { limit: pageSize, ...(startingAfter ? { starting_after: startingAfter } : {}) });
      assert.equal(response.status, 200, `${response.method} ${response.url}: ${response.text}`);
      const list = response.json as DeliveryList;
      all.push(...list.data);
      if (!list.has_more) return all;
      assert.ok(list.data.length > 0, `${response.url}: has_more with an empty page`);
      startingAfter = list.data.at(-1)!.delivery_id;
    }
    assert.fail(`the delivery log of ${webhookId} did not end after 100 pages`);
  }

  /** Reads the log until `done` holds for it; fails after `timeoutMs` showing the last log. */
  async waitForLog(webhookId: string, done: (log: Delivery[]) => boolean, timeoutMs: number, what: string): Promise<Delivery[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const log = await this.log(webhookId);
      if (done(log)) return log;
      if (Date.now() >= deadline)
        assert.fail(`${webhookId}: ${what} not seen in the delivery log within ${timeoutMs} ms; the log:\n${JSON.stringify(log, null, 1)}`);
      await sleep(LOG_POLL_MS);
    }
  }

  async createVerification(reference: string, platforms: Array<'youtube' | 'stripe'> = ['youtube']): Promise<Verification> {
    const response = await createVerification(this.target, { obligor_reference: reference, creator_platforms: platforms }, { apiKey: this.lender.apiKey });
    assert.equal(response.status, 201, `${response.method} ${response.url}: ${response.text}`);
    return response.json as Verification;
  }

  async getVerification(id: string): Promise<Verification> {
    const response = await this.request('GET', `${CREATE_PATH}/${id}`);
    assert.equal(response.status, 200, `${response.method} ${response.url}: ${response.text}`);
    return response.json as Verification;
  }

  /** Polls the status endpoint until a terminal state; fails after the sandbox delay + 10 s. */
  async untilTerminal(id: string): Promise<Verification> {
    const deadline = Date.now() + outcomeTimeoutMs(this.target);
    for (;;) {
      const resource = await this.getVerification(id);
      if ((TERMINAL_STATES as readonly string[]).includes(resource.status)) return resource;
      if (Date.now() >= deadline) assert.fail(`${id} is still ${resource.status} after ${outcomeTimeoutMs(this.target)} ms`);
      await sleep(pollIntervalMs(this.target));
    }
  }
}

/** How long a delivery takes at most to reach its attempt number `attempt` (1-based) and be logged. */
export function attemptWaitMs(target: Target, attempt: number): number {
  const schedule = target.webhooks.retryScheduleSeconds;
  const offset = schedule[Math.min(attempt, schedule.length) - 1] ?? 0;
  return offset * 1000 + target.webhooks.timeoutMs * attempt + DELIVERY_GRACE_MS;
}

export const finished = (delivery: Delivery) => delivery.status !== 'pending';

// ---------------------------------------------------------------- can the deployment reach the receiver?

/** The synthetic creator the probe makes: completed at creation, so its event is sent at once (section 2.6). */
const PROBE_CREATOR = 'demo-yt-nano';

/**
 * Capability probe, run once per target before its tests: registers an endpoint at a fresh path of
 * the suite's receiver, makes a synthetic verification (completed at once, so `verification.completed`
 * is sent at once) and waits, with the deadline of a first attempt, for it to arrive. Resolves with
 * why the webhook tests cannot run (to be their skip reason), or undefined when the delivery arrived.
 * On a production key nothing can be made to send an event on demand, so nothing is probed.
 */
export async function probeWebhooks(target: Target): Promise<{ unavailable: string | undefined; summary: string }> {
  if (target.mode !== 'sandbox') return { unavailable: undefined, summary: 'not probed (a production key cannot provoke an event)' };
  const lender = await webhookLender(target);
  const receiver = await webhookReceiver(target);
  const path = receiver.newPath('probe');
  const url = receiver.urlFor(path);
  const as = { apiKey: lender.apiKey };
  const registered = await target.api.post(WEBHOOKS_PATH, { ...as, json: { url, events: ['verification.completed'] } });
  if (registered.status !== 201) {
    const reason = `the deployment refused to register the suite's receiver ${url} (${registered.status} ${registered.text.slice(0, 300)})`;
    return { unavailable: reason, summary: `unreachable: ${reason}` };
  }
  const webhook = registered.json as WebhookResource & { secret: string };
  receiver.expectSignedWith(path, webhook.secret);
  const timeoutMs = attemptWaitMs(target, 1);
  try {
    const created = await createVerification(target, { obligor_reference: PROBE_CREATOR, creator_platforms: ['youtube'] }, { apiKey: lender.apiKey });
    assert.equal(created.status, 201, `${created.method} ${created.url}: ${created.text}`);
    const started = Date.now();
    try {
      await receiver.waitForCount(path, 1, timeoutMs);
      return { unavailable: undefined, summary: `reachable (receiver ${receiver.origin}; the probe's event arrived in ${Date.now() - started} ms)` };
    } catch {
      // What the deployment says about its attempt, if it logged one: the reason a QA engineer needs.
      const log = await target.api.get(`${WEBHOOKS_PATH}/${encodeURIComponent(webhook.webhook_id)}/deliveries`, as);
      const attempts = log.status === 200 ? (log.json as DeliveryList).data.flatMap((d) => d.attempts) : [];
      const said = [...new Set(attempts.map((a) => a.error ?? `HTTP ${a.status_code}`))].join('; ') || 'no attempt logged';
      const reason =
        `no webhook reached the suite's receiver ${url} within ${timeoutMs} ms of a synthetic verification (the deployment's attempts: ${said}); ` +
        "the deployment must reach --receiver-host and trust --ca-dir's ca.pem (NODE_EXTRA_CA_CERTS)";
      return { unavailable: reason, summary: `unreachable: ${reason}` };
    }
  } finally {
    await target.api.request('DELETE', `${WEBHOOKS_PATH}/${encodeURIComponent(webhook.webhook_id)}`, as);
  }
}
