import assert from 'node:assert/strict';
import { Contract, loadContract, type ObservedResponse } from './contract.ts';

/**
 * The checker itself, on made-up responses: every conformance test leans on assertConforms, so it
 * must be shown to reject what the contract forbids, not only to accept what the service sends.
 */

const JSON_TYPE = 'application/json; charset=utf-8';

const rateLimitHeaders = { 'x-ratelimit-limit': '60', 'x-ratelimit-remaining': '59', 'x-ratelimit-reset': '1795212060' };

/** A response as the service would send it: every /api/v1 response carries the rate-limit headers (D8). */
function observed(status: number, body: unknown, headers: Record<string, string> = rateLimitHeaders): ObservedResponse {
  const text = body === undefined ? '' : typeof body === 'string' ? body : JSON.stringify(body);
  let json: unknown;
  try {
    json = text === '' ? undefined : JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status, headers: new Headers({ 'content-type': JSON_TYPE, ...headers }), text, json };
}

const notFound = { error: 'not_found', message: 'No verification vrf_unknown.' };
describe('conformance checker (assertConforms) [suite self-test]', () => {
  let contract: Contract;
  before(async function () {
    this.timeout(20_000);
    contract = await loadContract();
  });

  it('accepts a documented error of a documented operation', () => {
    contract.assertConforms('GET', '/api/v1/verifications/vrf_unknown', observed(404, notFound));
  });

  it('rejects a status the operation does not document', () => {
    assert.throws(
      () => contract.assertConforms('GET', '/api/v1/verifications/vrf_unknown', observed(418, notFound)),
      /status 418 is not documented for getVerification/,
    );
  });

  it('rejects an error code outside the catalogue', () => {
    assert.throws(
      () => contract.assertConforms('GET', '/api/v1/verifications/vrf_unknown', observed(404, { error: 'missing', message: 'x' })),
      /does not match/,
    );
  });

  it('rejects an error without a message', () => {
    assert.throws(() => contract.assertConforms('GET', '/api/v1/verifications/vrf_unknown', observed(404, { error: 'not_found' })), /does not match/);
  });

  it('rejects an HTML body', () => {
    const html = observed(404, '<!doctype html><title>Not found</title>', { 'content-type': 'text/html' });
    assert.throws(() => contract.assertConforms('GET', '/no-such-page', html), /a body must be JSON/);
  });

  it('rejects a stack trace in an error message', () => {
    const leaky = { error: 'internal_error', message: 'boom\n    at handler (/srv/app/src/verifications/http/getVerification.ts:12:5)' };
    assert.throws(() => contract.assertConforms('GET', '/api/v1/verifications/vrf_x', observed(500, leaky)), /stack frame/);
  });

  it('rejects a source path in an error message', () => {
    const leaky = { error: 'internal_error', message: 'Cannot read properties of undefined in /srv/app/src/service.ts' };
    assert.throws(() => contract.assertConforms('GET', '/api/v1/verifications/vrf_x', observed(500, leaky)), /source path/);
  });

  it('does not mistake a timestamp in a message for a stack frame', () => {
    const dated = { error: 'not_found', message: 'Key revoked at 2026-11-21T22:22:55.756Z.' };
    contract.assertConforms('GET', '/api/v1/verifications/vrf_x', observed(404, dated));
  });

  it('rejects a missing required header (Retry-After on 503)', () => {
    const unavailable = { error: 'service_unavailable', message: 'later' };
    assert.throws(() => contract.assertConforms('POST', '/api/v1/verifications', observed(503, unavailable)), /missing required header Retry-After/);
    contract.assertConforms('POST', '/api/v1/verifications', observed(503, unavailable, { ...rateLimitHeaders, 'retry-after': '2' }));
  });

  it('rejects a header value outside its schema (Retry-After of 0)', () => {
    const unavailable = { error: 'service_unavailable', message: 'later' };
    assert.throws(
      () => contract.assertConforms('POST', '/api/v1/verifications', observed(503, unavailable, { ...rateLimitHeaders, 'retry-after': '0' })),
      /Retry-After/,
    );
  });

  it('rejects a success body that breaks its schema', () => {
    assert.throws(() => contract.assertConforms('GET', '/healthz', observed(200, { status: 'fine' })), /does not match/);
    contract.assertConforms('GET', '/healthz', observed(200, { status: 'ok' }));
  });

  it('rejects a body on a response the contract documents without one (204)', () => {
    assert.throws(() => contract.assertConforms('DELETE', '/api/v1/webhooks/whk_3Jd8sL2pQ9vX1mZa', observed(204, { deleted: true })), /no body/);
    contract.assertConforms('DELETE', '/api/v1/webhooks/whk_3Jd8sL2pQ9vX1mZa', observed(204, undefined, { ...rateLimitHeaders, 'content-type': '' }));
  });

  it('treats an unknown route as not_found, and nothing else', () => {
    contract.assertConforms('GET', '/no-such-page', observed(404, { error: 'not_found', message: 'No such route.' }));
    assert.throws(() => contract.assertConforms('GET', '/no-such-page', observed(200, { status: 'ok' })), /no operation matches/);
    assert.throws(() => contract.assertConforms('GET', '/no-such-page', observed(404, { error: 'forbidden', message: 'x' })), /not_found/);
  });

  it('treats a wrong method on a known path as an unknown route', () => {
    assert.throws(
      () => contract.assertConforms('DELETE', '/api/v1/verifications/vrf_x', observed(405, { error: 'not_found', message: 'x' })),
      /no operation matches/,
    );
  });

  it('allows 401 for an unknown route under /api/v1 only (authentication precedes routing)', () => {
    const unauthorized = { error: 'unauthorized', message: 'Missing Authorization header.' };
    contract.assertConforms('GET', '/api/v1/no-such-resource', observed(401, unauthorized));
    assert.throws(() => contract.assertConforms('GET', '/no-such-page', observed(401, unauthorized)), /no operation matches/);
  });

  it('prefers a literal path over a template', () => {
    assert.equal(contract.findOperation('GET', '/api/v1/webhooks')?.operationId, 'listWebhooks');
    assert.equal(contract.findOperation('GET', '/api/v1/verifications/vrf_x/tape')?.operationId, 'getVerificationTape');
    assert.equal(contract.findOperation('GET', '/api/v1/verifications/'), undefined);
  });

  it('validates bodies through bundled JSON Schema files (refs inside the tape schemas resolve)', () => {
    // Signed as a tape response must be, so that the body is what the checker refuses.
    const signed = { ...rateLimitHeaders, 'x-tape-signature': 'eyJhbGciOiJFUzI1NiJ9..c2lnbmF0dXJl' };
    assert.throws(
      () => contract.assertConforms('GET', '/api/v1/verifications/vrf_x/tape', observed(200, { schema_version: '2.0.0' }, signed)),
      /does not match/,
    );
  });

  it('checks X-RateLimit-* on /api/v1 responses, and not on the probes', async () => {
    assert.throws(
      () => contract.assertConforms('GET', '/api/v1/verifications/vrf_x', observed(404, notFound, {})),
      /missing required header X-RateLimit-Limit/,
    );
    contract.assertConforms('GET', '/api/v1/verifications/vrf_x', observed(404, notFound, rateLimitHeaders));
    assert.throws(
      () => contract.assertConforms('GET', '/api/v1/verifications/vrf_x', observed(404, notFound, { ...rateLimitHeaders, 'x-ratelimit-remaining': '-1' })),
      /X-RateLimit-Remaining/,
    );
    contract.assertConforms('GET', '/healthz', observed(200, { status: 'ok' }));
  });
});
