import { randomUUID } from 'node:crypto';
import type { components } from '../../generated/api.ts';
import type { EventBody } from '../platform/events/outbox.ts';
import { decryptSecret, encryptSecret } from '../platform/crypto.ts';
import { DomainError } from '../platform/domain-error.ts';
import { newId, randomBase62 } from '../platform/ids.ts';
import { checkWebhookUrl } from './target-guard.ts';
import type { WebhookEndpoint, WebhooksRepository } from './webhooks-repository.ts';

type WebhookResource = components['schemas']['Webhook'];
type CreateWebhookRequest = components['schemas']['WebhookCreateRequest'];
type UpdateWebhookRequest = components['schemas']['WebhookUpdateRequest'];

/** Enough for a lender's environments and their receivers; more suggests a client registering in a loop. */
export const MAX_ENDPOINTS_PER_LENDER = 20;

export interface EndpointDeps {
  webhooks: WebhooksRepository;
  encryptionKey: Buffer;
  allowPrivateTargets: boolean;
  now: () => Date;
  /** Name resolution for the target check; tests inject one, production uses the system resolver. */
  resolve?: (host: string) => Promise<string[]>;
}

/** The overlap a rotation gives the old secret unless the request says otherwise (P25). */
export const DEFAULT_ROTATION_OVERLAP_SECONDS = 86_400;

/** The previous secret's end, shown while it still signs. */
const overlapEnd = (endpoint: WebhookEndpoint, now: Date) =>
  endpoint.previousSecretCiphertext && endpoint.previousSecretExpiresAt && endpoint.previousSecretExpiresAt > now.toISOString()
    ? endpoint.previousSecretExpiresAt
    : null;

const toResource = (endpoint: WebhookEndpoint, now: Date): WebhookResource => ({
  webhook_id: endpoint.id,
  url: endpoint.url,
  events: endpoint.events as WebhookResource['events'],
  enabled: endpoint.disabledAt === null,
  created_at: endpoint.createdAt,
  previous_secret_expires_at: overlapEnd(endpoint, now),
});

/** POST /webhooks (4.5, D16): an https URL on public addresses only; the secret is shown once. */
export async function registerWebhook(deps: EndpointDeps, lenderId: string, request: CreateWebhookRequest) {
  const url = await checkedUrl(deps, request.url);
  const full = () => new DomainError('refused', `A lender can register at most ${MAX_ENDPOINTS_PER_LENDER} webhook endpoints; delete one first.`);
  // Checked first so a full account costs no encryption; the insert counts again, atomically.
  if ((await deps.webhooks.countEndpoints(lenderId)) >= MAX_ENDPOINTS_PER_LENDER) throw full();
  const secret = `whsec_${randomBase62(40)}`;
  const endpoint: WebhookEndpoint = {
    id: newId('whk'),
    lenderId,
    url,
    events: request.events,
    secretCiphertext: encryptSecret(deps.encryptionKey, secret),
    previousSecretCiphertext: null,
    previousSecretExpiresAt: null,
    createdAt: deps.now().toISOString(),
    disabledAt: null,
  };
  if (!(await deps.webhooks.insertEndpointWithin(endpoint, MAX_ENDPOINTS_PER_LENDER))) throw full();
  return { ...toResource(endpoint, deps.now()), secret };
}

/** The URL as stored, if the target guard (D16) admits it; refused as at registration otherwise. */
async function checkedUrl(deps: EndpointDeps, url: string): Promise<string> {
  const check = await checkWebhookUrl(url, { allowPrivateTargets: deps.allowPrivateTargets, resolve: deps.resolve });
  if (!check.ok) throw new DomainError('invalid', check.reason, 'body.url');
  return check.url.toString();
}

/**
 * PATCH /webhooks/{id} (P29): a new url (checked as at registration), events or state; the id, the
 * secret and the delivery log stay. Disabling holds the pending deliveries and makes none for the
 * events recorded meanwhile; enabling sends the held ones, so the sender is woken.
 */
export async function updateWebhook(deps: EndpointDeps & { wakeDeliveries: () => void }, lenderId: string, webhookId: string, request: UpdateWebhookRequest) {
  const url = request.url === undefined ? undefined : await checkedUrl(deps, request.url);
  const now = deps.now();
  const endpoint = await deps.webhooks.updateEndpoint(lenderId, webhookId, { url, events: request.events, enabled: request.enabled }, now.toISOString());
  if (!endpoint) throw new DomainError('not_found', `No webhook endpoint ${webhookId}.`);
  if (request.enabled === true) deps.wakeDeliveries();
  return toResource(endpoint, now);
}

/** GET /webhooks: a page of the lender's endpoints, oldest first; the cursor must be one of them. */
export async function listWebhooks(deps: EndpointDeps, lenderId: string, query: { limit?: number; starting_after?: string }) {
  let after: { createdAt: string; id: string } | undefined;
  if (query.starting_after !== undefined) {
    const cursor = await deps.webhooks.findEndpoint(lenderId, query.starting_after);
    if (!cursor) throw new DomainError('invalid', `starting_after: no webhook endpoint ${query.starting_after}`, 'query.starting_after');
    after = { createdAt: cursor.createdAt, id: cursor.id };
  }
  const limit = Math.min(Math.max(query.limit ?? 20, 1), 100);
  const { endpoints, hasMore } = await deps.webhooks.listEndpoints(lenderId, limit, after);
  const now = deps.now();
  return { data: endpoints.map((endpoint) => toResource(endpoint, now)), has_more: hasMore };
}

