import type { OperationId } from './platform/http/api-document.ts';
import type { OperationHandler } from './platform/http/operation-handler.ts';
import { getHealth, getReadiness } from './platform/http/probes/probes.ts';
import { getVerification } from './verifications/http/getVerification.ts';
import type { VerificationsRepository } from './verifications/verifications-repository.ts';

/**
 * Operations of spec/openapi.yaml whose handlers are not delivered yet, with the feature that
 * delivers them. They answer 503 `service_unavailable` until then. `operations.test.ts` fails when
 * an operation is neither handled nor listed here, or is both; `npm run check:operations` prints them.
 */
export const PENDING_OPERATIONS = {
  createVerification: 'verification lifecycle',
  getVerificationTape: 'verification lifecycle',
  createOverlay: 'overlays',
  getBenchmark: 'benchmarks',
  createWebhook: 'webhooks',
  listWebhooks: 'webhooks',
  deleteWebhook: 'webhooks',
  listWebhookDeliveries: 'webhooks',
  replayWebhookDelivery: 'webhooks',
  gdprAccess: 'data protection',
  gdprExport: 'data protection',
  gdprErase: 'data protection',
} as const satisfies Partial<Record<OperationId, string>>;

type PendingOperationId = keyof typeof PENDING_OPERATIONS;

/** One handler per operationId; the type makes a missing handler a compile error. */
export type OperationHandlers = { [Op in Exclude<OperationId, PendingOperationId>]: OperationHandler<Op> };

export interface HandlerDeps {
  verifications: VerificationsRepository;
  isDatabaseReachable: () => Promise<boolean>;
}

export function createHandlers(deps: HandlerDeps): OperationHandlers {
  return {
    getHealth: getHealth(),
    getReadiness: getReadiness(deps),
    getVerification: getVerification(deps),
  };
}
