import { createServer } from 'node:http';
import type { Socket } from 'node:net';
import { anonymousQuotaHeaders } from './platform/http/rate-limit.ts';
import { ConfigError, loadConfig } from './platform/config.ts';
import { createLogger } from './platform/logger.ts';
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
  const server = createServer(service.app);
  server.keepAliveTimeout = 65_000;
  // Requests Node refuses before Express sees them (oversized headers, broken HTTP) still get a
  // catalogue error in JSON, never Node's bare status line (D7).
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Socket) => {
    if (!socket.writable || error.code === 'ECONNRESET') return socket.destroy();
    const body = JSON.stringify({
      error: 'bad_request',
      message: error.code === 'HPE_HEADER_OVERFLOW' ? 'Request headers are too large.' : 'Malformed HTTP request.',
    });
    void (async () => {
      const quota = await anonymousQuotaHeaders(service.rateLimits, socket.remoteAddress).catch(() => ({}));
      const headers = Object.entries({
        ...quota,
        'Content-Type': 'application/json; charset=utf-8',
        'Content-Length': String(Buffer.byteLength(body)),
        Connection: 'close',
      })
        .map(([name, value]) => `${name}: ${value}\r\n`)
        .join('');
      if (socket.writable) socket.end(`HTTP/1.1 400 Bad Request\r\n${headers}\r\n${body}`);
    })();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, resolve);
  });
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
      `  Try:           curl -H "Authorization: Bearer ${config.demoApiKey ?? '<API_KEY>'}" ${base}/api/v1/verifications/vrf_unknown`,
      '',
    ].join('\n'),
  );

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'draining in-flight requests');
    // Stop accepting connections; in-flight requests finish, idle keep-alive sockets close now.
    server.close(() => {
      void (async () => {
        await service.close();
        logger.info('stopped');
        process.exit(0);
      })();
    });
    server.closeIdleConnections();
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
