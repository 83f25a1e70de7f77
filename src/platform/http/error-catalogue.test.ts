import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { DomainError, DOMAIN_ERROR_KINDS } from '../domain-error.ts';
import { createLogger } from '../logger.ts';
import { ERROR_CATALOGUE } from './error-catalogue.ts';
import { toApiError } from './error-handler.ts';

// Like Fastify's check that its error codes, docs and types agree: the catalogue in code, the
// ErrorCode enum of the published spec and the table in docs/errors.md must list the same codes
// with the same statuses, or a client generated from the spec and the service disagree.
const root = new URL('../../../', import.meta.url);
const spec = parse(readFileSync(new URL('spec/openapi.yaml', root), 'utf8'));
const docs = readFileSync(new URL('docs/errors.md', root), 'utf8');
const docRows = [...docs.matchAll(/^\| (\d{3}) \| `([a-z_]+)` \|/gm)].map(([, status, code]) => ({ code: code!, status: Number(status) }));

describe('error catalogue', () => {
  const catalogue = Object.entries(ERROR_CATALOGUE).map(([code, { status }]) => ({ code, status }));

  it('lists exactly the codes of the spec ErrorCode enum, in the same order', () => {
    assert.deepEqual(
      catalogue.map((entry) => entry.code),
      spec.components.schemas.ErrorCode.enum,
    );
  });

  it('lists exactly the codes and statuses of docs/errors.md', () => {
    assert.ok(docRows.length > 0, 'docs/errors.md has no error table');
    assert.deepEqual(docRows, catalogue);
  });

  it('documents each error response under the status its code has', () => {
    const responses = spec.components.responses as Record<
      string,
      { content: { 'application/json': { example?: { error: string }; examples?: Record<string, { value: { error: string } }> } } }
    >;
    let checked = 0;
    for (const [path, item] of Object.entries<Record<string, { responses: Record<string, { $ref?: string }> }>>(spec.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        for (const [status, response] of Object.entries(operation.responses)) {
          if (!response.$ref) continue;
          const media = responses[response.$ref.split('/').pop()!]!.content['application/json'];
          const codes = media.example ? [media.example.error] : Object.values(media.examples ?? {}).map((e) => e.value.error);
          for (const code of codes) {
            assert.equal(ERROR_CATALOGUE[code as keyof typeof ERROR_CATALOGUE]?.status, Number(status), `${method} ${path} ${status}: ${code}`);
            checked++;
          }
        }
      }
    }
    assert.ok(checked > 50, `only ${checked} error responses checked`);
  });
});

describe('domain errors', () => {
  const logger = createLogger({ level: 'silent' });

  it('map every kind to a catalogue code, so a use case never needs an HTTP status', () => {
    const mapped = Object.fromEntries(DOMAIN_ERROR_KINDS.map((kind) => [kind, toApiError(new DomainError(kind, 'why'), logger).code]));
    assert.deepEqual(mapped, {
      not_found: 'not_found',
      conflict: 'duplicate_request',
      invalid: 'validation_error',
      refused: 'unprocessable',
      too_soon: 'rate_limited',
    });
    for (const code of Object.values(mapped)) assert.ok(code in ERROR_CATALOGUE);
  });

  it('name the field of an invalid input in the message and the details', () => {
    const error = toApiError(new DomainError('invalid', 'must use https', 'body.url'), logger);
    assert.equal(error.status, 400);
    assert.equal(error.message, 'url: must use https');
    assert.deepEqual(error.options.details, [{ field: 'body.url', issue: 'must use https' }]);
  });
});
