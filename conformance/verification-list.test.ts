import assert from 'node:assert/strict';
import { assertError } from './assertions.ts';
import { forEachTarget, requireKey } from './harness.ts';
import { CREATE_PATH, cancelVerification, created, getVerification, randomReference, sleep, type Verification } from './sandbox.ts';

/**
 * GET /api/v1/verifications: newest first, keyset pages (`limit`, `starting_after`, `has_more`),
 * the filters, tenant isolation and the refusals. Each test lists only verifications it made, by a
 * fresh obligor reference, so other tests running on the same lender do not disturb it.
 */

const ids = (response: { json: unknown }) => (response.json as { data: Verification[] }).data.map((v) => v.verification_id);

forEachTarget((target) => {
  /** Three verifications of one fresh obligor, created a few milliseconds apart, oldest first. */
  const threeOfOneObligor = async (productTypes: string[] = ['rbf', 'term_loan', 'rbf']) => {
    const reference = randomReference('conformance-list-');
    const made: Verification[] = [];
    for (const productType of productTypes) {
      made.push(await created(target, { obligor_reference: reference, creator_platforms: ['youtube'], product_type: productType }));
      await sleep(5);
    }
    return { reference, made };
  };

  describe('happy: list verifications (GET /api/v1/verifications) [op:listVerifications 200]', () => {
    it('newest first, each entry the whole resource as the status endpoint shows it', async () => {
      const { reference, made } = await threeOfOneObligor();
      const response = await target.api.get(`${CREATE_PATH}?obligor_reference=${reference}`);
      assert.equal(response.status, 200, response.text);
      assert.deepEqual(ids(response), made.map((v) => v.verification_id).reverse());
      assert.equal((response.json as { has_more: boolean }).has_more, false);
      for (const entry of (response.json as { data: Verification[] }).data) assert.deepEqual(entry, await getVerification(target, entry.verification_id));
    });

    it('pages of one with starting_after: each verification once, has_more true until the last page', async () => {
      const { reference, made } = await threeOfOneObligor();
      const seen: string[] = [];
      const hasMore: boolean[] = [];
      let after = '';
      for (let page = 0; page < 5; page += 1) {
        const response = await target.api.get(`${CREATE_PATH}?obligor_reference=${reference}&limit=1${after ? `&starting_after=${after}` : ''}`);
        assert.equal(response.status, 200, response.text);
        const body = response.json as { data: Verification[]; has_more: boolean };
        seen.push(...ids(response));
        hasMore.push(body.has_more);
        if (!body.has_more) break;
        after = body.data.at(-1)!.verification_id;
      }
      assert.deepEqual(seen, made.map((v) => v.verification_id).reverse());
      assert.deepEqual(hasMore, [true, true, false]);
    });

    it('page size both ways: 20 without limit (has_more), all 21 with limit=100, never more than asked', async () => {
      const reference = randomReference('conformance-list-size-');
      for (let i = 0; i < 21; i += 1) await created(target, { obligor_reference: reference, creator_platforms: ['youtube'] });
      const page = async (query: string) => {
        const response = await target.api.get(`${CREATE_PATH}?obligor_reference=${reference}${query}`);
        assert.equal(response.status, 200, response.text);
        const body = response.json as { data: Verification[]; has_more: boolean };
        return [body.data.length, body.has_more];
      };
      assert.deepEqual(await page(''), [20, true], 'the default page is 20');
      assert.deepEqual(await page('&limit=100'), [21, false], 'limit=100 holds them all');
      assert.deepEqual(await page('&limit=7'), [7, true]);
    });

    it('filters: product_type, status, created_gte (inclusive) and created_lt (exclusive), combined with AND', async () => {
      const { reference, made } = await threeOfOneObligor(['rbf', 'term_loan', 'rbf']);
      const list = async (query: string) => {
        const response = await target.api.get(`${CREATE_PATH}?obligor_reference=${reference}&${query}`);
        assert.equal(response.status, 200, response.text);
        return ids(response);
      };
      const [first, second, third] = made.map((v) => v.verification_id);
      assert.deepEqual(await list('product_type=rbf'), [third, first]);
      assert.deepEqual(await list('product_type=hpp'), []);
      assert.deepEqual(await list('status=pending_consent'), [third, second, first]);
      assert.deepEqual(await list('status=completed'), []);
      assert.deepEqual(await list(`created_gte=${made[1]!.created_at}`), [third, second]);
      assert.deepEqual(await list(`created_lt=${made[1]!.created_at}`), [first]);
      assert.deepEqual(await list(`created_gte=${made[1]!.created_at}&product_type=rbf`), [third]);
    });
  });

  describe('happy: several states, and pages backwards (GET /api/v1/verifications) [op:listVerifications 200]', () => {
    it('status=a,b lists the verifications in either state, newest first, and no other', async () => {
      const { reference, made } = await threeOfOneObligor();
      const [first, second, third] = made.map((v) => v.verification_id) as [string, string, string];
      assert.equal((await cancelVerification(target, second)).status, 200);
      const list = async (query: string) => {
        const response = await target.api.get(`${CREATE_PATH}?obligor_reference=${reference}&${query}`);
        assert.equal(response.status, 200, response.text);
        return ids(response);
      };
      assert.deepEqual(await list('status=cancelled,pending_consent'), [third, second, first]);
      assert.deepEqual(await list('status=pending_consent,cancelled&limit=2'), [third, second]);
      assert.deepEqual(await list('status=cancelled,completed'), [second]);
      assert.deepEqual(await list('status=completed,failed'), []);
    });

    it('ending_before: the nearest newer verifications, newest first, has_more until the newest', async () => {
      const { reference, made } = await threeOfOneObligor(['rbf', 'rbf', 'rbf', 'rbf']);
      const [first, second, third, fourth] = made.map((v) => v.verification_id) as [string, string, string, string];
      const page = async (query: string) => {
        const response = await target.api.get(`${CREATE_PATH}?obligor_reference=${reference}&${query}`);
        assert.equal(response.status, 200, response.text);
        return [ids(response), (response.json as { has_more: boolean }).has_more];
      };
      assert.deepEqual(await page(`limit=2&ending_before=${first}`), [[third, second], true]);
      assert.deepEqual(await page(`limit=2&ending_before=${third}`), [[fourth], false]);
      assert.deepEqual(await page(`limit=10&ending_before=${first}`), [[fourth, third, second], false]);
      assert.deepEqual(await page(`ending_before=${fourth}`), [[], false]);
    });
  });

  describe('security and errors: GET /api/v1/verifications [op:listVerifications 400 validation_error]', () => {
    it("another lender's key lists none of this lender's verifications, and its cursor here is 400 validation_error", async function () {
      requireKey(this, target, 'otherLender');
      const { reference, made } = await threeOfOneObligor();
      const response = await target.api.get(`${CREATE_PATH}?obligor_reference=${reference}`, { key: 'otherLender' });
      assert.equal(response.status, 200, response.text);
      assert.deepEqual(ids(response), []);
      assertError(
        await target.api.get(`${CREATE_PATH}?starting_after=${made[0]!.verification_id}`, { key: 'otherLender' }),
        400,
        'validation_error',
        /starting_after/,
      );
    });

    it('both cursors at once: 400 validation_error naming ending_before', async () => {
      const { made } = await threeOfOneObligor();
      assertError(
        await target.api.get(`${CREATE_PATH}?starting_after=${made[2]!.verification_id}&ending_before=${made[0]!.verification_id}`),
        400,
        'validation_error',
        /ending_before/,
      );
    });

    for (const [query, field] of [
      ['limit=0', 'limit'],
      ['limit=101', 'limit'],
      ['status=paused', 'status'],
      ['product_type=mortgage', 'product_type'],
      ['created_gte=yesterday', 'created_gte'],
      ['starting_after=vrf_neverissued000000000', 'starting_after'],
      ['ending_before=vrf_neverissued000000000', 'ending_before'],
      ['status=completed,paused', 'status'],
      ['sort=asc', 'sort'],
    ] as const) {
      it(`${query}: 400 validation_error naming ${field}`, async () => {
        assertError(await target.api.get(`${CREATE_PATH}?${query}`), 400, 'validation_error', new RegExp(field));
      });
    }

    it('without a key: 401 unauthorized; with a gdpr_admin key: 403 forbidden', async function () {
      assertError(await target.api.get(CREATE_PATH, { key: null }), 401, 'unauthorized');
      requireKey(this, target, 'gdpr');
      assertError(await target.api.get(CREATE_PATH, { key: 'gdpr' }), 403, 'forbidden');
    });
  });
});
