import type { OperationId } from './platform/http/api-document.ts';
import type { OperationHandler } from './platform/http/operation-handler.ts';
import { getHealth, getReadiness } from './platform/http/probes/probes.ts';
import { cancelVerification } from './verifications/http/cancelVerification.ts';
import { createOverlay } from './verifications/http/createOverlay.ts';
import { createVerification } from './verifications/http/createVerification.ts';
import { getVerification } from './verifications/http/getVerification.ts';
import { getVerificationTape } from './verifications/http/getVerificationTape.ts';
import { listEvents } from './verifications/http/listEvents.ts';
import { listVerifications } from './verifications/http/listVerifications.ts';
import { listVerificationTapes } from './verifications/http/listVerificationTapes.ts';
import { refreshVerification } from './verifications/http/refreshVerification.ts';
import { stopMonitoring } from './verifications/http/stopMonitoring.ts';
import { getBenchmark } from './benchmarks/http/getBenchmark.ts';
import { getTapeSigningKeys } from './signing/http/getTapeSigningKeys.ts';
import type { TapeSigner } from './signing/tape-signer.ts';
import type { PeerBenchmarkDeps } from './benchmarks/peer-benchmark.ts';
import type { DataSubjectDeps } from './gdpr/data-subject-requests.ts';
import { gdprAccess } from './gdpr/http/gdprAccess.ts';
import { gdprErase } from './gdpr/http/gdprErase.ts';
import { gdprExport } from './gdpr/http/gdprExport.ts';
import type { VerificationLifecycle } from './verifications/verification-lifecycle.ts';
import type { EndpointDeps, PostToEndpoint } from './webhooks/endpoints.ts';
import { createWebhook } from './webhooks/http/createWebhook.ts';
import { deleteWebhook } from './webhooks/http/deleteWebhook.ts';
import { getWebhook } from './webhooks/http/getWebhook.ts';
import { listWebhookDeliveries } from './webhooks/http/listWebhookDeliveries.ts';
import { listWebhooks } from './webhooks/http/listWebhooks.ts';
import { replayWebhookDelivery } from './webhooks/http/replayWebhookDelivery.ts';
import { rotateWebhookSecret } from './webhooks/http/rotateWebhookSecret.ts';
import { sendWebhookTest } from './webhooks/http/sendWebhookTest.ts';
import { updateWebhook } from './webhooks/http/updateWebhook.ts';

/**
 * Operations of spec/openapi.yaml whose handlers are not delivered yet, with the feature that
 * delivers them. They answer 503 `service_unavailable` until then. `operations.test.ts` fails when
 * an operation is neither handled nor listed here, or is both; `npm run check:operations` prints them.
 */
export const PENDING_OPERATIONS = {} as const satisfies Partial<Record<OperationId, string>>;

type PendingOperationId = keyof typeof PENDING_OPERATIONS;

/** One handler per operationId; the type makes a missing handler a compile error. */
export type OperationHandlers = { [Op in Exclude<OperationId, PendingOperationId>]: OperationHandler<Op> };

export interface HandlerDeps {
  lifecycle: VerificationLifecycle;
  /** The endpoints' use cases, the sender a test event is posted with, and the wake-up of the delivery worker a replay needs. */
  webhooks: EndpointDeps & { wakeDeliveries: () => void; post: PostToEndpoint };
  dataSubjects: DataSubjectDeps;
  benchmarks: PeerBenchmarkDeps;
  tapeSigner: Pick<TapeSigner, 'sign' | 'publicKeys'>;
  isDatabaseReachable: () => Promise<boolean>;
}

export function createHandlers(deps: HandlerDeps): OperationHandlers {
  return {
    getHealth: getHealth(),
    getReadiness: getReadiness(deps),
    createVerification: createVerification(deps.lifecycle),
    listVerifications: listVerifications(deps.lifecycle),
    listEvents: listEvents(deps.lifecycle),
    getVerification: getVerification(deps.lifecycle),
    getVerificationTape: getVerificationTape(deps.lifecycle, (bytes) => deps.tapeSigner.sign(bytes)),
    createOverlay: createOverlay(deps.lifecycle),
    cancelVerification: cancelVerification(deps.lifecycle),
    listVerificationTapes: listVerificationTapes(deps.lifecycle),
    refreshVerification: refreshVerification(deps.lifecycle),
    stopMonitoring: stopMonitoring(deps.lifecycle),
    createWebhook: createWebhook(deps.webhooks),
    listWebhooks: listWebhooks(deps.webhooks),
    getWebhook: getWebhook(deps.webhooks),
    updateWebhook: updateWebhook(deps.webhooks),
    deleteWebhook: deleteWebhook(deps.webhooks),
    rotateWebhookSecret: rotateWebhookSecret(deps.webhooks),
    sendWebhookTest: sendWebhookTest(deps.webhooks),
    listWebhookDeliveries: listWebhookDeliveries(deps.webhooks),
    replayWebhookDelivery: replayWebhookDelivery(deps.webhooks),
    getBenchmark: getBenchmark(deps.benchmarks),
    getTapeSigningKeys: getTapeSigningKeys({ publicKeys: () => deps.tapeSigner.publicKeys() }),
    gdprAccess: gdprAccess(deps.dataSubjects),
    gdprExport: gdprExport(deps.dataSubjects),
    gdprErase: gdprErase(deps.dataSubjects),
  };
}

export interface OperationCoverage {
  handled: OperationId[];
  pending: Array<{ operationId: OperationId; deliveredBy: string }>;
  /** In the spec with neither a handler nor a pending entry: an operation silently missing. */
  missing: string[];
  /** Both handled and pending: the pending entry is stale. */
  stale: OperationId[];
  /** Handled or pending but absent from the spec. */
  unknown: string[];
}

export function operationCoverage(specOperationIds: string[]): OperationCoverage {
  // Handler factories only capture their dependencies, so building them without any is safe here.
  const handled = Object.keys(createHandlers({} as HandlerDeps)) as OperationId[];
  const pendingIds = Object.keys(PENDING_OPERATIONS) as OperationId[];
  const known = new Set(specOperationIds);
  return {
    handled,
    pending: pendingIds.map((operationId) => ({ operationId, deliveredBy: PENDING_OPERATIONS[operationId as PendingOperationId] })),
    missing: specOperationIds.filter((id) => !handled.includes(id as OperationId) && !pendingIds.includes(id as OperationId)),
    stale: handled.filter((id) => pendingIds.includes(id)),
    unknown: [...handled, ...pendingIds].filter((id) => !known.has(id)),
  };
}
