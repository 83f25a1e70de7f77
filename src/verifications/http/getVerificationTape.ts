import { principalOf, type OperationHandler } from '../../platform/http/operation-handler.ts';
import type { VerificationLifecycle } from '../verification-lifecycle.ts';

/** Signs the exact bytes of a tape response (P26); the signing feature supplies it. */
export type TapeBytesSigner = (bytes: Uint8Array) => Promise<string>;

export function getVerificationTape(lifecycle: VerificationLifecycle, sign: TapeBytesSigner): OperationHandler<'getVerificationTape'> {
  return async (request) => {
    const rendered = await lifecycle.tapeResponseForLender(
      principalOf(request).lender.id,
      request.params.verification_id,
      request.query.schema_version ?? '2.0.0',
      request.query.tape_id,
    );
    const json = rendered.json;
    // The bytes signed are the bytes sent.
    const signature = await sign(Buffer.from(json, 'utf8'));
    return {
      status: 200,
      // Read only if the response validator checks it: the bytes sent are `serialized` (tapeResponseForLender).
      get body() {
        return rendered.tape;
      },
      serialized: json,
      headers: { 'X-Tape-Signature': signature },
    };
  };
}
