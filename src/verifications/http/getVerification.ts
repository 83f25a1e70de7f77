import { ApiError } from '../../platform/http/error-catalogue.ts';
import { principalOf, type OperationHandler } from '../../platform/http/operation-handler.ts';
import type { VerificationLifecycle } from '../verification-lifecycle.ts';

export function getVerification(lifecycle: VerificationLifecycle): OperationHandler<'getVerification'> {
  return async (request) => {
    const { lender } = principalOf(request);
    const id = request.params.verification_id;
    const verification = await lifecycle.findForLender(lender.id, id);
    if (!verification) throw new ApiError('not_found', `No verification ${id}.`);
    return { status: 200, body: verification };
  };
}
