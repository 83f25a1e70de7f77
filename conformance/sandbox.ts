import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { specPath } from './locate.ts';
import type { ApiResponse, KeyName, RequestOptions, Target } from './harness.ts';

/**
 * Verifications as a lender makes and follows them: create (always with a fresh Idempotency-Key
 * unless a test is about idempotency), then poll the status endpoint. Every response still goes
 * through the API client, so every poll is checked against the contract too.
 */

export const CREATE_PATH = '/api/v1/verifications';
export const TERMINAL_STATES = ['completed', 'failed', 'expired', 'cancelled'] as const;
export const SCHEMA_VERSIONS = ['1.0.0', '1.1.0', '1.2.0', '2.0.0'] as const;
export type SchemaVersion = (typeof SCHEMA_VERSIONS)[number];
/** Section 8: the consent session lasts 7 days. */
export const CONSENT_SESSION_MS = 7 * 24 * 60 * 60 * 1000;
/** How much longer than the sandbox delay a `test-` outcome may take to show (the brief of the suite: delay + 10 s). */
export const OUTCOME_GRACE_MS = 10_000;

/** The verification resource of D2, as the contract's `Verification` schema has it. */
export interface Verification {
  verification_id: string;
  status: 'pending_consent' | 'processing' | 'completed' | 'failed' | 'expired' | 'cancelled';
  obligor_reference: string;
  creator_platforms: Array<'youtube' | 'stripe'>;
  lender_name: string;
  product_type: string;
  declared_monthly_obligations_eur?: number;
  consent_url: string;
  expires_at: string;
  created_at: string;
  updated_at: string;
  completed_at: string | null;
  failure_reason: string | null;
  platform_connections: Array<{ platform: string; status: string }>;
  schema_version: SchemaVersion | null;
  /** Present when the creation gave one. */
  return_url?: string;
  /** Present when the creation asked for ongoing monitoring. */
  monitoring?: Monitoring;
}

/** A verification's ongoing monitoring, as the contract's `Monitoring` schema has it. */
export interface Monitoring {
  months: number;
  state: 'pending' | 'active' | 'ended';
  end_reason: string | null;
  starts_at: string | null;
  ends_at: string | null;
  last_refresh_at: string | null;
  next_refresh_at: string | null;
  refresh_requested_at: string | null;
  failed_refreshes: number;
}

/** A block of a tape: the members the suite reads by name, and the rest, compared as they are. */
type Block<Read> = Read & { [field: string]: unknown };

/**
 * A risk tape as the suite reads it off the wire or from spec/examples/tapes: the fields it reads by
 * name, typed as the contract's RiskTape has them; the rest are compared whole, not read.
 */
export interface Tape {
  verification_id: string;
  obligor_reference: string;
  status: string;
  schema_version: SchemaVersion;
  tape_generated_at: string;
  as_of_date: string;
  obligor: Block<{ reference: string; connected_platforms: string[] }>;
  eligibility: Block<{ tier: string; product_type: string }>;
  metrics: Record<string, unknown>;
  cashflow_summary: Record<string, unknown>;
  risk_profile: Record<string, unknown>;
  data_quality: Block<{ nd_codes: string[]; nd_code_summary: Array<{ code: string; field: string }> }>;
  platform_connections: Array<Block<{ platform: string; connected_at?: string | null }>>;
  affordability?: Block<{ declared_monthly_obligations: number }>;
  [field: string]: unknown;
}

export interface CreateBody {
  monitoring?: { months: number };
  obligor_reference: string;
  creator_platforms: Array<'youtube' | 'stripe'>;
  lender_name?: string;
  product_type?: string;
  declared_monthly_obligations_eur?: number;
  return_url?: string;
}

/** Section 2.6: the nine synthetic creators and the tier the description gives each. */
export const SYNTHETIC_CREATORS = [
  { reference: 'demo_prime_multi', tier: 'prime' },
  { reference: 'single_platform_95', tier: 'standard' },
  { reference: 'volatile_subprime', tier: 'subprime' },
  { reference: 'short_history_5mo', tier: 'subprime' },
  { reference: 'seasonal_spikes', tier: 'standard' },
  { reference: 'demo_subprime_multi', tier: 'subprime' },
  { reference: 'demo-yt-mid', tier: 'standard' },
  { reference: 'demo-stripe-micro', tier: 'standard' },
  { reference: 'demo-yt-nano', tier: 'subprime' },
] as const;

