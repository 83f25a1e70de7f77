import { principalOf, type OperationHandler } from '../../platform/http/operation-handler.ts';
import { createVerification as create, type LifecycleDeps } from '../lifecycle.ts';

export function createVerification(deps: LifecycleDeps): OperationHandler<'createVerification'> {
  return async (request) => {
    const result = await create(deps, principalOf(request), request.headers['Idempotency-Key'], request.body);
    // D1: a replay answers with the original status and body, marked as a replay.
    const headers: Record<string, string> = result.replayed ? { 'Idempotent-Replayed': 'true' } : {};
    return { status: result.status, body: result.body, headers };
  };
}
