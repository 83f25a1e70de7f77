import type { components } from '../../generated/api.ts';
import { decryptSecret, encryptSecret } from '../platform/crypto.ts';
import { DomainError } from '../platform/domain-error.ts';
import { newId, randomBase62 } from '../platform/ids.ts';
import { checkWebhookUrl } from './target-guard.ts';
import type { WebhookEndpoint, WebhooksRepository } from './webhooks-repository.ts';

type WebhookResource = components['schemas']['Webhook'];
type CreateWebhookRequest = components['schemas']['WebhookCreateRequest'];

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

const toResource = (endpoint: WebhookEndpoint): WebhookResource => ({
  webhook_id: endpoint.id,
  url: endpoint.url,
  events: endpoint.events as WebhookResource['events'],
  created_at: endpoint.createdAt,
});

/** POST /webhooks (4.5, D16): an https URL on public addresses only; the secret is shown once. */
export async function registerWebhook(deps: EndpointDeps, lenderId: string, request: CreateWebhookRequest) {
  const check = await checkWebhookUrl(request.url, { allowPrivateTargets: deps.allowPrivateTargets, resolve: deps.resolve });
  if (!check.ok) {
    throw new DomainError('invalid', check.reason, 'body.url');
  }
  if ((await deps.webhooks.countEndpoints(lenderId)) >= MAX_ENDPOINTS_PER_LENDER) {
    throw new DomainError('refused', `A lender can register at most ${MAX_ENDPOINTS_PER_LENDER} webhook endpoints; delete one first.`);
  }
  const secret = `whsec_${randomBase62(40)}`;
  const endpoint: WebhookEndpoint = {
    id: newId('whk'),
    lenderId,
    url: check.url.toString(),
    events: request.events,
    secretCiphertext: encryptSecret(deps.encryptionKey, secret),
    createdAt: deps.now().toISOString(),
  };
  await deps.webhooks.insertEndpoint(endpoint);
  return { ...toResource(endpoint), secret };
}

export async function listWebhooks(deps: EndpointDeps, lenderId: string) {
  return { data: (await deps.webhooks.listEndpoints(lenderId)).map(toResource) };
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

export function endpointSecret(encryptionKey: Buffer, endpoint: Pick<WebhookEndpoint, 'secretCiphertext'>): string {
  return decryptSecret(encryptionKey, endpoint.secretCiphertext);
}
