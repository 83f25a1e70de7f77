import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import type { operations } from '../../../generated/api.ts';

export type OperationId = keyof operations;

export interface ApiOperation {
  operationId: OperationId;
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  /** OpenAPI path template, e.g. `/api/v1/verifications/{verification_id}`. */
  path: string;
  /** The same path in Express 5 syntax, e.g. `/api/v1/verifications/:verification_id`. */
  expressPath: string;
  /**
   * The request paths that are this operation's: a `{parameter}` is one segment, the rest literal,
   * with no trailing slash and no other case (D7, P8), as Express's strict, case-sensitive routes
   * match; tested against the raw (undecoded) path.
   */
  exactPath: RegExp;
  /** Roles allowed by the operation's bearer security requirement; empty for public operations. */
  roles: string[];
  /** Names of the header parameters, as the spec spells them. */
  headerParameters: string[];
  /** Names of the query parameters whose schema is an integer (page sizes and the like). */
  integerQueryParameters: string[];
  /** The media types of its request body (`application/json`); empty for an operation without one. */
  requestMediaTypes: string[];
  /** The top-level fields of its JSON request body, in the order the spec lists them; empty without one. */
  bodyFields: string[];
}

/** A JSON value, such as a schema in the document. */
export type Json = { [key: string]: Json } | Json[] | string | number | boolean | null;

const BUNDLED_SPEC = new URL('../../../generated/openapi.json', import.meta.url);
const SELF = 'https://openapi.invalid/openapi.json';
const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

/** Each security scheme an operation accepts, with the roles (scopes) it requires: `{ bearerAuth: ['lender'] }`. */
type SecurityRequirement = Record<string, string[]>;

interface ParameterObject {
  $ref?: undefined;
  in: string;
  name: string;
  schema?: Json;
}

/** A parameter defined once under components.parameters. */
interface ParameterReference {
  $ref: string;
}

interface WithContent {
  content?: Record<string, { schema?: Json }>;
}

interface OperationObject {
  operationId: OperationId;
  security?: SecurityRequirement[];
  parameters?: Array<ParameterObject | ParameterReference>;
  requestBody?: WithContent;
  responses?: Record<string, WithContent>;
}

/** The bundled OpenAPI document: what the service reads of it, typed; the rest goes to the validator and the docs page as it is. */
export interface ApiDocument {
  paths: Record<string, { [method in (typeof METHODS)[number]]?: OperationObject }>;
  security?: SecurityRequirement[];
  components?: {
    schemas?: Record<string, Json>;
    parameters?: Record<string, ParameterObject>;
    responses?: Record<string, WithContent>;
    [section: string]: unknown;
  };
  [key: string]: unknown;
}

/** The bundled OpenAPI document (generated from spec/); a fresh copy, since the validator mutates it. */
export function loadApiDocument(): ApiDocument {
  return JSON.parse(readFileSync(BUNDLED_SPEC, 'utf8')) as ApiDocument;
}

/**
 * `doc` with `paths` alone and only the components they reach through `$ref`, directly or through
 * other components, and every security scheme (operations name theirs without a `$ref`). The
 * objects are `doc`'s own, not copies.
 */
export function withPathsAlone(doc: ApiDocument, paths: string[]): ApiDocument {
  const all = (doc.components ?? {}) as Record<string, Record<string, unknown> | undefined>;
  const reached: Record<string, Record<string, unknown>> = all.securitySchemes ? { securitySchemes: all.securitySchemes } : {};
  const walk = (value: unknown): void => {
    if (Array.isArray(value)) return value.forEach(walk);
    if (typeof value !== 'object' || value === null) return;
    for (const [key, child] of Object.entries(value)) {
      if (key !== '$ref' || typeof child !== 'string') {
        walk(child);
        continue;
      }
      const [hash, root, section, name, ...rest] = child.split('/').map((segment) => segment.replace(/~1/g, '/').replace(/~0/g, '~'));
      // Own properties only: a reference to `constructor` or `toString` names no component.
      const named = section !== undefined && name !== undefined && Object.hasOwn(all, section) ? all[section] : undefined;
      const target = named && Object.hasOwn(named, name!) ? named[name!] : undefined;
      if (hash !== '#' || root !== 'components' || rest.length || target === undefined) throw new Error(`${child}: not a component of the document`);
      const kept = (reached[section!] ??= {});
      if (Object.hasOwn(kept, name!)) continue;
      kept[name!] = target;
      walk(target);
    }
  };
  const kept = Object.fromEntries(paths.map((path) => [path, doc.paths[path]!]));
  walk(kept);
  return { ...doc, paths: kept, components: reached };
}

