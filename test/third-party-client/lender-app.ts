// A lender's integration, written as a lender would against the SDK that @hey-api/openapi-ts
// generates from generated/openapi.json. test/third-party-client.test.ts generates that SDK into
// ./sdk beside a copy of this file and contract.ts, compiles them under `strict` in a project of their
// own and runs the result against a server. The import of ./sdk resolves only there, so the
// repository's own tsconfig.json and eslint.config.js leave this file out.
import {
  cancelVerification,
  listVerificationTapes,
  refreshVerification,
  stopMonitoring,
  createOverlay,
  createVerification,
  createWebhook,
  deleteWebhook,
  gdprAccess,
  gdprErase,
  gdprExport,
  getBenchmark,
  getHealth,
  getReadiness,
  getTapeSigningKeys,
  getVerification,
  getVerificationTape,
  getWebhook,
  listEvents,
  listVerifications,
  listWebhookDeliveries,
  listWebhooks,
  replayWebhookDelivery,
  rotateWebhookSecret,
  sendWebhookTest,
  updateWebhook,
  type Delivery,
} from './sdk/index.js';
import { client } from './sdk/client.gen.js';
import { createClient, createConfig, type Client } from './sdk/client/index.js';
import type { Call, Inputs, Outcome } from './contract.js';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Calls every operation of the API through the generated SDK, each at least once successfully. */
export async function callEveryOperation(inputs: Inputs): Promise<Outcome> {
  const calls: Call[] = [];
  const observe = (sdkClient: Client) => {
    sdkClient.interceptors.response.use((response, request, options) => {
      calls.push({ method: request.method, path: options.url, status: response.status });
      return response;
    });
    // An error answer becomes an Error naming the call, instead of the bare parsed body.
    sdkClient.interceptors.error.use(
      (error, response, request, options) => new Error(`${request.method} ${options.url}: ${response?.status ?? 'no answer'} ${JSON.stringify(error)}`),
    );
  };
  client.setConfig({ baseUrl: inputs.baseUrl, auth: () => inputs.lenderKey, throwOnError: true });
  observe(client);
  const gdpr = createClient(createConfig({ baseUrl: inputs.baseUrl, auth: () => inputs.gdprKey, throwOnError: true }));
  observe(gdpr);

  // Unauthenticated: probes and the tape signing keys.
  const health = await getHealth({ throwOnError: true });
  const readiness = await getReadiness({ throwOnError: true });
  if (health.data.status !== 'ok' || readiness.data.database !== 'reachable') throw new Error('the service is not ready');
  const { data: jwks } = await getTapeSigningKeys({ throwOnError: true });

  // A webhook endpoint first, so that the verifications below are delivered to it.
  const { data: webhook } = await createWebhook({
    body: { url: inputs.webhookUrl, events: ['verification.completed', 'verification.cancelled'] },
    throwOnError: true,
  });
  const { data: sameWebhook } = await getWebhook({ path: { webhook_id: webhook.webhook_id }, throwOnError: true });
  if (sameWebhook.url !== webhook.url) throw new Error('getWebhook answered another endpoint');
  const { data: webhooks } = await listWebhooks({ query: { limit: 10 }, throwOnError: true });
  if (!webhooks.data.some((w) => w.webhook_id === webhook.webhook_id)) throw new Error('listWebhooks misses the endpoint');

  // A synthetic creator completes at creation; any other reference waits for consent.
  const { data: completed } = await createVerification({
    headers: { 'Idempotency-Key': crypto.randomUUID() },
    body: { obligor_reference: 'demo_prime_multi', creator_platforms: ['youtube', 'stripe'] },
    throwOnError: true,
  });
  const waitingReference = `obligor-${crypto.randomUUID()}`;
  const { data: waiting } = await createVerification({
    headers: { 'Idempotency-Key': crypto.randomUUID() },
    body: { obligor_reference: waitingReference, creator_platforms: ['youtube'], product_type: 'murabaha' },
    throwOnError: true,
  });
  const { data: read } = await getVerification({ path: { verification_id: completed.verification_id }, throwOnError: true });
  if (read.status !== 'completed') throw new Error(`a synthetic creator's verification is ${read.status}`);
  const { data: page } = await listVerifications({ query: { status: ['completed', 'failed'], limit: 5 }, throwOnError: true });
  if (!page.data.some((v) => v.verification_id === completed.verification_id)) throw new Error('listVerifications misses the verification');
  // The completion's event, as its webhook carries it, in the lender's feed.
  const { data: feed } = await listEvents({ query: { verification_id: completed.verification_id }, throwOnError: true });
  if (feed.data[0]?.event !== 'verification.completed') throw new Error(`the event feed shows ${JSON.stringify(feed.data)}`);

  const tape = await getVerificationTape({ path: { verification_id: completed.verification_id }, query: { schema_version: '2.0.0' }, throwOnError: true });
  await createOverlay({
    path: { verification_id: completed.verification_id },
    body: {
      type: 'credit_bureau',
      provider: 'Example Credit Bureau',
      status: 'clear',
      observed_at: new Date().toISOString(),
      data: { score: 712 },
    },
    throwOnError: true,
  });
  const { data: benchmark } = await getBenchmark({ path: { verification_id: completed.verification_id }, throwOnError: true });
  if (benchmark.metrics.monthly_revenue_avg_eur === undefined) throw new Error('benchmark without metrics');
  // Ongoing monitoring: a refresh asked for, the tape history, and the end.
  const { data: monitored } = await createVerification({
    headers: { 'Idempotency-Key': crypto.randomUUID() },
    body: { obligor_reference: 'demo_prime_multi', creator_platforms: ['youtube'], monitoring: { months: 2 } },
    throwOnError: true,
  });
  const { data: refreshing } = await refreshVerification({ path: { verification_id: monitored.verification_id }, throwOnError: true });
  if (!refreshing.monitoring?.refresh_requested_at) throw new Error('the refresh is not shown waiting');
  const { data: tapes } = await listVerificationTapes({ path: { verification_id: monitored.verification_id }, query: { limit: 10 }, throwOnError: true });
  if (tapes.data[0]?.latest !== true) throw new Error(`the tape history starts with ${JSON.stringify(tapes.data[0])}`);
  const { data: stopped } = await stopMonitoring({ path: { verification_id: monitored.verification_id }, throwOnError: true });
  if (stopped.monitoring?.end_reason !== 'stopped_by_lender') throw new Error(`stopping left ${JSON.stringify(stopped.monitoring)}`);
  const { data: cancelled } = await cancelVerification({ path: { verification_id: waiting.verification_id }, throwOnError: true });
  if (cancelled.status !== 'cancelled') throw new Error(`cancel left ${cancelled.status}`);

  const { data: test } = await sendWebhookTest({ path: { webhook_id: webhook.webhook_id }, throwOnError: true });
  await rotateWebhookSecret({ path: { webhook_id: webhook.webhook_id }, body: { overlap_seconds: 60 }, throwOnError: true });

  // The completion's delivery, once it has been acknowledged, can be replayed.
  let delivered: Delivery | undefined;
  for (let attempt = 0; attempt < 100 && !delivered; attempt++) {
    if (attempt > 0) await sleep(100);
    const { data: deliveries } = await listWebhookDeliveries({ path: { webhook_id: webhook.webhook_id }, throwOnError: true });
    delivered = deliveries.data.find((d) => d.status === 'succeeded');
  }
  if (!delivered) throw new Error('no delivery was acknowledged within 10 s');
  const { data: replay } = await replayWebhookDelivery({
    path: { webhook_id: webhook.webhook_id, delivery_id: delivered.delivery_id },
    throwOnError: true,
  });

  // Paused and resumed in place: the same endpoint, its new state in the answer.
  const { data: paused } = await updateWebhook({ path: { webhook_id: webhook.webhook_id }, body: { enabled: false }, throwOnError: true });
  if (paused.enabled || paused.webhook_id !== webhook.webhook_id) throw new Error('updateWebhook did not disable the endpoint');
  await updateWebhook({ path: { webhook_id: webhook.webhook_id }, body: { enabled: true, events: webhook.events }, throwOnError: true });

  // The data subject's rights, with the gdpr_admin key of the same lender.
  const { data: report } = await gdprAccess({ client: gdpr, query: { obligor_id: waitingReference }, throwOnError: true });
  if (report.verifications.length !== 1) throw new Error(`access report with ${report.verifications.length} verifications`);
  const { data: exported } = await gdprExport({ client: gdpr, query: { obligor_id: waitingReference }, throwOnError: true });
  if (exported.export_format !== 'creator-income-export/1') throw new Error('unexpected export format');
  const { data: receipt } = await gdprErase({ client: gdpr, body: { obligor_id: waitingReference }, throwOnError: true });

  await deleteWebhook({ path: { webhook_id: webhook.webhook_id }, throwOnError: true });

  return {
    calls,
    tapeSchemaVersion: tape.data.schema_version,
    tapeSignature: tape.response.headers.get('x-tape-signature'),
    signingKeyIds: jwks.keys.map((key) => key.kid),
    testEventAcknowledged: test.succeeded,
    replayOf: replay.replay_of,
    erasedVerifications: receipt.counts.verifications,
  };
}
