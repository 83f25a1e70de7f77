import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';
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

// ---------------------------------------------------------------- endpoints that are never delivered to

/**
 * A URL the deployment registers but the suite never expects a delivery at: a public address
 * literal, which the target guard (D16) accepts without a DNS lookup (the suite must not depend on
 * outside DNS, and a name under example.com would not resolve) and which registration does not
 * connect to. Tests that use one delete the endpoint before they end and subscribe it to
 * `QUIET_EVENTS` unless the events are what they check.
 */
export function placeholderUrl(label: string): string {
  return `https://8.8.8.8/civ-conformance/${encodeURIComponent(label)}-${randomBytes(6).toString('hex')}`;
}

/**
 * Events only a lender's own request sends (attaching an overlay, cancelling), never a timer or a
 * creator: an endpoint subscribed to nothing else receives nothing while no test makes those requests.
 */
export const QUIET_EVENTS: readonly string[] = ['tape.updated', 'verification.cancelled'];

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

  /** Whether the deployment's deliveries reach the suite's receiver (see requireWebhooks). */
  get canReceive(): boolean {
    return this.receiverOrUndefined !== undefined;
  }

  /**
   * Where a test that registers an endpoint but needs no delivery points it: a fresh path of the
   * receiver when the deployment reaches it, otherwise `placeholderUrl`, so that registration,
   * listing, deletion and their refusals are tested on every deployment.
   */
  registrationUrl(label: string): string {
    return this.receiverOrUndefined ? this.receiverOrUndefined.urlFor(this.receiverOrUndefined.newPath(label)) : placeholderUrl(label);
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

/** The skip reason of every test that needs a delivery at the receiver when the deployment refuses private targets and the receiver is on one. */
export const PRIVATE_RECEIVER_REFUSED =
  "webhooks cannot reach the suite's receiver: private targets refused by this deployment; give --receiver-host a public name the deployment can reach";

/**
 * What a deployment with WEBHOOK_ALLOW_PRIVATE_TARGETS off refuses (D16) among the addresses the
 * suite's receiver could listen on: loopback, private, CGNAT, link-local, unspecified.
 */
const PRIVATE_ADDRESSES = (() => {
  const list = new BlockList();
  for (const [network, prefix] of [
    ['0.0.0.0', 8],
    ['10.0.0.0', 8],
    ['100.64.0.0', 10],
    ['127.0.0.0', 8],
    ['169.254.0.0', 16],
    ['172.16.0.0', 12],
    ['192.168.0.0', 16],
  ] as const)
    list.addSubnet(network, prefix, 'ipv4');
  for (const [network, prefix] of [
    ['::', 128],
    ['::1', 128],
    ['fc00::', 7],
    ['fe80::', 10],
  ] as const)
    list.addSubnet(network, prefix, 'ipv6');
  return list;
})();

const isPrivateAddress = (address: string) => {
  const family = isIP(address);
  if (family === 0) return false;
  // An IPv4-mapped IPv6 address is refused or admitted as the IPv4 address it stands for.
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  if (mapped) return PRIVATE_ADDRESSES.check(mapped, 'ipv4');
  return PRIVATE_ADDRESSES.check(address, family === 4 ? 'ipv4' : 'ipv6');
};

/**
 * Whether the receiver's host is one a deployment refusing private targets refuses: a private
 * address literal, a local name (localhost, a single label), or a name the suite's own resolver
 * only resolves to private addresses. A name that does not resolve here is left to the deployment.
 */
async function receiverHostIsPrivate(host: string): Promise<boolean> {
  const name = host
    .replace(/^\[(.*)\]$/, '$1')
    .toLowerCase()
    .replace(/\.$/, '');
  if (isIP(name)) return isPrivateAddress(name);
  if (name === 'localhost' || name.endsWith('.localhost') || !name.includes('.')) return true;
  try {
    const addresses = await lookup(name, { all: true });
    return addresses.length > 0 && addresses.every((entry) => isPrivateAddress(entry.address));
  } catch {
    return false;
  }
}

type ProbeResult = { unavailable: string | undefined; summary: string };

/**
 * Capability probe, run once per target before its tests. A deployment known to refuse private
 * targets is not asked when the receiver is on one. Otherwise the probe registers an endpoint at a
 * fresh path of the suite's receiver (a refusal is the reason) and has the deployment send to it:
 * on a sandbox key a synthetic verification (completed at once, so `verification.completed` is
 * sent at once), on a production key a test event (POST /webhooks/{id}/test, P25). It waits, with
 * the deadline of a first attempt, for the delivery to arrive. Resolves with why the webhook tests
 * cannot run (their skip reason), or undefined when the delivery arrived.
 */
export async function probeWebhooks(target: Target): Promise<ProbeResult> {
  const { privateTargetsAllowed, receiverHost } = target.webhooks;
  if (privateTargetsAllowed === false && (await receiverHostIsPrivate(receiverHost))) {
    return { unavailable: PRIVATE_RECEIVER_REFUSED, summary: `unreachable: ${PRIVATE_RECEIVER_REFUSED} (receiver host ${receiverHost})` };
  }
  const lender = await webhookLender(target);
  const receiver = await webhookReceiver(target);
  const path = receiver.newPath('probe');
  const url = receiver.urlFor(path);
  const as = { apiKey: lender.apiKey };
  const events = target.mode === 'sandbox' ? ['verification.completed'] : [...QUIET_EVENTS];
  const registered = await target.api.post(WEBHOOKS_PATH, { ...as, json: { url, events } });
  if (registered.status !== 201) {
    const reason = `the deployment refused to register the suite's receiver ${url} (${registered.status} ${registered.text.slice(0, 300)})`;
    return { unavailable: reason, summary: `unreachable: ${reason}` };
  }
  const webhook = registered.json as WebhookResource & { secret: string };
  const webhookPath = `${WEBHOOKS_PATH}/${encodeURIComponent(webhook.webhook_id)}`;
  receiver.expectSignedWith(path, webhook.secret);
  const timeoutMs = attemptWaitMs(target, 1);
  const unreachable = (said: string): ProbeResult => {
    const reason =
      `no webhook reached the suite's receiver ${url} within ${timeoutMs} ms of ${target.mode === 'sandbox' ? 'a synthetic verification' : 'a test event'} ` +
      `(the deployment's attempts: ${said}); the deployment must reach --receiver-host and trust --ca-dir's ca.pem (NODE_EXTRA_CA_CERTS)`;
    return { unavailable: reason, summary: `unreachable: ${reason}` };
  };
  try {
    const started = Date.now();
    if (target.mode !== 'sandbox') {
      const sent = await target.api.post(`${webhookPath}/test`, as);
      if (sent.status !== 200) return unreachable(`POST ${webhookPath}/test answered ${sent.status} ${sent.text.slice(0, 300)}`);
      const result = sent.json as { succeeded: boolean; status_code: number | null; error: string | null };
      if (!result.succeeded || receiver.requestsTo(path).length === 0) return unreachable(result.error ?? `HTTP ${result.status_code}`);
      return { unavailable: undefined, summary: `reachable (receiver ${receiver.origin}; the probe's test event arrived in ${Date.now() - started} ms)` };
    }
    const created = await createVerification(target, { obligor_reference: PROBE_CREATOR, creator_platforms: ['youtube'] }, { apiKey: lender.apiKey });
    assert.equal(created.status, 201, `${created.method} ${created.url}: ${created.text}`);
    try {
      await receiver.waitForCount(path, 1, timeoutMs);
      return { unavailable: undefined, summary: `reachable (receiver ${receiver.origin}; the probe's event arrived in ${Date.now() - started} ms)` };
    } catch {
      // What the deployment says about its attempt, if it logged one: the reason a QA engineer needs.
      const log = await target.api.get(`${webhookPath}/deliveries`, as);
      const attempts = log.status === 200 ? (log.json as DeliveryList).data.flatMap((d) => d.attempts) : [];
      return unreachable([...new Set(attempts.map((a) => a.error ?? `HTTP ${a.status_code}`))].join('; ') || 'no attempt logged');
    }
  } finally {
    await target.api.request('DELETE', webhookPath, as);
  }
}
