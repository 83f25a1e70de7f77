import cluster from 'node:cluster';
import { createServer, type RequestListener, type Server } from 'node:http';
import { AggregatorRegistry } from 'prom-client';
import { createHttpServer } from './platform/http/http-server.ts';
import { ConfigError, loadConfig } from './platform/config.ts';
import { createLogger } from './platform/logger.ts';
import { DEMO_DASHBOARD_USER } from './dashboard/dashboard-users.ts';
import { startService } from './service.ts';
import { openDatabase } from './platform/db/database.ts';
import { metricsListener, processRegistries } from './platform/metrics/metrics-endpoint.ts';
import type { Config } from './platform/config.ts';
import type { Logger } from './platform/logger.ts';

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
  if (config.webConcurrency > 1 && cluster.isPrimary) return runPrimary(config, logger);
  const service = await startService(config, logger);
  const { server, drain } = createHttpServer(service.app, { rateLimits: service.rateLimits });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, resolve);
  });
  // Prometheus scrapes its own port (METRICS_PORT), never the public API's. In a cluster the primary
  // serves it, aggregating what each worker reports.
  if (cluster.isWorker && service.metricsRegistries) {
    // Constructing one is what makes prom-client answer the primary's requests for this process's metrics.
    new AggregatorRegistry();
    AggregatorRegistry.setRegistries(processRegistries(service.metricsRegistries));
  }
  const metricsServer = service.metrics && !cluster.isWorker ? await listenForMetrics(config, service.metrics, logger) : null;
  service.jobs.start(JOB_POLL_INTERVAL_MS);
  // New deliveries wake the sender at once; the poll picks up retries and other processes' work.
  service.deliveries.start(DELIVERY_POLL_INTERVAL_MS);
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  const base = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
  logger.info({ port, mode: config.mode, database: config.databaseUrl.split(':')[0] }, 'listening');
  // In a cluster the primary prints the first worker's banner only.
  const banner = bannerOf(config, base, service.unavailablePlatforms);
  if (cluster.isWorker) process.send?.({ banner });
  else console.log(banner);

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'draining in-flight requests');
    // Stop accepting connections; in-flight requests finish (answered with Connection: close), idle
    // keep-alive sockets close after a short grace (http-server.ts).
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

/** The metrics port (METRICS_PORT), when configured: Prometheus scrapes it, never the public API's. */
async function listenForMetrics(config: Config, listener: RequestListener, logger: Logger): Promise<Server | null> {
  if (!config.metrics) return null;
  const { port, host, token } = config.metrics;
  const metricsServer = createServer(listener);
  await new Promise<void>((resolve, reject) => {
    metricsServer.once('error', reject);
    metricsServer.listen(port, host, resolve);
  });
  logger.info({ port, host, bearer: token !== null, cluster: cluster.isPrimary && config.webConcurrency > 1 }, 'metrics listening');
  return metricsServer;
}

function bannerOf(config: Config, base: string, unavailablePlatforms: ReadonlyArray<{ platform: string; variables: readonly string[] }>): string {
  return [
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
    ...unavailablePlatforms.map(
      ({ platform, variables }) => `  WARNING:       ${platform} cannot be connected: ${variables.join(' and ')} not set (the consent page tells creators so)`,
    ),
    '',
  ].join('\n');
}

/**
 * WEB_CONCURRENCY above 1: this process forks that many server processes sharing the port (Node's
 * cluster module hands each new connection to one of them) and serves nothing itself but the
 * metrics port, where it aggregates its workers' metrics (prom-client's AggregatorRegistry). The
 * workers share limits, idempotency, jobs and deliveries through PostgreSQL, as separately started
 * processes do. A worker that dies is replaced; SIGTERM or SIGINT drains every worker, then exits.
 */
async function runPrimary(config: Config, logger: Logger): Promise<void> {
  let stopping = false;
  const fork = () => cluster.fork();
  cluster.on('exit', (worker, code, signal) => {
    if (stopping) {
      if (Object.keys(cluster.workers ?? {}).length === 0) {
        logger.info('all server processes stopped');
        process.exit(0);
      }
      return;
    }
    logger.error({ workerPid: worker.process.pid, code, signal }, 'server process died; starting another');
    // A pause, so that a process that cannot start does not respawn in a tight loop.
    setTimeout(fork, 1000).unref();
  });
  // Once, before any worker starts: processes migrating a new database at the same moment race to
  // create Knex's own migrations table.
  const db = openDatabase(config.databaseUrl);
  try {
    await db.migrate();
  } finally {
    await db.close();
  }
  let bannerPrinted = false;
  cluster.on('message', (_worker, message: { banner?: unknown }) => {
    if (bannerPrinted || typeof message?.banner !== 'string') return;
    bannerPrinted = true;
    console.log(message.banner);
  });
  for (let i = 0; i < config.webConcurrency; i++) fork();
  logger.info({ processes: config.webConcurrency, pid: process.pid }, 'cluster started');

  const aggregator = new AggregatorRegistry();
  const metricsServer = config.metrics
    ? await listenForMetrics(config, metricsListener({ collect: () => aggregator.clusterMetrics(), token: config.metrics.token, logger }), logger)
    : null;

  const shutdown = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping every server process');
    metricsServer?.close();
    const workers = Object.values(cluster.workers ?? {});
    if (workers.length === 0) process.exit(0);
    for (const worker of workers) worker?.process.kill('SIGTERM');
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

main().catch((error) => {
  console.error(`Start-up failed: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
