import assert from 'node:assert/strict';
import { specPath } from './locate.ts';
import { bundle, createConfig } from '@redocly/openapi-core';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

/**
 * The contract as the suite reads it: spec/openapi.yaml bundled here and compiled with the suite's
 * own Ajv. Nothing comes from src/ or generated/, so a bug shared by the service's own validator and
 * its generated document cannot hide itself.
 */

const SPEC_PATH = specPath('openapi.yaml');
const SELF = 'https://conformance.invalid/openapi.json';
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;
const RATE_LIMIT_HEADERS = ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset'];

/**
 * Routes the service publishes outside the contract's paths: the contract itself and its docs page.
 * Anything else not in `paths` must be answered as an unknown route.
 */
const PUBLISHED_DOCUMENTS: Array<{ path: string; contentType: RegExp }> = [
  { path: '/openapi.json', contentType: /^application\/json\b/i },
  { path: '/docs', contentType: /^text\/html\b/i },
];

/** A parsed JSON object; a member is narrowed, or asserted to be the part of the contract it is, where it is read. */
export type JsonObject = { [key: string]: unknown };

type Method = (typeof METHODS)[number];

export interface ParameterObject {
  $ref?: string;
  in: string;
  name: string;
  required?: boolean;
}

export interface OperationObject extends JsonObject {
  operationId: string;
  parameters?: ParameterObject[];
  responses?: Record<string, JsonObject>;
  security?: unknown;
}

export type PathItem = { [method in Method]?: OperationObject } & JsonObject;

/** The parts of the bundled OpenAPI document that the suite reads. */
export interface OpenApiDocument extends JsonObject {
  openapi: string;
  info: { version: string };
  paths?: Record<string, PathItem>;
  components?: { schemas?: Record<string, JsonObject>; parameters?: Record<string, ParameterObject>; [section: string]: unknown };
  security?: unknown;
}

/** What the suite saw on the wire; `text` is the raw body, `json` its parse (undefined if none). */
export interface ObservedResponse {
  status: number;
  headers: Headers;
  text: string;
  json: unknown;
}

export interface MatchedOperation {
  operationId: string;
  method: string;
  pathTemplate: string;
  operation: OperationObject;
}

