import { ApiError } from '../../platform/http/error-catalogue.ts';
import { principalOf, type OperationHandler } from '../../platform/http/operation-handler.ts';
import { renderTape, TapeVersionUnsupported } from '../../tape/index.ts';
import type { VerificationLifecycle } from '../verification-lifecycle.ts';

/** Signs the exact bytes of a tape response (P26); the signing feature supplies it. */
export type TapeBytesSigner = (bytes: Uint8Array) => Promise<string>;

export function getVerificationTape(lifecycle: VerificationLifecycle, sign: TapeBytesSigner): OperationHandler<'getVerificationTape'> {
  return async (request) => {
    const { lender } = principalOf(request);
    const id = request.params.verification_id;
    const found = await lifecycle.findTapeForLender(lender.id, id);
    if (!found) throw new ApiError('not_found', `No verification ${id}.`);
    // D5: no tape before completion, and the message says where the verification stands.
    if (found.status !== 'completed' || !found.tape) {
      throw new ApiError('not_found', `Verification ${id} is ${found.status}; its tape exists once it is completed.`);
    }
    let body;
    try {
      body = renderTape(found.tape, request.query.schema_version ?? '2.0.0');
    } catch (error) {
      if (error instanceof TapeVersionUnsupported) throw new ApiError('unprocessable', error.message);
      throw error;
    }
    // Serialised here, so that the bytes signed are the bytes sent.
    const serialized = JSON.stringify(body);
    const signature = await sign(Buffer.from(serialized, 'utf8'));
    return { status: 200, body, serialized, headers: { 'X-Tape-Signature': signature } };
  };
}
