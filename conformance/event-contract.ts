import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { specPath } from './locate.ts';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import YAML from 'yaml';
import { loadContract, type JsonObject } from './contract.ts';
import { verifySignature, type ReceivedRequest } from './webhook-receiver.ts';

/**
 * The events as the contract writes them, read by the suite itself: the payload schemas of
 * spec/schemas/events (with spec/schemas/tape, which they $ref), the message headers of
 * spec/asyncapi.yaml, and the `emits` column of the state table (`x-transitions` in
 * spec/openapi.yaml). Nothing comes from src/ or generated/.
 */

const SCHEMAS_DIR = `${specPath('schemas')}/`;
const ASYNCAPI_PATH = specPath('asyncapi.yaml');
/** Where the schema files' own `$id`s live; `./schemas/...` in the AsyncAPI document means this. */
const SCHEMA_BASE = 'https://schemas.creator-income.example/';
const ASYNCAPI_ID = 'https://conformance.invalid/asyncapi.json';

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** D15: what the service sends. Verifiers accept bare hex too; the service itself sends this form. */
export const SENT_SIGNATURE = /^sha256=[0-9a-f]{64}$/;
const JSON_CONTENT_TYPE = /^application\/json\b/i;

/** A signed example of an AsyncAPI message: its headers, and its payload as a `$ref` to an example of the event schema. */
export interface MessageExample {
  headers: Record<string, string>;
  payload: { $ref: string };
}

/** The parts of spec/asyncapi.yaml that the suite reads. */
export interface AsyncApiDocument extends JsonObject {
  components?: { messages?: Record<string, AsyncApiMessage>; [section: string]: unknown };
}

export interface AsyncApiMessage extends JsonObject {
  name?: string;
  examples?: MessageExample[];
}

export interface EventPayload {
  event: string;
  event_id: string;
  verification_id: string;
  obligor_reference: string;
  occurred_at: string;
  reason?: string;
  schema_version?: string;
  data: Record<string, unknown>;
  [field: string]: unknown;
}

/** A received request that passed `assertEventRequest`, with what the suite read from it. */
export interface ReceivedEvent {
  request: ReceivedRequest;
  payload: EventPayload;
  deliveryId: string;
}

// ---------------------------------------------------------------- the state table

export interface TransitionRow {
  from: string | null;
  trigger: string;
  to: string;
  emits: string | null;
  /** A move to `failed`: the reasons it may set; its event's `reason` names the move. */
  reasons?: string[];
}

export async function transitionRows(): Promise<TransitionRow[]> {
  const { document } = await loadContract();
  const rows = document.components?.schemas?.VerificationStatus?.['x-transitions'] as TransitionRow[] | undefined;
  assert.ok(Array.isArray(rows) && rows.length > 0, 'the contract lists the moves in components.schemas.VerificationStatus.x-transitions');
  return rows;
}

/**
 * The rows a verification goes through when it shows `states` (from its creation response on):
 * the creation row into the first state, then one row per change. Each step must be exactly one row.
 */
export function movesAlong(rows: TransitionRow[], states: readonly string[]): TransitionRow[] {
  return states.map((to, index) => {
    const from = index === 0 ? null : states[index - 1]!;
    const matching = rows.filter((row) => row.from === from && row.to === to);
    assert.equal(matching.length, 1, `x-transitions has ${matching.length} rows ${from ?? '(creation)'} → ${to}; expected exactly one`);
    return matching[0]!;
  });
}

// ---------------------------------------------------------------- schemas

/** `$ref: ./schemas/x/y.json` (relative to spec/asyncapi.yaml) → the `$id` of that file. */
function absoluteRefs(node: unknown): void {
  if (Array.isArray(node)) return node.forEach(absoluteRefs);
  if (node === null || typeof node !== 'object') return;
  const record = node as JsonObject;
  if (typeof record.$ref === 'string' && record.$ref.startsWith('./schemas/')) record.$ref = SCHEMA_BASE + record.$ref.slice('./schemas/'.length);
  Object.values(record).forEach(absoluteRefs);
}

export class EventContract {
  readonly eventNames: readonly string[];
  readonly asyncapi: AsyncApiDocument;
  private readonly ajv: Ajv2020;
  private readonly validators = new Map<string, ValidateFunction>();

  private constructor() {
    this.ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats.default(this.ajv);
    for (const folder of ['tape', 'events']) {
      for (const file of readdirSync(`${SCHEMAS_DIR}${folder}`).filter((name) => name.endsWith('.json'))) {
        this.ajv.addSchema(JSON.parse(readFileSync(`${SCHEMAS_DIR}${folder}/${file}`, 'utf8')) as JsonObject);
      }
    }
    this.asyncapi = YAML.parse(readFileSync(ASYNCAPI_PATH, 'utf8')) as AsyncApiDocument;
    // Only the components: the document's own keywords (`id`, `info`, ...) are not JSON Schema.
    const forAjv = { components: structuredClone(this.asyncapi.components ?? {}) };
    absoluteRefs(forAjv);
    this.ajv.addSchema(forAjv, ASYNCAPI_ID);
    const common = JSON.parse(readFileSync(`${SCHEMAS_DIR}events/common.json`, 'utf8')) as { $defs: { EventName: { enum: string[] } } };
    this.eventNames = common.$defs.EventName.enum;
  }

  private static loaded: EventContract | undefined;

  static load(): EventContract {
    EventContract.loaded ??= new EventContract();
    return EventContract.loaded;
  }

  /** spec/schemas/events/<event>.json as written. */
  eventSchema(event: string): JsonObject {
    return JSON.parse(readFileSync(`${SCHEMAS_DIR}events/${event}.json`, 'utf8')) as JsonObject;
  }

