import { principalOf, type OperationHandler } from '../../platform/http/operation-handler.ts';
import type { VerificationLifecycle } from '../verification-lifecycle.ts';

export function listEvents(lifecycle: VerificationLifecycle): OperationHandler<'listEvents'> {
  return async (request) => ({ status: 200, body: await lifecycle.listEvents(principalOf(request).lender.id, request.query ?? {}) });
}
