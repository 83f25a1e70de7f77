import { principalOf, type OperationHandler } from '../../platform/http/operation-handler.ts';
import type { VerificationLifecycle } from '../verification-lifecycle.ts';

export function stopMonitoring(lifecycle: VerificationLifecycle): OperationHandler<'stopMonitoring'> {
  return async (request) => ({ status: 200, body: await lifecycle.stopMonitoring(principalOf(request).lender.id, request.params.verification_id) });
}
