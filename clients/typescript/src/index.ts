import { randomUUID } from 'node:crypto';
import createFetchClient, { type Client } from 'openapi-fetch';
import type { components, paths } from './api.ts';
import { retryingFetch, type RetryOptions } from './retry.ts';
import { verifyTapeSignature, type TapeKeys } from './signatures.ts';

export type { components, operations, paths } from './api.ts';
export { retryDelayMs, retryingFetch, type RetryOptions } from './retry.ts';
export { verifyTapeSignature, verifyWebhookSignature, type TapeKeys } from './signatures.ts';

export type Verification = components['schemas']['Verification'];
export type Webhook = components['schemas']['Webhook'];
export type RiskTape = components['schemas']['RiskTape'];
export type TapeSummary = components['schemas']['TapeSummary'];

export interface ClientOptions extends RetryOptions {
  /** The deployment, e.g. https://sandbox.creator-income.example (no /api/v1). */
  baseUrl: string;
  apiKey: string;
  /** The fetch to send with (default: the global one). */
  fetch?: (request: Request) => Promise<Response>;
}

/** Creations that take an Idempotency-Key: one is added when the caller gives none, so a retry never creates twice. */
const IDEMPOTENT_CREATIONS = [/^\/api\/v1\/verifications$/, /^\/api\/v1\/verifications\/[^/]+\/overlays$/];

export interface CivClient {
  /** The openapi-fetch client: every operation of the contract, typed (`api.GET('/api/v1/verifications/{verification_id}', ...)`). */
  api: Client<paths>;
  /** POST /api/v1/verifications with an Idempotency-Key (a new UUID unless given; keep it to retry the call yourself later). */
  createVerification(body: components['schemas']['VerificationCreateRequest'], options?: { idempotencyKey?: string }): Promise<Verification>;
  /** Every verification matching `query`, newest first, fetching pages as the loop asks for them. */
  verifications(query?: Omit<NonNullable<paths['/api/v1/verifications']['get']['parameters']['query']>, 'starting_after'>): AsyncIterable<Verification>;
  /** Every webhook endpoint, oldest first, page by page. */
  webhooks(query?: { limit?: number }): AsyncIterable<Webhook>;
  /** Every tape of a verification (ongoing monitoring's history), newest first, page by page. */
  tapes(verificationId: string, query?: { limit?: number }): AsyncIterable<TapeSummary>;
  /** POST .../refresh: a monitored verification's income read again now (202; the tape follows with `tape.updated`). */
  refresh(verificationId: string): Promise<Verification>;
  /** POST .../monitoring/stop: ends the verification's ongoing monitoring (safe to repeat). */
  stopMonitoring(verificationId: string): Promise<Verification>;
  /** The tape with its signature checked over the bytes received (keys default to the deployment's JWK Set). */
  signedTape(
    verificationId: string,
    options?: { schemaVersion?: components['schemas']['TapeSchemaVersion']; tapeId?: string; keys?: TapeKeys },
  ): Promise<{ tape: RiskTape; bytes: Uint8Array; signature: string; kid: string }>;
}

/** Thrown by the helpers when the service answers with an error object. */
export class CivApiError extends Error {
  override name = 'CivApiError';
  constructor(
    readonly status: number,
    readonly body: unknown,
  ) {
    const error = body as { error?: string; message?: string } | undefined;
    super(`${status} ${error?.error ?? ''}: ${error?.message ?? ''}`.trim());
  }
}

export function createClient(options: ClientOptions): CivClient {
  const baseUrl = options.baseUrl.replace(/\/+$/, '');
  const send = retryingFetch(options.fetch ?? ((request) => fetch(request)), options);
  const api = createFetchClient<paths>({ baseUrl, fetch: send, headers: { Authorization: `Bearer ${options.apiKey}` } });
  api.use({
    onRequest({ request }) {
      const path = new URL(request.url).pathname;
      if (request.method === 'POST' && !request.headers.has('Idempotency-Key') && IDEMPOTENT_CREATIONS.some((pattern) => pattern.test(path))) {
        request.headers.set('Idempotency-Key', randomUUID());
      }
      return request;
    },
  });

  async function* pages<T>(fetchPage: (after: string | undefined) => Promise<{ data: T[]; has_more: boolean }>, idOf: (item: T) => string): AsyncIterable<T> {
    let after: string | undefined;
    for (;;) {
      const page = await fetchPage(after);
      yield* page.data;
      const last = page.data.at(-1);
      if (!page.has_more || !last) return;
      after = idOf(last);
    }
  }

  return {
    api,
    async createVerification(body, createOptions = {}) {
      const { data, error, response } = await api.POST('/api/v1/verifications', {
        params: { header: { 'Idempotency-Key': createOptions.idempotencyKey ?? randomUUID() } },
        body,
      });
      if (!data) throw new CivApiError(response.status, error);
      return data;
    },
    verifications(query = {}) {
      return pages(
        async (after) => {
          const { data, error, response } = await api.GET('/api/v1/verifications', {
            params: { query: { ...query, ...(after ? { starting_after: after } : {}) } },
          });
          if (!data) throw new CivApiError(response.status, error);
          return data;
        },
        (v) => v.verification_id,
      );
    },
    webhooks(query = {}) {
      return pages(
        async (after) => {
          const { data, error, response } = await api.GET('/api/v1/webhooks', { params: { query: { ...query, ...(after ? { starting_after: after } : {}) } } });
          if (!data) throw new CivApiError(response.status, error);
          return data;
        },
        (w) => w.webhook_id,
      );
    },
    tapes(verificationId, query = {}) {
      return pages(
        async (after) => {
          const { data, error, response } = await api.GET('/api/v1/verifications/{verification_id}/tapes', {
            params: { path: { verification_id: verificationId }, query: { ...query, ...(after ? { starting_after: after } : {}) } },
          });
          if (!data) throw new CivApiError(response.status, error);
          return data;
        },
        (t) => t.tape_id,
      );
    },
    async refresh(verificationId) {
      const { data, error, response } = await api.POST('/api/v1/verifications/{verification_id}/refresh', {
        params: { path: { verification_id: verificationId } },
      });
      if (!data) throw new CivApiError(response.status, error);
      return data;
    },
    async stopMonitoring(verificationId) {
      const { data, error, response } = await api.POST('/api/v1/verifications/{verification_id}/monitoring/stop', {
        params: { path: { verification_id: verificationId } },
      });
      if (!data) throw new CivApiError(response.status, error);
      return data;
    },
    async signedTape(verificationId, tapeOptions = {}) {
      const { data, error, response } = await api.GET('/api/v1/verifications/{verification_id}/tape', {
        params: {
          path: { verification_id: verificationId },
          query: {
            ...(tapeOptions.schemaVersion ? { schema_version: tapeOptions.schemaVersion } : {}),
            ...(tapeOptions.tapeId ? { tape_id: tapeOptions.tapeId } : {}),
          },
        },
        parseAs: 'arrayBuffer',
      });
      if (!data) throw new CivApiError(response.status, error);
      const bytes = new Uint8Array(data);
      const signature = response.headers.get('x-tape-signature') ?? '';
      const { kid } = await verifyTapeSignature(bytes, signature, tapeOptions.keys ?? new URL(`${baseUrl}/.well-known/jwks.json`));
      return { tape: JSON.parse(new TextDecoder().decode(bytes)) as RiskTape, bytes, signature, kid };
    },
  };
}
