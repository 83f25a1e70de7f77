import { principalOf, type OperationHandler } from '../../platform/http/operation-handler.ts';
import type { VerificationLifecycle } from '../verification-lifecycle.ts';

export function createVerification(lifecycle: VerificationLifecycle): OperationHandler<'createVerification'> {
  return async (request) => {
    const result = await lifecycle.create(principalOf(request), request.headers['Idempotency-Key'], request.body);
    // D1: a replay answers with the original status and body, marked as a replay.
    const headers: Record<string, string> = result.replayed ? { 'Idempotent-Replayed': 'true' } : {};
    return { status: 201, body: result.body, headers };
  };
}