export async function getWebhook(deps: EndpointDeps, lenderId: string, webhookId: string) {
  return toResource(await requireEndpoint(deps, lenderId, webhookId), deps.now());
}

/**
 * POST /webhooks/{id}/rotate-secret (section 5.7, P25): a new secret, shown once; the current one
 * keeps signing beside it for `overlapSeconds`. A secret still overlapping from an earlier rotation
 * is dropped: at most two sign at a time.
 */
export async function rotateWebhookSecret(deps: EndpointDeps, lenderId: string, webhookId: string, overlapSeconds = DEFAULT_ROTATION_OVERLAP_SECONDS) {
  const endpoint = await requireEndpoint(deps, lenderId, webhookId);
  const now = deps.now();
  const secret = `whsec_${randomBase62(40)}`;
  const rotated: WebhookEndpoint = {
    ...endpoint,
    secretCiphertext: encryptSecret(deps.encryptionKey, secret),
    previousSecretCiphertext: overlapSeconds > 0 ? endpoint.secretCiphertext : null,
    previousSecretExpiresAt: overlapSeconds > 0 ? new Date(now.getTime() + overlapSeconds * 1000).toISOString() : null,
  };
  if (!(await deps.webhooks.rotateSecret(lenderId, webhookId, rotated))) throw new DomainError('not_found', `No webhook endpoint ${webhookId}.`);
  return { ...toResource(rotated, now), secret };
}

/**
 * The secrets that sign a delivery sent at `at`: the current one, then a rotated-out one still in its
 * overlap. `open` decrypts a stored secret (the sender keeps the ones it opened: a cipher context per
 * delivery was 2 % of its main thread under `bench:webhooks`).
 */
export function signingSecrets(
  open: (secretCiphertext: string) => string,
  endpoint: Pick<WebhookEndpoint, 'secretCiphertext' | 'previousSecretCiphertext' | 'previousSecretExpiresAt'>,
  at: Date,
): string[] {
  const secrets = [open(endpoint.secretCiphertext)];
  if (endpoint.previousSecretCiphertext && endpoint.previousSecretExpiresAt && endpoint.previousSecretExpiresAt > at.toISOString()) {
    secrets.push(open(endpoint.previousSecretCiphertext));
  }
  return secrets;
}

/**
 * The endpoint's current secret, for the dashboard's admins (section 5.7: "visible in the lender
 * dashboard"). The API shows a secret only when it is made; a browser session asks again here.
 */
export async function revealWebhookSecret(
  deps: EndpointDeps,
  lenderId: string,
  webhookId: string,
): Promise<{ secret: string; previous_secret_expires_at: string | null }> {
  const endpoint = await requireEndpoint(deps, lenderId, webhookId);
  return { secret: decryptSecret(deps.encryptionKey, endpoint.secretCiphertext), previous_secret_expires_at: overlapEnd(endpoint, deps.now()) };
}

export async function removeWebhook(deps: EndpointDeps, lenderId: string, webhookId: string): Promise<void> {
  if (!(await deps.webhooks.deleteEndpoint(lenderId, webhookId, deps.now().toISOString()))) {
    throw new DomainError('not_found', `No webhook endpoint ${webhookId}.`);
  }
}

export async function requireEndpoint(deps: Pick<EndpointDeps, 'webhooks'>, lenderId: string, webhookId: string): Promise<WebhookEndpoint> {
  const endpoint = await deps.webhooks.findEndpoint(lenderId, webhookId);
  if (!endpoint) throw new DomainError('not_found', `No webhook endpoint ${webhookId}.`);
  return endpoint;
}

/** One signed POST of an event body to an endpoint, as the delivery worker sends it. */
export type PostToEndpoint = (
  endpoint: WebhookEndpoint,
  body: string,
  eventName: string,
  deliveryId: string,
  at: Date,
) => Promise<{ statusCode: number | null; durationMs: number; error: string | null; responseSnippet?: string | null }>;

/**
 * POST /webhooks/{id}/test (P25): one signed `webhook.test` to the endpoint now, whatever it
 * subscribed to, sent exactly as deliveries are; a single attempt, outside the delivery log, whose
 * outcome is the answer.
 */
export async function sendTestEvent(deps: EndpointDeps & { post: PostToEndpoint }, lenderId: string, webhookId: string) {
  const endpoint = await requireEndpoint(deps, lenderId, webhookId);
  const now = deps.now();
  const eventId = newId('evt');
  const deliveryId = randomUUID();
  const event: EventBody<'webhook.test'> = {
    event: 'webhook.test',
    event_id: eventId,
    webhook_id: endpoint.id,
    occurred_at: now.toISOString(),
    data: { webhook_id: endpoint.id },
  };
  const { statusCode, durationMs, error } = await deps.post(endpoint, JSON.stringify(event), 'webhook.test', deliveryId, now);
  return {
    event_id: eventId,
    delivery_id: deliveryId,
    succeeded: statusCode !== null && statusCode >= 200 && statusCode < 300,
    status_code: statusCode,
    duration_ms: durationMs,
    error,
  };
}
