import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { forEachTarget, requireKey, type RequestOptions } from './harness.ts';
import { assertError } from './assertions.ts';

/**
 * Errors: section 7 and D4/D7. The right code from the catalogue for each mistake, always as JSON.
 * (assertConforms, run on every response, already checks the shape, the documented status and that
 * no stack trace or source path leaks.)
 */

const CREATE_PATH = '/api/v1/verifications';
const MAX_BODY_BYTES = 256 * 1024;

/** A request that passes validation; each case below breaks exactly one thing in it. */
const validCreateBody = () => ({ obligor_reference: 'conformance-obligor-0001', creator_platforms: ['youtube'] });

forEachTarget((target) => {
  const createVerification = (options: RequestOptions) =>
    target.api.post(CREATE_PATH, { ...options, headers: { 'idempotency-key': randomUUID(), ...options.headers } });

  describe('errors: not_found (404) [op:unknown route 404 not_found] [op:getVerification 404 not_found]', () => {
    it('answers an unknown verification id', async () => {
      assertError(await target.api.get('/api/v1/verifications/vrf_unknown'), 404, 'not_found');
    });

    it('answers a well-formed random verification id', async () => {
      const id = `vrf_${randomBytes(12).toString('hex')}`;
      assertError(await target.api.get(`/api/v1/verifications/${id}`), 404, 'not_found');
    });

    it('answers another lender the same way for the same unknown id, so existence is not revealed', async function () {
      requireKey(this, target, 'otherLender');
      const id = `vrf_${randomBytes(12).toString('hex')}`;
      const mine = await target.api.get(`/api/v1/verifications/${id}`, { key: 'lender' });
      const theirs = await target.api.get(`/api/v1/verifications/${id}`, { key: 'otherLender' });
      assertError(mine, 404, 'not_found');
      assertError(theirs, 404, 'not_found');
      assert.deepEqual(theirs.json, mine.json);
    });

    it('answers an unknown route under /api/v1', async () => {
      assertError(await target.api.get('/api/v1/no-such-resource'), 404, 'not_found');
    });

    it('answers an unknown route outside /api/v1', async () => {
      assertError(await target.api.get('/no-such-page', { key: null }), 404, 'not_found');
    });

    it('answers an unknown route with JSON even to a client that asks for HTML (D7)', async () => {
      const response = await target.api.get('/no-such-page', { key: null, headers: { accept: 'text/html' } });
      assertError(response, 404, 'not_found');
      assert.doesNotMatch(response.text, /<html|<!doctype/i);
    });

    for (const [method, path] of [
      ['DELETE', '/api/v1/verifications/vrf_unknown'],
      ['PUT', '/api/v1/verifications'],
      ['PATCH', '/api/v1/verifications/vrf_unknown'],
      ['GET', '/api/v1/gdpr/erase'],
      ['POST', '/healthz'],
      // The published documents, including the schema files the AsyncAPI document refers to.
      ['DELETE', '/openapi.json'],
      ['POST', '/docs'],
      ['PUT', '/schemas/events/common.json'],
    ] as const) {
      it(`answers a wrong method on a known route as an unknown route: ${method} ${path} (D7)`, async () => {
        const isApi = path.startsWith('/api/v1/');
        const response = await target.api.request(method, path, { key: isApi ? 'lender' : null });
        assertError(response, 404, 'not_found');
      });
    }
  });

  describe('errors: a documented path with a trailing slash or in other letter case is an unknown route (D7, P8) [op:unknown route 404 not_found]', () => {
    const completedId = async () => {
      const response = await createVerification({ json: { obligor_reference: 'demo_prime_multi', creator_platforms: ['youtube', 'stripe'] } });
      assert.equal(response.status, 201, response.text);
      return (response.json as { verification_id: string }).verification_id;
    };

    it('GET /api/v1/verifications/{id}/ (trailing slash)', async () => {
      assertError(await target.api.get(`/api/v1/verifications/${await completedId()}/`), 404, 'not_found');
    });

    it('GET /api/v1/verifications/{id}/tape/ (trailing slash)', async () => {
      assertError(await target.api.get(`/api/v1/verifications/${await completedId()}/tape/`), 404, 'not_found');
    });

    it('POST /api/v1/verifications/ (trailing slash) creates nothing', async () => {
      const response = await target.api.post('/api/v1/verifications/', { json: validCreateBody(), headers: { 'idempotency-key': randomUUID() } });
      assertError(response, 404, 'not_found');
    });

    it('POST /api/v1/verifications/ (trailing slash) with a bad body or no Idempotency-Key: 404, not a validation error', async () => {
      assertError(await target.api.post('/api/v1/verifications/', { json: { unexpected: true } }), 404, 'not_found');
      assertError(await target.api.post('/api/v1/verifications/', { headers: { 'content-type': 'application/json' }, body: '{"broken":' }), 404, 'not_found');
    });

    it('GET /api/v1/gdpr/access/ (trailing slash) with a lender key: 404, not a role refusal', async () => {
      assertError(await target.api.get('/api/v1/gdpr/access/?obligor_id=x', { key: 'lender' }), 404, 'not_found');
    });

    it('a wrong method on a consent page (DELETE, PUT): the JSON not_found of the catalogue, not an HTML page', async () => {
      for (const method of ['DELETE', 'PUT', 'PATCH']) {
        const response = await target.api.request(method, '/consent/AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcdefg', { key: null });
        assertError(response, 404, 'not_found');
        assert.doesNotMatch(response.text, /<html|<!doctype/i);
      }
    });

    it('GET /healthz/, /readyz/ and /.well-known/jwks.json/ (trailing slash, outside /api/v1)', async () => {
      for (const path of ['/healthz/', '/readyz/', '/.well-known/jwks.json/']) assertError(await target.api.get(path, { key: null }), 404, 'not_found');
    });

    it('GET /API/V1/VERIFICATIONS/{id} (other letter case)', async () => {
      assertError(await target.api.get(`/API/V1/VERIFICATIONS/${await completedId()}`), 404, 'not_found');
    });
  });

  describe('errors: requests the HTTP layer refuses (D7) [op:unknown route 404 not_found]', () => {
    it('answers a request head over the server limit with a JSON error from the catalogue', async () => {
      const response = await target.api.get('/api/v1/verifications/vrf_unknown', { headers: { 'x-padding': 'p'.repeat(20 * 1024) } });
      assertError(response, 400, 'bad_request');
    });
  });

  describe('errors: bad_request vs validation_error on POST /api/v1/verifications (D4) [op:createVerification 400 bad_request] [op:createVerification 400 validation_error] [limit:obligor_reference length]', () => {
    it('lets the unbroken request through validation, so each refusal below is about its one defect', async () => {
      const response = await createVerification({ json: validCreateBody() });
      assert.equal(response.status, 201, response.text);
    });

    it('lets a 100-character obligor_reference through validation (the upper bound)', async () => {
      const response = await createVerification({ json: { ...validCreateBody(), obligor_reference: 'r'.repeat(100) } });
      assert.equal(response.status, 201, response.text);
    });

    it('lets a 1-character obligor_reference through validation (the lower bound)', async () => {
      const response = await createVerification({ json: { ...validCreateBody(), obligor_reference: 'r' } });
      assert.equal(response.status, 201, response.text);
    });

    describe('bad_request', () => {
      it('for malformed JSON', async () => {
        const response = await createVerification({ headers: { 'content-type': 'application/json' }, body: '{"obligor_reference": "x",' });
        assertError(response, 400, 'bad_request');
      });

      it('for a body that is not valid UTF-8, instead of storing U+FFFD in place of the bytes', async () => {
        const json = Buffer.from(JSON.stringify({ ...validCreateBody(), obligor_reference: 'creator-XX' }));
        const bytes = Buffer.concat([json.subarray(0, json.indexOf('XX')), Buffer.from([0xff, 0xfe]), json.subarray(json.indexOf('XX') + 2)]);
        assertError(await createVerification({ headers: { 'content-type': 'application/json' }, body: bytes }), 400, 'bad_request', /UTF-8/);
      });

      it('for a lone UTF-16 surrogate escaped in the JSON', async () => {
        const body = JSON.stringify({ ...validCreateBody(), obligor_reference: 'creator-SURROGATE' }).replace('SURROGATE', '\\ud800');
        assertError(await createVerification({ headers: { 'content-type': 'application/json' }, body }), 400, 'bad_request', /surrogate/);
      });

      it('for a body sent as text/plain', async () => {
        const response = await createVerification({ headers: { 'content-type': 'text/plain' }, body: JSON.stringify(validCreateBody()) });
        assertError(response, 400, 'bad_request');
      });

      it('for an empty body', async () => {
        assertError(await createVerification({ headers: { 'content-type': 'application/json' }, body: '' }), 400, 'bad_request');
      });

      it('for a missing obligor_reference', async () => {
        const { obligor_reference: _omitted, ...body } = validCreateBody();
        assertError(await createVerification({ json: body }), 400, 'bad_request', /obligor_reference/);
      });

      it('for a missing creator_platforms', async () => {
        const { creator_platforms: _omitted, ...body } = validCreateBody();
        assertError(await createVerification({ json: body }), 400, 'bad_request', /creator_platforms/);
      });

      it('for a missing Idempotency-Key header', async () => {
        const response = await target.api.post(CREATE_PATH, { json: validCreateBody() });
        assertError(response, 400, 'bad_request', /idempotency-key/i);
      });

      it('for a body over 256 KiB', async () => {
        const body = JSON.stringify({ ...validCreateBody(), lender_name: 'x'.repeat(MAX_BODY_BYTES) });
        assert.ok(Buffer.byteLength(body) > MAX_BODY_BYTES);
        assertError(await createVerification({ headers: { 'content-type': 'application/json' }, body }), 400, 'bad_request');
      });

      it('but a body just under 256 KiB is parsed and validated (its too-long lender_name is a validation_error)', async () => {
        const padding = MAX_BODY_BYTES - Buffer.byteLength(JSON.stringify({ ...validCreateBody(), lender_name: '' })) - 16;
        const body = JSON.stringify({ ...validCreateBody(), lender_name: 'x'.repeat(padding) });
        assert.ok(Buffer.byteLength(body) < MAX_BODY_BYTES);
        assertError(await createVerification({ headers: { 'content-type': 'application/json' }, body }), 400, 'validation_error', /lender_name/);
      });
    });

    describe('validation_error', () => {
      const cases: Array<[string, Record<string, unknown>, RegExp]> = [
        ['an empty obligor_reference', { obligor_reference: '' }, /obligor_reference/],
        ['a 101-character obligor_reference', { obligor_reference: 'r'.repeat(101) }, /obligor_reference/],
        ['an obligor_reference of the wrong type (a number)', { obligor_reference: 4411 }, /obligor_reference/],
        ['an empty creator_platforms', { creator_platforms: [] }, /creator_platforms/],
        ['patreon in creator_platforms (D3: not a supported platform)', { creator_platforms: ['patreon'] }, /creator_platforms/],
        ['a duplicated platform in creator_platforms', { creator_platforms: ['youtube', 'youtube'] }, /creator_platforms/],
        ['a blank obligor_reference (spaces only)', { obligor_reference: '   ' }, /obligor_reference/],
        ['an email address as obligor_reference (personal data)', { obligor_reference: 'ana.creator@example.com' }, /obligor_reference/],
        ['a phone number as obligor_reference (personal data)', { obligor_reference: '+44 20 7946 0958' }, /obligor_reference/],
        ['an unknown product_type', { product_type: 'mortgage' }, /product_type/],
        ['an unknown body field (the request schema is closed)', { favourite_colour: 'blue' }, /favourite_colour/],
      ];
      it('for a JSON array instead of an object', async () => {
        assertError(await createVerification({ json: [validCreateBody()] }), 400, 'validation_error');
      });

      for (const [what, change, mentions] of cases) {
        it(`for ${what}`, async () => {
          assertError(await createVerification({ json: { ...validCreateBody(), ...change } }), 400, 'validation_error', mentions);
        });
      }

      describe('display spoofing: control and bidirectional characters in text the creator reads', () => {
        /** Each would reverse, hide or disguise what the consent page shows (U+202E turns "Acme" into "emcA"). */
        const spoofs: Array<[string, string]> = [
          ['U+202E right-to-left override', '\u202E'],
          ['U+2066 left-to-right isolate', '\u2066'],
          ['U+200F right-to-left mark', '\u200F'],
          ['U+061C Arabic letter mark', '\u061C'],
          ['U+0085 (C1 next line)', '\u0085'],
          ['U+009B (C1 control sequence introducer)', '\u009B'],
        ];
        /** The verifications of one obligor reference that a later list shows. */
        const listed = async (reference: string) => {
          const response = await target.api.get(`${CREATE_PATH}?obligor_reference=${encodeURIComponent(reference)}`);
          assert.equal(response.status, 200, response.text);
          return (response.json as { data: unknown[] }).data;
        };
        for (const [what, character] of spoofs) {
          it(`an obligor_reference with ${what}: 400 validation_error, and nothing is created`, async () => {
            const reference = `conformance-spoof-${randomBytes(6).toString('hex')}${character}gnp.exe`;
            assertError(
              await createVerification({ json: { ...validCreateBody(), obligor_reference: reference } }),
              400,
              'validation_error',
              /obligor_reference/,
            );
            assert.deepEqual(await listed(reference), []);
          });
        }
        for (const [what, character] of [...spoofs, ['U+0007 (C0 bell)', '\u0007'] as [string, string]]) {
          it(`a lender_name with ${what}: 400 validation_error, and nothing is created`, async () => {
            const reference = `conformance-spoof-${randomBytes(6).toString('hex')}`;
            const body = { ...validCreateBody(), obligor_reference: reference, lender_name: `Acme ${character}latipaC` };
            assertError(await createVerification({ json: body }), 400, 'validation_error', /lender_name/);
            assert.deepEqual(await listed(reference), []);
          });
        }
        it('letters of any script, and punctuation, are still accepted', async () => {
          const reference = `conformance-spoof-${randomBytes(6).toString('hex')}-ü-\u05D0`;
          const response = await createVerification({ json: { ...validCreateBody(), obligor_reference: reference, lender_name: 'Ünal & Søn – شركة' } });
          assert.equal(response.status, 201, response.text);
          assert.equal((await listed(reference)).length, 1);
        });
      });

      it('for an Idempotency-Key that is not a UUID', async () => {
        const response = await createVerification({ json: validCreateBody(), headers: { 'idempotency-key': 'not-a-uuid' } });
        assertError(response, 400, 'validation_error', /idempotency-key/i);
      });

      it('for an Idempotency-Key that is a UUID but not version 4', async () => {
        const version1 = 'c232ab00-9414-11ec-b3c8-9f6bdeced846';
        const response = await createVerification({ json: validCreateBody(), headers: { 'idempotency-key': version1 } });
        assertError(response, 400, 'validation_error', /idempotency-key/i);
      });

      it('for schema_version=9.9.9 on GET /api/v1/verifications/{id}/tape (D5)', async () => {
        const response = await target.api.get('/api/v1/verifications/vrf_unknown/tape?schema_version=9.9.9');
        assertError(response, 400, 'validation_error', /schema_version/);
      });

      it('for an unknown query parameter on GET /api/v1/verifications/{id}', async () => {
        const response = await target.api.get('/api/v1/verifications/vrf_unknown?expand=everything');
        assertError(response, 400, 'validation_error', /expand/);
      });
    });
  });
});
