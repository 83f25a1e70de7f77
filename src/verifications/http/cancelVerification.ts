import { principalOf, type OperationHandler } from '../../platform/http/operation-handler.ts';
import type { VerificationLifecycle } from '../verification-lifecycle.ts';

export function cancelVerification(lifecycle: VerificationLifecycle): OperationHandler<'cancelVerification'> {
  return async (request) => ({ status: 200, body: await lifecycle.cancel(principalOf(request).lender.id, request.params.verification_id) });
}