const JSON_CONTENT_TYPE = /^application\/([a-z0-9.+-]+\+)?json\b/i;
// A Node stack frame ("at fn (/srv/app/x.ts:1:2)", "at node:internal/...:1:2") or a source file path
// in an error message tells an attacker how the service is built.
const STACK_FRAME = /\bat\s+(?:\S+\s+\()?(?:file:\/\/|\/|[A-Za-z]:\\|node:)[^\s)]*:\d+:\d+/;
const SOURCE_PATH = /(?:^|[\s("'])(?:\/[\w.@-]+){2,}\.(?:ts|js|mjs|cjs)\b|node_modules/;

const escapePointer = (segment: string) => segment.replace(/~/g, '~0').replace(/\//g, '~1');

/** Bundled schemas keep the `$id`/`$schema` of their source files; inside the document they would re-base refs. */
function stripSchemaIdentities(node: unknown): void {
  if (Array.isArray(node)) return node.forEach(stripSchemaIdentities);
  if (node === null || typeof node !== 'object') return;
  const record = node as JsonObject;
  delete record.$id;
  delete record.$schema;
  Object.values(record).forEach(stripSchemaIdentities);
}

function templateToRegExp(template: string): RegExp {
  const pattern = template
    .split(/(\{[^}]+\})/)
    .map((part) => (part.startsWith('{') ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('');
  return new RegExp(`^${pattern}$`);
}

/** Header values are strings; integer-typed headers are compared as numbers. */
function headerValue(raw: string, schema: JsonObject | undefined): unknown {
  const type = schema?.type;
  if ((type === 'integer' || type === 'number') && /^-?\d+(\.\d+)?$/.test(raw.trim())) return Number(raw);
  return raw;
}

function describeResponse(method: string, url: string, response: ObservedResponse): string {
  const body = response.text.length > 600 ? `${response.text.slice(0, 600)}…` : response.text;
  return `${method.toUpperCase()} ${url} → ${response.status} ${response.headers.get('content-type') ?? '(no content-type)'} ${body}`;
}

export class Contract {
  readonly document: OpenApiDocument;
  private readonly ajv: Ajv2020;
  private readonly routes: Array<MatchedOperation & { regex: RegExp; literalLength: number }>;
  private readonly validators = new Map<string, ValidateFunction>();

  constructor(document: OpenApiDocument) {
    this.document = document;
    this.ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats.default(this.ajv);
    // OpenAPI's own formats; Ajv would otherwise reject a schema that uses them.
    for (const format of ['int32', 'int64', 'float', 'double', 'byte', 'binary', 'password']) this.ajv.addFormat(format, true);
    const forAjv = structuredClone(document);
    stripSchemaIdentities(forAjv.components);
    this.ajv.addSchema(forAjv, SELF);

    this.routes = Object.entries(document.paths ?? {}).flatMap(([pathTemplate, item]) =>
      METHODS.flatMap((method) => {
        const operation = item[method];
        if (!operation) return [];
        return [
          {
            operationId: operation.operationId,
            method,
            pathTemplate,
            operation,
            regex: templateToRegExp(pathTemplate),
            literalLength: pathTemplate.replace(/\{[^}]+\}/g, '').length,
          },
        ];
      }),
    );
    // A literal segment beats a template parameter, as in every router.
    this.routes.sort((a, b) => b.literalLength - a.literalLength);
  }

  findOperation(method: string, pathname: string): MatchedOperation | undefined {
    const wanted = method.toLowerCase();
    return this.routes.find((route) => route.method === wanted && route.regex.test(pathname));
  }

  /** Follows `$ref`s inside the document, returning the target and its JSON pointer. */
  resolve(node: JsonObject, pointer: string): { node: JsonObject; pointer: string } {
    let current = node;
    let at = pointer;
    for (let hops = 0; typeof current?.$ref === 'string'; hops += 1) {
      assert.ok(hops < 20, `$ref cycle at ${at}`);
      const ref: string = current.$ref;
      assert.ok(ref.startsWith('#/'), `the bundled contract has an external $ref ${ref} at ${at}`);
      at = ref.slice(1);
      current = at
        .split('/')
        .slice(1)
        .reduce<unknown>(
          (parent, segment) => (parent as JsonObject | undefined)?.[segment.replace(/~1/g, '/').replace(/~0/g, '~')],
          this.document,
        ) as JsonObject;
      assert.ok(current !== undefined, `unresolvable $ref ${ref}`);
    }
    return { node: current, pointer: at };
  }

  private validator(pointer: string): ValidateFunction {
    let validate = this.validators.get(pointer);
    if (!validate) {
      validate = this.ajv.getSchema(`${SELF}#${pointer}`);
      assert.ok(validate, `no schema at ${pointer}`);
      this.validators.set(pointer, validate);
    }
    return validate;
  }

  /** Validates `value` against the schema at `pointer` in the contract; the message lists every violation. */
  assertSchema(pointer: string, value: unknown, context: string): void {
    const validate = this.validator(pointer);
    if (!validate(value)) {
      const problems = (validate.errors ?? []).map((e) => `${e.instancePath || '(root)'} ${e.message} ${JSON.stringify(e.params)}`);
      assert.fail(`${context}\n  does not match ${pointer}:\n  - ${problems.join('\n  - ')}`);
    }
  }

  /**
   * The one check every response goes through: a documented status for the matched operation (or,
   * for an unknown route, the documented not_found/unauthorized error), JSON for any body, a body
   * valid against the documented schema, the documented required headers, and no leaked internals.
   */
  assertConforms(method: string, url: string, response: ObservedResponse): void {
    const pathname = new URL(url, 'http://conformance.invalid').pathname;
    const context = describeResponse(method, url, response);
    const hasBody = response.text.length > 0;
    const contentType = response.headers.get('content-type') ?? '';

    const published = PUBLISHED_DOCUMENTS.find((doc) => doc.path === pathname);
    if (published && method.toUpperCase() === 'GET' && response.status === 200) {
      assert.match(contentType, published.contentType, `${context}\n  wrong Content-Type for ${pathname}`);
      return;
    }

    if (hasBody) assert.match(contentType, JSON_CONTENT_TYPE, `${context}\n  a body must be JSON`);
    if (response.status >= 400) this.assertNoInternals(response, context);

    // HEAD is GET without the content (RFC 9110, 9.3.2): the GET's statuses and headers, no body.
    const head = method.toUpperCase() === 'HEAD';
    if (head) assert.equal(response.text, '', `${context}\n  a HEAD response has no body`);
    const operation = this.findOperation(method, pathname) ?? (head ? this.findOperation('GET', pathname) : undefined);
    const underApi = pathname === '/api/v1' || pathname.startsWith('/api/v1/');
    let responsePointer: string;
    if (operation) {
      const base = `/paths/${escapePointer(operation.pathTemplate)}/${operation.method}/responses`;
      const status = String(response.status);
      const key = operation.operation.responses?.[status] ? status : operation.operation.responses?.default ? 'default' : undefined;
      assert.ok(key, `${context}\n  status ${status} is not documented for ${operation.operationId}`);
      responsePointer = `${base}/${key}`;
    } else {
      // Authentication runs before routing, so an unknown /api/v1 route without a valid key is a 401.
      const allowed: Record<number, string> = underApi ? { 404: 'NotFound', 401: 'Unauthorized' } : { 404: 'NotFound' };
      const name = allowed[response.status];
      assert.ok(name, `${context}\n  no operation matches ${method.toUpperCase()} ${pathname}; expected ${Object.keys(allowed).join(' or ')}`);
      responsePointer = `/components/responses/${name}`;
      const expectedCode = name === 'NotFound' ? 'not_found' : 'unauthorized';
      if (!head) assert.equal((response.json as JsonObject | undefined)?.error, expectedCode, `${context}\n  unknown route must answer ${expectedCode}`);
    }

    const { node: documented, pointer } = this.resolve({ $ref: `#${responsePointer}` }, responsePointer);
    this.assertHeaders(documented, pointer, response, context, underApi);
    if (head) return;

    const media = documented.content as JsonObject | undefined;
    if (!media || Object.keys(media).length === 0) {
      assert.equal(response.text, '', `${context}\n  the contract documents no body for this response`);
      return;
    }
    assert.ok(hasBody, `${context}\n  the contract documents a body for this response`);
    const mediaType = Object.keys(media).find((type) => JSON_CONTENT_TYPE.test(type));
    assert.ok(mediaType, `${context}\n  the contract documents no JSON body at ${pointer}`);
    assert.notEqual(response.json, undefined, `${context}\n  body is not parseable JSON`);
    this.assertSchema(`${pointer}/content/${escapePointer(mediaType)}/schema`, response.json, context);
  }

  private assertHeaders(documented: JsonObject, pointer: string, response: ObservedResponse, context: string, underApi: boolean): void {
    for (const [name, declared] of Object.entries((documented.headers ?? {}) as Record<string, JsonObject>)) {
      const lower = name.toLowerCase();
      const { node: header, pointer: headerPointer } = this.resolve(declared, `${pointer}/headers/${escapePointer(name)}`);
      // The probes share the error responses of the API but are not rate limited (D8 covers /api/v1).
      if (RATE_LIMIT_HEADERS.includes(lower) && !underApi) continue;
      const raw = response.headers.get(lower);
      if (raw === null) {
        assert.ok(!header.required, `${context}\n  missing required header ${name}`);
        continue;
      }
      if (header.schema) this.assertSchema(`${headerPointer}/schema`, headerValue(raw, header.schema as JsonObject), `${context}\n  header ${name}: ${raw}`);
    }
  }

  private assertNoInternals(response: ObservedResponse, context: string): void {
    assert.doesNotMatch(response.text, STACK_FRAME, `${context}\n  error body leaks a stack frame`);
    assert.doesNotMatch(response.text, SOURCE_PATH, `${context}\n  error body leaks a source path`);
  }
}

let loaded: Promise<Contract> | undefined;

/** The contract, bundled once per process. */
export function loadContract(): Promise<Contract> {
  loaded ??= (async () => {
    const result = await bundle({ ref: SPEC_PATH, config: await createConfig({}) });
    const errors = result.problems.filter((problem) => problem.severity === 'error');
    assert.equal(errors.length, 0, `spec/openapi.yaml does not bundle: ${errors.map((p) => p.message).join('; ')}`);
    return new Contract(result.bundle.parsed as OpenApiDocument);
  })();
  return loaded;
}
