import { principalOf, type OperationHandler } from '../../platform/http/operation-handler.ts';
import type { VerificationLifecycle } from '../verification-lifecycle.ts';

export function listVerificationTapes(lifecycle: VerificationLifecycle): OperationHandler<'listVerificationTapes'> {
  return async (request) => ({
    status: 200,
    body: await lifecycle.tapeHistoryForLender(principalOf(request).lender.id, request.params.verification_id, request.query),
  });
}
