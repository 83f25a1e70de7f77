import { principalOf, type OperationHandler } from '../../platform/http/operation-handler.ts';
import type { VerificationLifecycle } from '../verification-lifecycle.ts';

export function createOverlay(lifecycle: VerificationLifecycle): OperationHandler<'createOverlay'> {
  return async (request) => {
    const result = await lifecycle.attachOverlay(principalOf(request), request.params.verification_id, request.body, request.headers['Idempotency-Key']);
    const headers: Record<string, string> = result.replayed ? { 'Idempotent-Replayed': 'true' } : {};
    return { status: 201, body: result.body, headers };
  };
}
