import { principalOf, type OperationHandler } from '../../platform/http/operation-handler.ts';
import type { VerificationLifecycle } from '../verification-lifecycle.ts';

export function listVerifications(lifecycle: VerificationLifecycle): OperationHandler<'listVerifications'> {
  return async (request) => ({ status: 200, body: await lifecycle.listForLender(principalOf(request).lender.id, request.query ?? {}) });
}
