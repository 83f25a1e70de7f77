import { createServer, IncomingMessage, ServerResponse, type RequestListener, type Server } from 'node:http';
import { Server as NetServer, type Socket } from 'node:net';
import { anonymousQuotaHeaders, type RateLimits } from './rate-limit.ts';

/**
 * How long a client may take, chosen rather than left at Node's defaults (a minute for headers, five
 * for a request), so slow clients cannot hold sockets for minutes (README, "Timeouts").
 */
export const HTTP_TIMEOUTS = {
  /** The request line and headers must arrive within this. */
  headersTimeoutMs: 10_000,
  /** The whole request, body included (bodies are at most 256 KiB). */
  requestTimeoutMs: 30_000,
  /** An idle keep-alive connection stays open this long: beyond the usual 60 s of load balancers, so they close first. */
  keepAliveTimeoutMs: 65_000,
  /** How often Node checks the two timeouts above. */
  checkIntervalMs: 1_000,
  /** On drain, idle keep-alive connections stay open this long for a request already on its way. */
  drainIdleGraceMs: 1_000,
};

export interface HttpServer {
  server: Server;
  /**
   * Graceful stop: no new connections; requests in flight finish and are answered with
   * `Connection: close`, so keep-alive clients move elsewhere; idle connections close after a short
   * grace (`drainIdleGraceMs`), in which a request arriving on one is answered the same way.
   * `done` runs once every connection has closed.
   */
  drain: (done: () => void) => void;
}

/** What createHttpServer serves: an Express app, or any listener (which then gets Node's own request objects). */
export type ServedApp = RequestListener & { request?: object; response?: object };

export function createHttpServer(app: ServedApp, options: { rateLimits: RateLimits; timeouts?: typeof HTTP_TIMEOUTS }): HttpServer {
  const timeouts = options.timeouts ?? HTTP_TIMEOUTS;
  let draining = false;
  /** Responses not yet sent: told to close their connection when a drain starts. */
  const unanswered = new Set<ServerResponse>();
  const server = createServer(
    {
      ...expressRequestClasses(app),
      connectionsCheckingInterval: timeouts.checkIntervalMs,
      headersTimeout: timeouts.headersTimeoutMs,
      requestTimeout: timeouts.requestTimeoutMs,
    },
    (req, res) => {
      if (draining) {
        res.setHeader('Connection', 'close');
      } else {
        unanswered.add(res);
        res.once('close', () => unanswered.delete(res));
      }
      app(req, res);
    },
  );
  server.keepAliveTimeout = timeouts.keepAliveTimeoutMs;
  // Requests Node refuses before Express sees them (oversized headers, broken HTTP, too slow) still
  // get a catalogue error in JSON, never Node's bare status line (D7).
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Socket) => {
    if (!socket.writable || error.code === 'ECONNRESET') return socket.destroy();
    const timedOut = error.code === 'ERR_HTTP_REQUEST_TIMEOUT';
    const body = JSON.stringify(
      timedOut
        ? {
            error: 'bad_request',
            message: `The request did not arrive in time (headers within ${timeouts.headersTimeoutMs / 1000} s, the whole request within ${timeouts.requestTimeoutMs / 1000} s).`,
          }
        : { error: 'bad_request', message: error.code === 'HPE_HEADER_OVERFLOW' ? 'Request headers are too large.' : 'Malformed HTTP request.' },
    );
    void (async () => {
      const quota = await anonymousQuotaHeaders(options.rateLimits, socket.remoteAddress).catch(() => ({}));
      const headers = Object.entries({
        ...quota,
        'Content-Type': 'application/json; charset=utf-8',
        'Content-Length': String(Buffer.byteLength(body)),
        Connection: 'close',
      })
        .map(([name, value]) => `${name}: ${value}\r\n`)
        .join('');
      if (socket.writable) socket.end(`HTTP/1.1 ${timedOut ? '408 Request Timeout' : '400 Bad Request'}\r\n${headers}\r\n${body}`);
    })();
  });
  return {
    server,
    drain(done) {
      draining = true;
      for (const res of unanswered) if (!res.headersSent) res.setHeader('Connection', 'close');
      // Not http.Server#close: it closes idle keep-alive connections at once, and with them a request
      // a client had already sent on one that the server had not read yet. That client gets a reset it
      // cannot tell from a request lost in flight (seen under load: a keep-alive client sends its
      // next request as soon as the last answer arrives). Stop listening now; idle connections close
      // after the grace, and what arrives on them before is answered with Connection: close.
      NetServer.prototype.close.call(server, () => done());
      setTimeout(() => server.closeIdleConnections(), timeouts.drainIdleGraceMs).unref();
    },
  };
}

/**
 * Node's request and response classes with the Express app's own prototypes (`app.request`,
 * `app.response`), so each request object is made an Express request from the start. Express sets
 * those prototypes on every request object as it enters (`Object.setPrototypeOf`), which gives each
 * one a hidden class of its own: every property read or write on a request or response, in Express,
 * the validator, Node's HTTP code and ours, then misses V8's inline caches and is looked up the slow
 * way. With the prototype already in place Express's `setPrototypeOf` changes nothing, and all
 * requests share their hidden classes (expressjs/express#5998; docs/performance.md: `GET
 * /verifications/{id}` from 4,000 to 9,000 requests per second). Node declares both classes as
 * constructor functions, which is what makes `call` valid (`Reflect.construct` would be valid for
 * a class too, but gave each object its own hidden class again); the server's tests fail if that changes.
 */
function expressRequestClasses(app: ServedApp): { IncomingMessage?: typeof IncomingMessage; ServerResponse?: typeof ServerResponse } {
  if (!app.request || !app.response) return {};
  const initRequest = IncomingMessage as unknown as (this: IncomingMessage, socket: Socket) => void;
  const initResponse = ServerResponse as unknown as (this: ServerResponse, req: IncomingMessage, options?: object) => void;
  function ExpressRequest(this: IncomingMessage, socket: Socket): void {
    initRequest.call(this, socket);
  }
  ExpressRequest.prototype = app.request;
  function ExpressResponse(this: ServerResponse, req: IncomingMessage, options?: object): void {
    initResponse.call(this, req, options);
  }
  ExpressResponse.prototype = app.response;
  return { IncomingMessage: ExpressRequest as unknown as typeof IncomingMessage, ServerResponse: ExpressResponse as unknown as typeof ServerResponse };
}
