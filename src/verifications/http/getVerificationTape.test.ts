import assert from 'node:assert/strict';
import type { Principal } from '../../platform/principal.ts';
import type { OperationRequest } from '../../platform/http/operation-handler.ts';
import type { StoredTape, VerificationsRepository } from '../verifications-repository.ts';
import { VerificationLifecycle, type LifecycleDeps } from '../verification-lifecycle.ts';
import { getVerificationTape } from './getVerificationTape.ts';

describe('GET /verifications/{id}/tape at the stored version', () => {
  // Spacing JSON.stringify would never write: what is sent and signed is the stored text itself.
  const storedText = '{ "schema_version" : "2.0.0" }';
  let parsed = 0;
  const stored: StoredTape = {
    json: storedText,
    get value() {
      parsed++;
      return JSON.parse(storedText);
    },
  };
  const verifications = { findTapeForLender: async () => ({ status: 'completed' as const, tape: stored }) } as unknown as VerificationsRepository;
  const lifecycle = new VerificationLifecycle({ verifications } as unknown as LifecycleDeps);
  const signed: string[] = [];
  const handler = getVerificationTape(lifecycle, async (bytes) => {
    signed.push(Buffer.from(bytes).toString('utf8'));
    return 'signature';
  });
  const request = {
    params: { verification_id: 'vrf_1' },
    query: {},
    headers: {},
    body: undefined,
    principal: { lender: { id: 'lnd_1' } } as Principal,
    requestId: 'req_1',
  } as unknown as OperationRequest<'getVerificationTape'>;

  it('sends and signs the stored text without parsing it; the tape is parsed only if the body is read', async () => {
    const response = await handler(request);
    assert.equal(response.status, 200);
    assert.equal(response.serialized, storedText);
    assert.deepEqual(signed, [storedText]);
    assert.equal(response.headers?.['X-Tape-Signature'], 'signature');
    assert.equal(parsed, 0, 'the stored tape was parsed although its text is what is sent');
    // The response validator reads the body: then, and only then, the text is parsed.
    assert.deepEqual(response.body, { schema_version: '2.0.0' });
    assert.equal(parsed, 1);
  });
});
