import assert from 'node:assert/strict';
import { loadContract, type OpenApiDocument, type OperationObject } from './contract.ts';
import { forEachTarget } from './harness.ts';

/** Happy paths available at this stage: the probes, the published contract and its docs page. */

forEachTarget((target) => {
  describe('happy: probes and published documents [op:getHealth 200] [op:getReadiness 200]', () => {
    it('GET /healthz answers 200 {status: ok}', async () => {
      const response = await target.api.get('/healthz', { key: null });
      assert.equal(response.status, 200);
      assert.deepEqual(response.json, { status: 'ok' });
    });

    it('GET /readyz answers 200 with the database reachable', async () => {
      const response = await target.api.get('/readyz', { key: null });
      assert.equal(response.status, 200);
      assert.deepEqual(response.json, { status: 'ready', database: 'reachable' });
    });

    it('HEAD /healthz, /readyz and /.well-known/jwks.json answer as their GET without the body, as load balancers probe [op:getTapeSigningKeys 200]', async () => {
      for (const path of ['/healthz', '/readyz', '/.well-known/jwks.json']) {
        const get = await target.api.get(path, { key: null });
        const head = await target.api.request('HEAD', path, { key: null });
        assert.equal(head.status, 200, `HEAD ${path}`);
        assert.equal(head.text, '', `HEAD ${path} has no body`);
        for (const header of ['content-type', 'content-length', 'cache-control']) {
          assert.equal(head.headers.get(header), get.headers.get(header), `HEAD ${path}: ${header}`);
        }
      }
    });

    it('the probes and the signing keys are not rate limited: no X-RateLimit-* headers, on a 200 or on a refused query [op:getHealth 400 validation_error] [op:getReadiness 400 validation_error] [op:getTapeSigningKeys 400 validation_error]', async () => {
      for (const path of ['/healthz', '/readyz', '/.well-known/jwks.json', '/healthz?verbose=1', '/readyz?verbose=1', '/.well-known/jwks.json?verbose=1']) {
        const response = await target.api.get(path, { key: null });
        assert.equal(response.status, path.includes('?') ? 400 : 200, `${path}: ${response.text}`);
        for (const header of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset']) {
          assert.equal(response.headers.get(header), null, `${path} carries ${header}`);
        }
      }
    });

    it('GET /openapi.json serves the contract of spec/openapi.yaml', async () => {
      const response = await target.api.get('/openapi.json', { key: null });
      assert.equal(response.status, 200);
      const served = response.json as OpenApiDocument;
      const { document } = await loadContract();
      assert.equal(served.openapi, document.openapi);
      assert.equal(served.info?.version, document.info.version);
      // Same operations, with the same parameters, statuses and security, as the spec the suite bundled
      // itself. Component names are left out: they are an artefact of whichever bundler ran.
      const surface = (doc: OpenApiDocument) =>
        Object.fromEntries(
          Object.entries(doc.paths!).flatMap(([path, item]) =>
            Object.entries(item)
              .filter((entry): entry is [string, OperationObject] => typeof entry[1] === 'object' && entry[1] !== null && 'responses' in entry[1])
              .map(([method, operation]) => [
                `${method.toUpperCase()} ${path}`,
                {
                  operationId: operation.operationId,
                  parameters: (operation.parameters ?? []).map((parameter) => {
                    const resolved = parameter.$ref ? doc.components!.parameters![parameter.$ref.split('/').pop()!]! : parameter;
                    return `${resolved.in}:${resolved.name}:${resolved.required === true}`;
                  }),
                  statuses: Object.keys(operation.responses!).sort(),
                  security: operation.security ?? doc.security,
                },
              ]),
          ),
        );
      assert.deepEqual(surface(served), surface(document));
    });

    it('GET /docs answers the HTML docs page', async () => {
      const response = await target.api.get('/docs', { key: null, headers: { accept: 'text/html' } });
      assert.equal(response.status, 200);
      assert.match(response.headers.get('content-type') ?? '', /^text\/html\b/);
      assert.match(response.text, /<html/i);
    });
  });

  describe('rate-limit headers (D8) [header:X-RateLimit-Limit] [header:X-RateLimit-Remaining] [header:X-RateLimit-Reset]', () => {
    it('every /api/v1 response, errors included, carries X-RateLimit-Limit/Remaining/Reset', async () => {
      const responses = [
        await target.api.get('/api/v1/verifications/vrf_unknown'),
        await target.api.get('/api/v1/gdpr/access?obligor_id=x'),
        await target.api.get('/api/v1/no-such-resource'),
      ];
      for (const response of responses) {
        const limit = Number(response.headers.get('x-ratelimit-limit'));
        const remaining = Number(response.headers.get('x-ratelimit-remaining'));
        const reset = Number(response.headers.get('x-ratelimit-reset'));
        const now = Date.now() / 1000;
        assert.ok(Number.isInteger(limit) && limit >= 1, `${response.url}: X-RateLimit-Limit ${limit}`);
        assert.ok(Number.isInteger(remaining) && remaining >= 0 && remaining < limit, `${response.url}: X-RateLimit-Remaining ${remaining}`);
        assert.ok(Number.isInteger(reset) && reset >= Math.floor(now) && reset <= now + 61, `${response.url}: X-RateLimit-Reset ${reset}`);
      }
    });
  });
});