function exactPathOf(path: string): RegExp {
  const segments = path.split('/').map((segment) => (/^\{[^}]+\}$/.test(segment) ? '[^/]+' : segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
  return new RegExp(`^${segments.join('/')}$`);
}

/** The property names of a schema, following a `$ref` into components.schemas. */
function propertyNames(doc: ApiDocument, schema: Json | undefined): string[] {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return [];
  if (typeof schema.$ref === 'string') return propertyNames(doc, doc.components?.schemas?.[schema.$ref.split('/').pop()!]);
  const properties = schema.properties;
  return typeof properties === 'object' && properties !== null && !Array.isArray(properties) ? Object.keys(properties) : [];
}

export function listOperations(doc: ApiDocument): ApiOperation[] {
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    METHODS.flatMap((method) => {
      const operation = item[method];
      if (!operation) return [];
      const security = operation.security ?? doc.security ?? [];
      const parameters = (operation.parameters ?? []).map((p) => (typeof p.$ref === 'string' ? doc.components!.parameters![p.$ref.split('/').pop()!]! : p));
      return [
        {
          operationId: operation.operationId,
          method,
          path,
          expressPath: path.replace(/\{([^}]+)\}/g, ':$1'),
          exactPath: exactPathOf(path),
          roles: security.flatMap((requirement) => requirement.bearerAuth ?? []),
          headerParameters: parameters.filter((p) => p.in === 'header').map((p) => p.name),
          integerQueryParameters: parameters
            .filter((p) => p.in === 'query' && typeof p.schema === 'object' && p.schema !== null && !Array.isArray(p.schema) && p.schema.type === 'integer')
            .map((p) => p.name),
          requestMediaTypes: Object.keys(operation.requestBody?.content ?? {}),
          bodyFields: propertyNames(doc, operation.requestBody?.content?.['application/json']?.schema),
        },
      ];
    }),
  );
}

/**
 * express-openapi-validator compiles schemas lazily, so a schema Ajv refuses would only show up as
 * a 500 on the first request that reaches it. Compiling every schema of the document once at start
 * turns that into a start-up failure.
 */
export function assertSchemasCompile(doc: ApiDocument): void {
  const ajv = new Ajv2020({ strict: false, allErrors: false });
  addFormats.default(ajv);
  for (const format of ['int32', 'int64', 'float', 'double', 'byte', 'binary', 'password']) ajv.addFormat(format, true);
  ajv.addSchema({ ...doc, $id: SELF });
  const problems: string[] = [];
  const compile = (pointer: string) => {
    try {
      ajv.getSchema(`${SELF}#${pointer}`);
    } catch (error) {
      problems.push(`${pointer}: ${(error as Error).message}`);
    }
  };
  const escape = (segment: string) => segment.replace(/~/g, '~0').replace(/\//g, '~1');
  for (const name of Object.keys(doc.components?.schemas ?? {})) compile(`/components/schemas/${escape(name)}`);
  for (const name of Object.keys(doc.components?.parameters ?? {})) compile(`/components/parameters/${escape(name)}/schema`);
  for (const [name, response] of Object.entries(doc.components?.responses ?? {})) {
    for (const type of Object.keys(response.content ?? {})) compile(`/components/responses/${escape(name)}/content/${escape(type)}/schema`);
  }
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const method of METHODS) {
      const operation = item[method];
      if (!operation) continue;
      const base = `/paths/${escape(path)}/${method}`;
      (operation.parameters ?? []).forEach((parameter, i) => {
        if ('schema' in parameter && parameter.schema) compile(`${base}/parameters/${i}/schema`);
      });
      for (const [type, media] of Object.entries(operation.requestBody?.content ?? {})) {
        if (media.schema) compile(`${base}/requestBody/content/${escape(type)}/schema`);
      }
      for (const [status, response] of Object.entries(operation.responses ?? {})) {
        for (const [type, media] of Object.entries(response.content ?? {})) {
          if (media.schema) compile(`${base}/responses/${status}/content/${escape(type)}/schema`);
        }
      }
    }
  }
  if (problems.length > 0) throw new Error(`The OpenAPI document has schemas Ajv refuses:\n${problems.join('\n')}`);
}
