import { createServer } from 'node:http';
import { createHttpServer } from './platform/http/http-server.ts';
import { ConfigError, loadConfig } from './platform/config.ts';
import { createLogger } from './platform/logger.ts';
import { DEMO_DASHBOARD_USER } from './dashboard/dashboard-users.ts';
import { startService } from './service.ts';

/** How often due jobs are looked for; sandbox outcomes land within this of their time. */
const JOB_POLL_INTERVAL_MS = 250;
const DELIVERY_POLL_INTERVAL_MS = 500;

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(error.message);
      process.exit(1);
    }
    throw error;
  }
  const logger = createLogger({ level: config.logLevel });
  const service = await startService(config, logger);
  const { server, drain } = createHttpServer(service.app, { rateLimits: service.rateLimits });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, resolve);
  });
  // Prometheus scrapes its own port (METRICS_PORT), never the public API's.
  const metricsServer = service.metrics && config.metrics ? createServer(service.metrics) : null;
  if (metricsServer && config.metrics) {
    const { port: metricsPort, host: metricsHost } = config.metrics;
    await new Promise<void>((resolve, reject) => {
      metricsServer.once('error', reject);
      metricsServer.listen(metricsPort, metricsHost, resolve);
    });
    logger.info({ port: metricsPort, host: metricsHost, bearer: config.metrics.token !== null }, 'metrics listening');
  }
  service.jobs.start(JOB_POLL_INTERVAL_MS);
  // New deliveries wake the sender at once; the poll picks up retries and other processes' work.
  service.deliveries.start(DELIVERY_POLL_INTERVAL_MS);
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  const base = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
  logger.info({ port, mode: config.mode, database: config.databaseUrl.split(':')[0] }, 'listening');
  console.log(
    [
      '',
      `Creator Income Verification Service (${config.mode} mode) listening on ${base}`,
      `  API docs:      ${base}/docs`,
      `  OpenAPI:       ${base}/openapi.json`,
      ...(config.demoApiKey ? [`  Demo API key:  ${config.demoApiKey}  (public sandbox key, role lender)`] : []),
      `  Dashboard:     ${base}/dashboard`,
      ...(config.demoApiKey
        ? [`  Demo sign-in:  ${DEMO_DASHBOARD_USER.email} / ${DEMO_DASHBOARD_USER.password}  (public sandbox dashboard admin of the demo lender)`]
        : []),
      `  Try:           curl -H "Authorization: Bearer ${config.demoApiKey ?? '<API_KEY>'}" ${base}/api/v1/verifications/vrf_unknown`,
      ...service.unavailablePlatforms.map(
        ({ platform, variables }) =>
          `  WARNING:       ${platform} cannot be connected: ${variables.join(' and ')} not set (the consent page tells creators so)`,
      ),
      '',
    ].join('\n'),
  );

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'draining in-flight requests');
    // Stop accepting connections; in-flight requests finish (answered with Connection: close), idle
    // keep-alive sockets close now.
    drain(() => {
      void (async () => {
        metricsServer?.close();
        await service.close();
        logger.info('stopped');
        process.exit(0);
      })();
    });
    setTimeout(() => {
      logger.warn('grace period over; closing remaining connections');
      server.closeAllConnections();
    }, config.shutdownGraceMs).unref();
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

main().catch((error) => {
  console.error(`Start-up failed: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
