import { ApiError } from '../error-catalogue.ts';
import type { OperationHandler } from '../operation-handler.ts';

export function getHealth(): OperationHandler<'getHealth'> {
  return async () => ({ status: 200, body: { status: 'ok' } });
}

export function getReadiness(deps: { isDatabaseReachable: () => Promise<boolean> }): OperationHandler<'getReadiness'> {
  return async () => {
    if (!(await deps.isDatabaseReachable())) {
      throw new ApiError('service_unavailable', 'The database is not reachable.', { retryAfterSeconds: 5 });
    }
    return { status: 200, body: { status: 'ready', database: 'reachable' } };
  };
}
