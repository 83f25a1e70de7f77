/**
 * OpenTelemetry tracing, loaded before the server with `--import` (npm start, the Dockerfile) so its
 * instrumentations hook Node's http, Express, pg and pino before anything imports them.
 *
 * Off unless the standard variables ask for it: OTEL_TRACES_EXPORTER (otlp, console, zipkin; not
 * none), or an OTLP endpoint (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
 * OTEL_SDK_DISABLED=true wins over both. Everything else (service name, sampler, headers, resource
 * attributes) is the SDK's own OTEL_* configuration. Off, this module imports nothing: no SDK, no
 * module hooks, no patched functions, nothing on the request path.
 *
 * The request id joins logs and traces: each server span carries the request's X-Request-Id as
 * `http.response.header.x-request-id`, and every log line written inside a span (the request log among them) carries
 * `trace_id` and `span_id`.
 */
export function tracingRequested(env: NodeJS.ProcessEnv): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false;
  const exporters = (env.OTEL_TRACES_EXPORTER ?? '')
    .split(',')
    .map((name) => name.trim())
    .filter(Boolean);
  if (exporters.length > 0) return exporters.some((name) => name !== 'none');
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}

/** Requests whose spans would only be noise: the orchestrator's probes, every few seconds. */
const PROBES = new Set(['/healthz', '/readyz']);

export async function startTracing(): Promise<{ shutdown(): Promise<void> }> {
  // Express and pino are CommonJS packages imported from ES modules: only a loader hook sees them load.
  const { register } = await import('node:module');
  register('@opentelemetry/instrumentation/hook.mjs', import.meta.url);
  const [{ NodeSDK }, { HttpInstrumentation }, { ExpressInstrumentation }, { PgInstrumentation }, { PinoInstrumentation }] = await Promise.all([
    import('@opentelemetry/sdk-node'),
    import('@opentelemetry/instrumentation-http'),
    import('@opentelemetry/instrumentation-express'),
    import('@opentelemetry/instrumentation-pg'),
    import('@opentelemetry/instrumentation-pino'),
  ]);
  process.env.OTEL_SERVICE_NAME ??= 'creator-income-verification';
  const sdk = new NodeSDK({
    instrumentations: [
      new HttpInstrumentation({
        ignoreIncomingRequestHook: (request) => PROBES.has(request.url ?? ''),
        // The app sets X-Request-Id on every response, generated or passed through from the caller;
        // the span records it as http.response.header.x-request-id.
        headersToSpanAttributes: { server: { responseHeaders: ['x-request-id'] } },
      }),
      new ExpressInstrumentation(),
      // Statement text without values (the SDK's default): parameters may hold personal data.
      new PgInstrumentation(),
      // Trace ids into log lines only; the logs themselves stay on stdout (no OTel log export).
      new PinoInstrumentation({ disableLogSending: true }),
    ],
  });
  sdk.start();
  await nameSpansByOperation();
  const shutdown = () => sdk.shutdown();
  // Buffered spans are flushed while the server drains (server.ts exits once it has drained).
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => void shutdown().catch(() => undefined));
  return { shutdown };
}

/**
 * The app hands API requests to their operations in one Express layer, so the Express
 * instrumentation finds no route to name the request's span by; the app announces the operation's
 * route instead, and it goes where that instrumentation would put it (the span is named
 * `GET /api/v1/verifications/:verification_id` and gets it as `http.route`).
 */
async function nameSpansByOperation(): Promise<void> {
  const [{ subscribe }, { context }, { getRPCMetadata, RPCType }, { OPERATION_ROUTE_CHANNEL }] = await Promise.all([
    import('node:diagnostics_channel'),
    import('@opentelemetry/api'),
    import('@opentelemetry/core'),
    import('../http/matched-operation.ts'),
  ]);
  subscribe(OPERATION_ROUTE_CHANNEL, (message) => {
    const metadata = getRPCMetadata(context.active());
    if (metadata?.type === RPCType.HTTP) metadata.route = (message as { route: string }).route;
  });
}

if (tracingRequested(process.env)) await startTracing();