const GOLDEN_DIR = `${specPath('examples', 'tapes')}/`;

/** spec/examples/tapes/<reference>.json: the tape the sandbox must reproduce for a synthetic creator. */
export function goldenTape(reference: string): Tape {
  return JSON.parse(readFileSync(`${GOLDEN_DIR}${reference}.json`, 'utf8')) as Tape;
}

/** `<prefix><random>`: `test-` references must not collide across runs or targets. */
export function randomReference(prefix: string): string {
  return `${prefix}${randomBytes(8).toString('hex')}`;
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** POST /api/v1/verifications with a fresh UUID v4 Idempotency-Key (or the given one). */
export function createVerification(
  target: Target,
  body: CreateBody | Record<string, unknown>,
  options: { key?: KeyName; apiKey?: string; idempotencyKey?: string; headers?: Record<string, string>; unpaced?: boolean } = {},
): Promise<ApiResponse> {
  const request: RequestOptions = {
    json: body,
    headers: { 'idempotency-key': options.idempotencyKey ?? randomUUID(), ...options.headers },
    unpaced: options.unpaced ?? false,
  };
  if (options.key !== undefined) request.key = options.key;
  if (options.apiKey !== undefined) request.apiKey = options.apiKey;
  return target.api.post(CREATE_PATH, request);
}

/** Creates and insists on 201, returning the resource. */
export async function created(target: Target, body: CreateBody, options: { key?: KeyName } = {}): Promise<Verification> {
  const response = await createVerification(target, body, options);
  assert.equal(response.status, 201, `${response.method} ${response.url}: ${response.text}`);
  return response.json as Verification;
}

export async function getVerification(target: Target, id: string, key: KeyName = 'lender'): Promise<Verification> {
  const response = await target.api.get(`${CREATE_PATH}/${id}`, { key });
  assert.equal(response.status, 200, `${response.method} ${response.url}: ${response.text}`);
  return response.json as Verification;
}

/** POST /api/v1/verifications/{id}/cancel. */
export function cancelVerification(target: Target, id: string, key: KeyName = 'lender'): Promise<ApiResponse> {
  return target.api.post(`${CREATE_PATH}/${id}/cancel`, { key });
}

export function getTape(target: Target, id: string, schemaVersion?: string, key: KeyName = 'lender'): Promise<ApiResponse> {
  const query = schemaVersion === undefined ? '' : `?schema_version=${encodeURIComponent(schemaVersion)}`;
  return target.api.get(`${CREATE_PATH}/${id}/tape${query}`, { key });
}

export async function tapeOf(target: Target, id: string, schemaVersion?: string): Promise<Tape> {
  const response = await getTape(target, id, schemaVersion);
  assert.equal(response.status, 200, `${response.method} ${response.url}: ${response.text}`);
  return response.json as Tape;
}

/**
 * Polling for tests: often enough to see a state that lasts half the sandbox delay, far more often
 * than the 5 s a client should (section 8), but a tenth of that delay at most.
 */
export function pollIntervalMs(target: Target): number {
  return Math.min(500, Math.max(50, Math.round(target.sandboxDelayMs / 10)));
}

/** How long a `test-` verification may take to reach its outcome. */
export function outcomeTimeoutMs(target: Target): number {
  return target.sandboxDelayMs + OUTCOME_GRACE_MS;
}

export interface Observation {
  /** Milliseconds since the poll started. */
  at: number;
  resource: Verification;
}

/**
 * Polls GET /api/v1/verifications/{id} until `done` holds (default: a terminal state) or, with
 * `forMs`, for that long; fails after the sandbox delay + 10 s. Returns every observation.
 */
export async function follow(
  target: Target,
  id: string,
  options: {
    done?: (resource: Verification) => boolean;
    forMs?: number;
    key?: KeyName;
    /** Called with the first observation of each state, before polling on. */
    onNewState?: (resource: Verification) => Promise<void>;
  } = {},
): Promise<Observation[]> {
  const done = options.done ?? ((resource: Verification) => (TERMINAL_STATES as readonly string[]).includes(resource.status));
  const started = Date.now();
  const deadline = started + (options.forMs ?? outcomeTimeoutMs(target));
  const observations: Observation[] = [];
  for (;;) {
    const resource = await getVerification(target, id, options.key);
    const previous = observations.at(-1)?.resource.status;
    observations.push({ at: Date.now() - started, resource });
    if (options.onNewState && resource.status !== previous) await options.onNewState(resource);
    if (options.forMs === undefined && done(resource)) return observations;
    if (Date.now() >= deadline) {
      if (options.forMs !== undefined) return observations;
      assert.fail(`${id} did not reach the expected state within ${outcomeTimeoutMs(target)} ms; states seen: ${statesOf(observations).join(' → ')}`);
    }
    await sleep(pollIntervalMs(target));
  }
}

/** The distinct states in the order they were seen. */
export function statesOf(observations: Observation[]): string[] {
  return observations.map((o) => o.resource.status).filter((status, index, all) => index === 0 || all[index - 1] !== status);
}

/** The tape with the fields that legitimately differ from a golden tape set to placeholders. */
export function withoutRunSpecificFields(tape: Tape): Tape {
  const copy = structuredClone(tape);
  copy.verification_id = '<verification_id>';
  copy.tape_generated_at = '<tape_generated_at>';
  copy.as_of_date = '<as_of_date>';
  for (const connection of copy.platform_connections ?? []) if ('connected_at' in connection) connection.connected_at = '<connected_at>';
  return copy;
}

/** An error body with `id` replaced, so answers about different ids can be compared. */
export function withIdMasked(body: unknown, id: string): unknown {
  return JSON.parse(JSON.stringify(body).split(id).join('<id>'));
}

/**
 * D2, for one observation of a verification: the fields that exist only in some states, the 7-day
 * consent session, and an unguessable consent URL. `original` is the resource as created.
 */
export function assertResourceInvariants(resource: Verification, original: Verification = resource): void {
  const where = `${resource.verification_id} (${resource.status})`;
  for (const field of [
    'verification_id',
    'obligor_reference',
    'creator_platforms',
    'lender_name',
    'product_type',
    'consent_url',
    'created_at',
    'expires_at',
  ] as const) {
    assert.deepEqual(resource[field], original[field], `${where}: ${field} never changes`);
  }
  assert.equal(Date.parse(resource.expires_at) - Date.parse(resource.created_at), CONSENT_SESSION_MS, `${where}: expires_at is created_at + 7 days`);
  assert.ok(Date.parse(resource.updated_at) >= Date.parse(resource.created_at), `${where}: updated_at is not before created_at`);
  assert.equal(
    resource.completed_at !== null,
    resource.status === 'completed',
    `${where}: completed_at is set exactly when completed (${resource.completed_at})`,
  );
  if (resource.completed_at !== null) {
    assert.ok(Date.parse(resource.completed_at) >= Date.parse(resource.created_at), `${where}: completed_at is not before created_at`);
    assert.ok(Date.parse(resource.completed_at) <= Date.parse(resource.updated_at), `${where}: completed_at is not after updated_at`);
  }
  assert.equal(
    resource.failure_reason !== null,
    resource.status === 'failed',
    `${where}: failure_reason is set exactly when failed (${resource.failure_reason})`,
  );
  // A tape exists only once the verification is completed (D5), and new tapes are 2.0.0 (section 2.3).
  assert.equal(resource.schema_version, resource.status === 'completed' ? '2.0.0' : null, `${where}: schema_version only when a tape exists`);
  const consentUrl = new URL(resource.consent_url);
  assert.match(consentUrl.protocol, /^https?:$/, `${where}: consent_url is a web address`);
  const opaque = resource.verification_id.replace(/^vrf_/, '');
  assert.ok(!resource.consent_url.includes(opaque), `${where}: consent_url ${resource.consent_url} must not contain the verification id`);
  assert.deepEqual(
    resource.platform_connections.map((c) => c.platform).sort(),
    [...resource.creator_platforms].sort(),
    `${where}: one connection status per requested platform`,
  );
}
