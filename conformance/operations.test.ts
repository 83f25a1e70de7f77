import { assertError } from './assertions.ts';
import { forEachTarget, type RequestOptions } from './harness.ts';
import { covers } from './matrix.ts';
import { keyFor, sweptOperations } from './operations.ts';

/**
 * The error rows every operation shares, for every operation the contract lists (read from it, so a
 * new operation is swept without a new test): 401 without a key, 403 with a key of the other role,
 * `validation_error` for an unknown query parameter (D4) and `bad_request` for a malformed JSON body,
 * each the only thing wrong with the request. The 429 of every operation is in rate-limits.test.ts,
 * where the pilot key's quota is spent.
 */

forEachTarget((target) => {
  describe('errors: the rows every operation shares (section 7, D4, D9)', () => {
    for (const operation of sweptOperations()) {
      const { operationId, method, path, role } = operation;
      const send = (options: RequestOptions) => target.api.request(method, path, { ...options, headers: { ...operation.headers, ...options.headers } });

      if (role !== null) {
        it(`${operationId}: no Authorization header is 401 unauthorized${covers(`op:${operationId} 401 unauthorized`)}`, async () => {
          assertError(await send({ key: null }), 401, 'unauthorized');
        });

        it(`${operationId}: a key of the other role is 403 forbidden${covers(`op:${operationId} 403 forbidden`)}`, async function () {
          const other = keyFor(target, this, role === 'gdpr_admin' ? 'lender' : 'gdpr_admin');
          assertError(await send({ key: other }), 403, 'forbidden');
        });
      }

      it(`${operationId}: an unknown query parameter is 400 validation_error naming it${covers(`op:${operationId} 400 validation_error`)}`, async function () {
        const key = role === null ? null : keyFor(target, this, role);
        const response = await target.api.request(method, `${path}?conformance_unknown=1`, {
          key,
          headers: operation.headers,
          ...(operation.body === undefined ? {} : { json: operation.body }),
        });
        assertError(response, 400, 'validation_error', /conformance_unknown/);
      });

      it(`${operationId}: a malformed JSON body is 400 bad_request${covers(`op:${operationId} 400 bad_request`)}`, async function () {
        const key = role === null ? null : keyFor(target, this, role);
        assertError(await send({ key, body: '{"malformed": ', headers: { 'content-type': 'application/json' } }), 400, 'bad_request');
      });
    }
  });
});
