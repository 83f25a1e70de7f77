import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import type { OpenApiDocument, OperationObject } from './contract.ts';
import { requireKey, type KeyName, type Target } from './harness.ts';
import { specPath } from './locate.ts';

/** Every operation of the contract, with a request that is right in every way a sweep does not vary. */

/**
 * The contract as written, read synchronously: what a sweep needs of it (paths, their parameters,
 * security and request examples) is all in openapi.yaml itself, its `$ref`s local. Not awaited at
 * the module's top: a module with a top-level await cannot be loaded by `require`, so mocha would
 * load the test files that import it as ES modules and the others as CommonJS, and the suite's
 * harness would run twice over (two clients pacing one key apart, a second self-started service).
 */
const document = parse(readFileSync(specPath('openapi.yaml'), 'utf8')) as OpenApiDocument;

export interface SweptOperation {
  operationId: string;
  method: string;
  /** The path with every parameter filled with a value of the right form. */
  path: string;
  /** The role its key needs; null when it needs no key. */
  role: 'lender' | 'gdpr_admin' | null;
  /** Headers it needs besides the key (Idempotency-Key), so they are not what is wrong. */
  headers: Record<string, string>;
  /** The first example of its JSON request body, when it takes one, so the body is not what is wrong. */
  body: unknown;
}

type RequestBody = { content?: Record<string, { example?: unknown; examples?: Record<string, { value?: unknown }> }> };

const FILL: Record<string, () => string> = {
  verification_id: () => 'vrf_conformanceSweep0000',
  webhook_id: () => 'whk_conformanceSweep0000',
  delivery_id: () => randomUUID(),
};

export function sweptOperations(): SweptOperation[] {
  const operations: SweptOperation[] = [];
  for (const [path, item] of Object.entries(document.paths ?? {})) {
    for (const method of ['get', 'post', 'put', 'patch', 'delete'] as const) {
      const operation: OperationObject | undefined = item[method];
      if (!operation) continue;
      const security = (operation.security ?? document.security) as Array<Record<string, string[]>> | undefined;
      const scopes = security?.[0]?.bearerAuth;
      const parameters = (operation.parameters ?? []).map((parameter) =>
        parameter.$ref ? document.components!.parameters![parameter.$ref.split('/').pop()!]! : parameter,
      );
      const headers: Record<string, string> = {};
      for (const parameter of parameters)
        if (parameter.in === 'header' && parameter.required && /^idempotency-key$/i.test(parameter.name)) headers[parameter.name] = randomUUID();
      operations.push({
        operationId: operation.operationId,
        method: method.toUpperCase(),
        path: path.replace(/\{(\w+)\}/g, (_, name: string) => {
          const fill = FILL[name];
          if (!fill) throw new Error(`operations.test.ts does not know how to fill the path parameter {${name}} of ${operation.operationId}`);
          return fill();
        }),
        role: scopes === undefined ? null : scopes.includes('gdpr_admin') ? 'gdpr_admin' : 'lender',
        headers,
        body: exampleBody(operation.requestBody as RequestBody | undefined),
      });
    }
  }
  return operations;
}

function exampleBody(requestBody: RequestBody | undefined): unknown {
  const media = requestBody?.content?.['application/json'];
  if (!media) return undefined;
  return media.example ?? Object.values(media.examples ?? {})[0]?.value ?? {};
}

/** The suite's key with the role an operation needs. */
export function keyFor(target: Target, context: Mocha.Context, role: 'lender' | 'gdpr_admin'): KeyName {
  const name: KeyName = role === 'gdpr_admin' ? 'gdpr' : 'lender';
  requireKey(context, target, name);
  return name;
}