  /** The AsyncAPI message whose `name` is `event`. */
  messageKey(event: string): string {
    const entry = Object.entries(this.asyncapi.components?.messages ?? {}).find(([, message]) => message.name === event);
    assert.ok(entry, `spec/asyncapi.yaml has no message named ${event}`);
    return entry[0];
  }

  private validator(id: string): ValidateFunction {
    let validate = this.validators.get(id);
    if (!validate) {
      validate = this.ajv.getSchema(id);
      assert.ok(validate, `no schema ${id}`);
      this.validators.set(id, validate);
    }
    return validate;
  }

  private check(id: string, value: unknown, context: string): void {
    const validate = this.validator(id);
    if (!validate(value)) {
      const problems = (validate.errors ?? []).map((e) => `${e.instancePath || '(root)'} ${e.message} ${JSON.stringify(e.params)}`);
      assert.fail(`${context}\n  does not match ${id}:\n  - ${problems.join('\n  - ')}`);
    }
  }

  /** The payload against spec/schemas/events/<event>.json. */
  assertPayload(event: string, payload: unknown, context: string): void {
    assert.ok(this.eventNames.includes(event), `${context}\n  ${event} is not an event of common.json#/$defs/EventName`);
    this.check(`${SCHEMA_BASE}events/${event}.json`, payload, context);
  }

  /** The three delivery headers against the AsyncAPI message's `headers` schema. */
  assertHeaders(event: string, headers: Record<string, string | undefined>, context: string): void {
    const pointer = `/components/messages/${this.messageKey(event)}/headers`;
    const named = Object.fromEntries(Object.entries(headers).filter(([, value]) => value !== undefined));
    this.check(`${ASYNCAPI_ID}#${pointer}`, named, context);
  }
}

// ---------------------------------------------------------------- one received request

const single = (value: string | string[] | undefined): string | undefined => (Array.isArray(value) ? value.join(', ') : value);

export function describeRequest(request: ReceivedRequest): string {
  const body = request.rawBody.toString('utf8');
  return `${request.method} ${request.path} [${single(request.headers['x-service-event'])} ${single(request.headers['x-service-delivery'])}] ${body.length > 400 ? `${body.slice(0, 400)}…` : body}`;
}

/**
 * Everything section 6 and D13/D15 say about one webhook request, on its own: POST, JSON, signed
 * (`sha256=<hex>` of the raw body with the endpoint secret), `X-Service-Event` equal to the body's
 * `event` and one the endpoint subscribed to, `X-Service-Delivery` a UUID, headers valid against the
 * AsyncAPI message, body valid against its event schema, and `data` repeating the flat fields with
 * the state the event leads to (from x-transitions).
 */
export function assertEventRequest(request: ReceivedRequest, endpoint: { events: readonly string[]; secret: string }, rows: TransitionRow[]): ReceivedEvent {
  const contract = EventContract.load();
  const context = describeRequest(request);
  assert.equal(request.method, 'POST', `${context}\n  deliveries are POSTs`);
  assert.match(single(request.headers['content-type']) ?? '', JSON_CONTENT_TYPE, `${context}\n  the body is JSON`);

  const signature = single(request.headers['x-service-signature']);
  assert.match(signature ?? '(none)', SENT_SIGNATURE, `${context}\n  X-Service-Signature is sha256=<lowercase hex> (D15)`);
  assert.ok(verifySignature(request.rawBody, signature, endpoint.secret), `${context}\n  X-Service-Signature does not verify with the endpoint secret`);
  assert.notEqual(request.signature, 'invalid', `${context}\n  the receiver refused the signature`);

  const event = single(request.headers['x-service-event']);
  const deliveryId = single(request.headers['x-service-delivery']);
  assert.ok(event, `${context}\n  X-Service-Event is missing`);
  assert.match(deliveryId ?? '(none)', UUID, `${context}\n  X-Service-Delivery is a UUID`);
  contract.assertHeaders(event, { 'X-Service-Signature': signature, 'X-Service-Event': event, 'X-Service-Delivery': deliveryId }, `${context}\n  headers`);

  let payload: EventPayload;
  try {
    payload = JSON.parse(request.rawBody.toString('utf8')) as EventPayload;
  } catch {
    assert.fail(`${context}\n  the body is not JSON`);
  }
  assert.equal(payload.event, event, `${context}\n  X-Service-Event equals the body's event`);
  assert.ok(endpoint.events.includes(event), `${context}\n  the endpoint did not subscribe to ${event} (it has ${endpoint.events.join(', ')})`);
  contract.assertPayload(event, payload, `${context}\n  body`);

  // D13: `data` repeats the verification fields of the flat form, and names the state the event leads to.
  const leadsTo = rows.find((row) => row.emits === event)?.to ?? (event === 'tape.updated' ? 'completed' : undefined);
  for (const [field, value] of Object.entries(payload.data)) {
    if (field === 'status') assert.equal(value, leadsTo, `${context}\n  data.status is the state ${event} leads to`);
    else assert.deepEqual(value, payload[field], `${context}\n  data.${field} equals the flat ${field} (D13)`);
  }
  // tape.updated's `reason` says why the tape changed, not why the verification is in its state: `data` does not repeat it.
  const repeated =
    event === 'tape.updated'
      ? ['verification_id', 'obligor_reference', 'schema_version']
      : ['verification_id', 'obligor_reference', 'reason', 'schema_version'];
  for (const field of repeated) {
    if (field in payload) assert.deepEqual(payload.data[field], payload[field], `${context}\n  data repeats ${field} (D13)`);
  }
  return { request, payload, deliveryId: deliveryId! };
}
