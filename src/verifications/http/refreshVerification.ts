import { principalOf, type OperationHandler } from '../../platform/http/operation-handler.ts';
import type { VerificationLifecycle } from '../verification-lifecycle.ts';

export function refreshVerification(lifecycle: VerificationLifecycle): OperationHandler<'refreshVerification'> {
  return async (request) => ({ status: 202, body: await lifecycle.requestRefresh(principalOf(request).lender.id, request.params.verification_id) });
}
