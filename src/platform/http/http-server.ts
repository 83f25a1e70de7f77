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
            error: 'request_timeout',
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

type RequestClasses = { IncomingMessage: typeof IncomingMessage; ServerResponse: typeof ServerResponse };

/** The classes made for each app, by the request prototype they gave it: made once per app. */
const classesByPrototype = new WeakMap<object, RequestClasses>();

/**
 * Request and response classes that make each request object an Express request from the start.
 * Express sets the prototypes of every request and response as they enter the app
 * (`Object.setPrototypeOf(req, app.request)`), which in V8 gives each object a hidden class of its
 * own: every property read or write on a request or response, in Express, the validator, Node's HTTP
 * code and ours, then misses V8's inline caches and is looked up the slow way. These classes extend
 * Node's own, and become the app's `request` and `response` (each inheriting from what the app had,
 * so `req.app` and Express's methods are unchanged): Express's `setPrototypeOf` then finds the
 * prototype already in place and changes nothing, and requests and responses share their hidden
 * classes, in V8's fast mode. The fix proposed in expressjs/express#5998; docs/performance.md has the
 * measurements (`GET /verifications/{id}` at more than twice the requests per second). Functions that
 * call Node's constructors with the app's objects as their `prototype` left every response in V8's
 * slower dictionary mode, and `Reflect.construct` gave each object its own hidden class again.
 * A listener that is not an Express app, or whose prototypes are not Node's, is served as it is.
 */
function expressRequestClasses(app: ServedApp): Partial<RequestClasses> {
  const { request, response } = app;
  if (!request || !response || !Object.prototype.isPrototypeOf.call(IncomingMessage.prototype, request)) return {};
  if (!Object.prototype.isPrototypeOf.call(ServerResponse.prototype, response)) return {};
  const made = classesByPrototype.get(request);
  if (made && made.ServerResponse.prototype === response) return made;
  class ExpressRequest extends IncomingMessage {}
  class ExpressResponse extends ServerResponse {}
  // The app's own properties (its `app`) on the classes' prototypes too: mounted into another app,
  // Express sets the parent's request as the prototype of the app's request, which then no longer
  // leads to the original's.
  Object.defineProperties(ExpressRequest.prototype, Object.getOwnPropertyDescriptors(request));
  Object.setPrototypeOf(ExpressRequest.prototype, request);
  Object.defineProperties(ExpressResponse.prototype, Object.getOwnPropertyDescriptors(response));
  Object.setPrototypeOf(ExpressResponse.prototype, response);
  app.request = ExpressRequest.prototype;
  app.response = ExpressResponse.prototype;
  // Node's declarations make ServerResponse generic in its request type; these are its plain form.
  const classes = { IncomingMessage: ExpressRequest, ServerResponse: ExpressResponse as typeof ServerResponse };
  classesByPrototype.set(app.request, classes);
  return classes;
}
