import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { forEachTarget, requireKey, requireSandbox } from './harness.ts';
import {
  assertResourceInvariants,
  CREATE_PATH,
  created,
  createVerification,
  getTape,
  getVerification,
  randomReference,
  withIdMasked,
  type CreateBody,
  type Verification,
} from './sandbox.ts';
import { assertError } from './assertions.ts';
import { skipBecause } from './skip.ts';

/**
 * POST /api/v1/verifications, GET /api/v1/verifications/{id} and its /tape (sections 4.1 to 4.3, 7;
 * D1 to D5): what a lender gets back, every error row of section 7 for these operations not
 * already in errors.test.ts and auth.test.ts, and tenant isolation.
 */

/** How far the target's clock may be from ours when checking created_at. */
const CLOCK_SKEW_MS = 5 * 60 * 1000;

const neverIssuedId = () => `vrf_${randomBytes(10).toString('hex')}`;

forEachTarget((target) => {
  const realCreator = (extra: Partial<CreateBody> = {}): CreateBody => ({
    obligor_reference: randomReference('conformance-obligor-'),
    creator_platforms: ['youtube', 'stripe'],
    ...extra,
  });

  describe('happy: create a verification and read it back (4.1, 4.2, D1 to D3) [op:createVerification 201] [op:getVerification 200] [transition:new->pending_consent]', () => {
    it('a real creator: 201 pending_consent with the whole resource, nothing connected yet, defaults applied', async () => {
      const body = realCreator();
      const started = Date.now();
      const response = await createVerification(target, body);
      assert.equal(response.status, 201, response.text);
      assert.equal(response.headers.get('idempotent-replayed'), null);
      const verification = response.json as Verification;
      assert.match(verification.verification_id, /^vrf_[A-Za-z0-9]+$/);
      assert.equal(verification.status, 'pending_consent');
      assert.equal(verification.obligor_reference, body.obligor_reference);
      assert.deepEqual(verification.creator_platforms, body.creator_platforms);
      assert.equal(verification.product_type, 'rbf', 'product_type defaults to rbf (D3)');
      if (target.canOperate) assert.equal(verification.lender_name, 'Conformance Lender A', "lender_name defaults to the lender account's name (D3)");
      assert.ok(verification.lender_name.length > 0);
      assert.deepEqual(
        verification.platform_connections,
        body.creator_platforms.map((platform) => ({ platform, status: 'not_connected' })),
      );
      assert.equal(verification.updated_at, verification.created_at);
      assert.ok(Math.abs(Date.parse(verification.created_at) - started) < CLOCK_SKEW_MS, `created_at ${verification.created_at} is now`);
      assert.equal('declared_monthly_obligations_eur' in verification, false, 'not declared, not shown');
      assertResourceInvariants(verification);
    });

    it('GET /api/v1/verifications/{id} returns the same resource as the creation response', async () => {
      const response = await createVerification(target, realCreator());
      assert.equal(response.status, 201, response.text);
      const verification = response.json as Verification;
      assert.deepEqual(await getVerification(target, verification.verification_id), verification);
    });

    it('a synthetic creator (sandbox): the creation response is the completed resource GET returns', async function () {
      requireSandbox(this, target);
      const verification = await created(target, { obligor_reference: 'demo_prime_multi', creator_platforms: ['youtube', 'stripe'] });
      assert.equal(verification.status, 'completed');
      assert.equal(verification.completed_at, verification.created_at);
      assert.deepEqual(await getVerification(target, verification.verification_id), verification);
    });

    it('lender_name, product_type and declared_monthly_obligations_eur are kept as given', async () => {
      const body = realCreator({
        lender_name: 'Northwind Capital (conformance)',
        product_type: 'securitization_pool',
        declared_monthly_obligations_eur: 820.5,
      });
      const verification = await created(target, body);
      assert.equal(verification.lender_name, body.lender_name);
      assert.equal(verification.product_type, body.product_type);
      assert.equal(verification.declared_monthly_obligations_eur, body.declared_monthly_obligations_eur);
      assert.deepEqual(await getVerification(target, verification.verification_id), verification);
    });

    it('every product type of 2.2 is accepted', async () => {
      for (const productType of ['rbf', 'term_loan', 'securitization_pool', 'revenue_loan', 'venture_debt', 'murabaha', 'hpp']) {
        assert.equal((await created(target, realCreator({ product_type: productType }))).product_type, productType);
      }
    });

    it('the same payload under two fresh keys is two verifications, each with its own consent URL', async () => {
      const body = realCreator();
      const [first, second] = [await created(target, body), await created(target, body)];
      assert.notEqual(first.verification_id, second.verification_id);
      assert.notEqual(first.consent_url, second.consent_url);
    });
  });

  describe('errors: GET /api/v1/verifications/{id}/tape (4.3, D5) [op:getVerificationTape 404 not_found] [op:getVerificationTape 400 validation_error]', () => {
    it('a verification that is not completed: 404 not_found whose message names its status (pending_consent)', async () => {
      const verification = await created(target, realCreator());
      const body = assertError(await getTape(target, verification.verification_id), 404, 'not_found');
      assert.match(body.message, /pending_consent/);
    });

    it('an id that was never issued: 404 not_found', async () => {
      assertError(await getTape(target, neverIssuedId()), 404, 'not_found');
    });

    for (const version of ['9.9.9', '2.0', 'v2.0.0', '3.0.0', '1.0']) {
      it(`an unknown schema_version (${version}) on a completed verification: 400 validation_error naming schema_version`, async function () {
        requireSandbox(this, target);
        const verification = await created(target, { obligor_reference: 'demo_prime_multi', creator_platforms: ['youtube', 'stripe'] });
        assert.equal(verification.status, 'completed');
        const body = assertError(await getTape(target, verification.verification_id, version), 400, 'validation_error');
        assert.match(JSON.stringify(body), /schema_version/);
      });
    }

    it('an unknown query parameter: 400 validation_error naming it', async () => {
      const verification = await created(target, realCreator());
      const response = await target.api.get(`${CREATE_PATH}/${verification.verification_id}/tape?format=pdf`);
      assert.match(JSON.stringify(assertError(response, 400, 'validation_error')), /format/);
    });
  });

  describe('errors: POST /api/v1/verifications, the rows of section 7 [op:createVerification 400 validation_error] [op:createVerification 401 unauthorized]', () => {
    it('a missing bearer header with a valid body: 401 unauthorized', async () => {
      assertError(await target.api.post(CREATE_PATH, { key: null, json: realCreator(), headers: { 'idempotency-key': randomUUID() } }), 401, 'unauthorized');
    });

    it('a malformed bearer header with a valid body: 401 unauthorized', async () => {
      const response = await target.api.post(CREATE_PATH, { authorization: 'Bearer', json: realCreator(), headers: { 'idempotency-key': randomUUID() } });
      assertError(response, 401, 'unauthorized');
    });

    it('a gdpr_admin key: 403 forbidden, before the body is looked at (P7)', async function () {
      requireKey(this, target, 'gdpr');
      assertError(await createVerification(target, realCreator(), { key: 'gdpr' }), 403, 'forbidden');
      assertError(await createVerification(target, { obligor_reference: '' }, { key: 'gdpr' }), 403, 'forbidden');
    });
  });

  describe('security: tenant isolation (4.2, section 7: "unknown ID or other lender\'s") [op:getVerification 404 not_found] [op:getVerificationTape 404 not_found]', () => {
    const paths = (id: string) => [`${CREATE_PATH}/${id}`, `${CREATE_PATH}/${id}/tape`, `${CREATE_PATH}/${id}/tape?schema_version=1.0.0`];

    async function assertInvisibleToOtherLender(id: string): Promise<void> {
      const unknown = neverIssuedId();
      for (const [path, unknownPath] of paths(id).map((p, i) => [p, paths(unknown)[i]!] as const)) {
        const theirs = await target.api.get(path, { key: 'otherLender' });
        const never = await target.api.get(unknownPath, { key: 'otherLender' });
        assertError(theirs, 404, 'not_found');
        assertError(never, 404, 'not_found');
        // The same answer as for an id that never existed, so existence (or state) is not revealed.
        assert.deepEqual(withIdMasked(theirs.json, id), withIdMasked(never.json, unknown), `${path}: ${theirs.text} vs ${never.text}`);
      }
    }

    it('a completed verification of lender A is 404 for lender B on status and tape, like an id that never existed', async function () {
      requireKey(this, target, 'otherLender');
      requireSandbox(this, target);
      const verification = await created(target, { obligor_reference: 'demo_prime_multi', creator_platforms: ['youtube', 'stripe'] }, { key: 'lender' });
      assert.equal((await getTape(target, verification.verification_id, undefined, 'lender')).status, 200, 'lender A reads its tape');
      await assertInvisibleToOtherLender(verification.verification_id);
    });

    it("a pending verification of lender A is 404 for lender B, whose tape message does not name A's status", async function () {
      requireKey(this, target, 'otherLender');
      const verification = await created(target, realCreator(), { key: 'lender' });
      assert.equal((await target.api.get(`${CREATE_PATH}/${verification.verification_id}`, { key: 'lender' })).status, 200, 'lender A reads it');
      await assertInvisibleToOtherLender(verification.verification_id);
      const tape = await getTape(target, verification.verification_id, undefined, 'otherLender');
      assert.doesNotMatch(tape.text, /pending_consent/);
    });

    it('a verification belongs to the lender account, not the key: another key of lender A reads it', async function () {
      if (!target.operator || !target.lenderId) {
        skipBecause(this, 'needs a self-started target, whose operator CLI can issue a second key');
      }
      const verification = await created(target, realCreator(), { key: 'lender' });
      const secondKey = await target.operator.createKey(target.lenderId, 'lender');
      const response = await target.api.get(`${CREATE_PATH}/${verification.verification_id}`, { apiKey: secondKey.api_key });
      assert.equal(response.status, 200, response.text);
      assert.deepEqual(response.json, verification);
    });

    it('a gdpr_admin key is refused the tape endpoint: 403 forbidden', async function () {
      requireKey(this, target, 'gdpr');
      const verification = await created(target, realCreator());
      assertError(await getTape(target, verification.verification_id, undefined, 'gdpr'), 403, 'forbidden');
    });
  });
});
