import assert from 'node:assert/strict';
import { once } from 'node:events';
import { execFile } from 'node:child_process';
import { Agent, IncomingMessage, request, ServerResponse } from 'node:http';
import { connect } from 'node:net';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import express from 'express';
import { createHttpServer, type ServedApp } from './http-server.ts';
import { RateLimits } from './rate-limit.ts';

const timeouts = { headersTimeoutMs: 300, requestTimeoutMs: 600, keepAliveTimeoutMs: 5_000, checkIntervalMs: 50, drainIdleGraceMs: 800 };

describe('the HTTP server: timeouts and draining', () => {
  const app = express();
  app.get('/quick', (_req, res) => res.json({ ok: true }));
  app.get('/slow', (_req, res) => void setTimeout(() => res.json({ ok: true }), 400));

  const start = async () => {
    const http = createHttpServer(app, { rateLimits: new RateLimits({ dialect: 'sqlite', knex: undefined as never }), timeouts });
    http.server.listen(0, '127.0.0.1');
    await once(http.server, 'listening');
    return { ...http, port: (http.server.address() as { port: number }).port };
  };

  it('answers a client that never finishes its headers with 408 in JSON and closes, instead of holding the socket', async () => {
    const { server, port } = await start();
    const socket = connect(port, '127.0.0.1');
    await once(socket, 'connect');
    socket.write('GET /quick HTTP/1.1\r\nHost: localhost\r\n');
    let answer = '';
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString()));
    const started = Date.now();
    await once(socket, 'close');
    assert.ok(Date.now() - started < 3_000, 'the socket was held');
    assert.match(answer, /^HTTP\/1\.1 408 /);
    assert.match(answer, /"error":"request_timeout"/);
    server.close();
  });

  it('on drain, answers the request in flight and one arriving on an idle keep-alive socket with Connection: close, and closes idle sockets after the grace', async () => {
    const { server, port, drain } = await start();
    const agent = new Agent({ keepAlive: true, maxSockets: 3 });
    const get = (path: string) =>
      new Promise<{ status: number; connection: string | undefined }>((resolve, reject) => {
        request({ host: '127.0.0.1', port, path, agent }, (res) => {
          res.resume();
          res.on('end', () => resolve({ status: res.statusCode!, connection: res.headers.connection }));
        })
          .on('error', reject)
          .end();
      });
    const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    // Three keep-alive sockets: one busy with a slow request, two idle after a quick one.
    await Promise.all([get('/quick'), get('/quick'), get('/quick')]);
    const inFlight = get('/slow');
    await sleep(100);
    let drained = false;
    drain(() => (drained = true));
    // A client that sends on its idle socket just after the drain began cannot know it did: answered,
    // not reset (the agent reuses an idle socket; a new connection would be refused).
    assert.deepEqual(await get('/quick'), { status: 200, connection: 'close' });
    assert.deepEqual(await inFlight, { status: 200, connection: 'close' });
    assert.equal(drained, false, 'the socket left idle stays open during the grace');
    // The socket left idle closes after the grace, long before its 5 s keep-alive timeout.
    await sleep(timeouts.drainIdleGraceMs + 200);
    assert.ok(drained, 'every connection closed once the grace was over');
    await assert.rejects(get('/quick'), 'new connections are refused while draining');
    agent.destroy();
    server.closeAllConnections();
  });
});

describe("the HTTP server: an Express app's own request objects", () => {
  const rateLimits = new RateLimits({ dialect: 'sqlite', knex: undefined as never });

  /** Serves `listener` until the returned function stops it; `get` fetches a path from it. */
  const serve = async (listener: ServedApp) => {
    const { server } = createHttpServer(listener, { rateLimits });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    return { get: (path: string, headers?: Record<string, string>) => fetch(`${base}${path}`, { headers }), stop: () => server.close() };
  };

  it("makes each request with the app's request and response prototypes, still Node's own request and response", async () => {
    const original = { request: Object.create(IncomingMessage.prototype) as object, response: Object.create(ServerResponse.prototype) as object };
    let seen: Record<string, unknown> = {};
    const listener: ServedApp = Object.assign(
      (req: IncomingMessage, res: ServerResponse) => {
        seen = {
          requestPrototype: Object.getPrototypeOf(req) === listener.request,
          responsePrototype: Object.getPrototypeOf(res) === listener.response,
          inheritsTheAppsRequest: Object.prototype.isPrototypeOf.call(original.request, req),
          inheritsTheAppsResponse: Object.prototype.isPrototypeOf.call(original.response, res),
          isIncomingMessage: req instanceof IncomingMessage,
          isServerResponse: res instanceof ServerResponse,
          url: req.url,
          header: req.headers['x-probe'],
        };
        res.end('ok');
      },
      { ...original },
    );
    const first = await serve(listener);
    const answer = await first.get('/path?q=1', { 'x-probe': 'yes' });
    assert.equal(await answer.text(), 'ok');
    assert.deepEqual(seen, {
      requestPrototype: true,
      responsePrototype: true,
      inheritsTheAppsRequest: true,
      inheritsTheAppsResponse: true,
      isIncomingMessage: true,
      isServerResponse: true,
      url: '/path?q=1',
      header: 'yes',
    });
    // A second server for the same app uses the same classes, and the first one's requests keep theirs.
    const prototypes = { request: listener.request, response: listener.response };
    const second = await serve(listener);
    assert.deepEqual({ request: listener.request, response: listener.response }, prototypes);
    for (const server of [first, second]) {
      seen = {};
      assert.equal(await (await server.get('/again')).text(), 'ok');
      assert.deepEqual([seen.requestPrototype, seen.responsePrototype], [true, true]);
    }
    first.stop();
    second.stop();
  });

  it('keeps `req.app` and `res.app` for an Express app mounted into another after its server was made', async () => {
    const app = express();
    app.get('/which', (req, res) => res.json({ request: req.app === app, response: res.app === app }));
    const { get, stop } = await serve(app);
    express().use('/sub', app);
    assert.deepEqual(await (await get('/which')).json(), { request: true, response: true });
    stop();
  });

  it("serves a listener whose prototypes are not Node's request and response with Node's own classes", async () => {
    const listener: ServedApp = Object.assign(
      (req: IncomingMessage, res: ServerResponse) => res.end(String(Object.getPrototypeOf(req) === IncomingMessage.prototype)),
      {
        request: {},
        response: {},
      },
    );
    const { get, stop } = await serve(listener);
    assert.equal(await (await get('/')).text(), 'true');
    stop();
  });

  // What the classes are for (docs/performance.md): Express's own prototype change on each request
  // gives each request object a hidden class of its own, which V8 shows only to natives syntax, so the
  // comparison runs in a child process. The plain `createServer(app)` is the control, which shows the
  // probe can tell: should a later V8 stop giving those requests hidden classes of their own, the
  // control is what fails, and the classes are no longer needed.
  it("gives concurrent requests of an Express app one hidden class in V8's fast mode, where Node's plain server gives each its own", async function () {
    this.timeout(30_000);
    const probe = `
      import { createServer } from 'node:http';
      import express from 'express';
      import { createHttpServer } from ${JSON.stringify(new URL('./http-server.ts', import.meta.url).href)};
      import { RateLimits } from ${JSON.stringify(new URL('./rate-limit.ts', import.meta.url).href)};
      const sameMap = new Function('a', 'b', 'return %HaveSameMap(a, b)');
      const fast = new Function('a', 'return %HasFastProperties(a)');
      const verdicts = [];
      let held;
      let onHeld;
      const answer = (res) => res.json({});
      // Two requests at a time: the second is sent once the first is held, and compares itself with
      // it while both are in the same place.
      const probed = () => express().get('/probe', (req, res) => {
        if (!held) {
          held = { req, res };
          return onHeld();
        }
        verdicts.push({ request: sameMap(held.req, req), response: sameMap(held.res, res), fast: fast(req) && fast(res) });
        answer(held.res);
        held = undefined;
        answer(res);
      });
      const result = {};
      for (const [name, server] of [['createHttpServer', createHttpServer(probed(), { rateLimits: new RateLimits({ dialect: 'sqlite' }) }).server], ['createServer', createServer(probed())]]) {
        verdicts.length = 0;
        server.listen(0, '127.0.0.1');
        await new Promise((resolve) => server.once('listening', resolve));
        const url = 'http://127.0.0.1:' + server.address().port + '/probe';
        const text = () => fetch(url).then((r) => r.text());
        for (let pair = 0; pair < 60; pair++) {
          const firstHeld = new Promise((resolve) => (onHeld = resolve));
          const first = text();
          await firstHeld;
          await Promise.all([first, text()]);
        }
        result[name] = verdicts.slice(20);
        server.closeAllConnections();
        server.close();
      }
      console.log(JSON.stringify(result));
    `;
    const { stdout } = await promisify(execFile)(process.execPath, ['--allow-natives-syntax', '--import', 'tsx', '--input-type=module', '-e', probe], {
      cwd: fileURLToPath(new URL('../../..', import.meta.url)),
      timeout: 25_000,
    });
    type Verdict = { request: boolean; response: boolean; fast: boolean };
    const result = JSON.parse(stdout) as Record<'createHttpServer' | 'createServer', Verdict[]>;
    assert.equal(result.createHttpServer.length, 40, 'pairs compared through createHttpServer');
    assert.equal(result.createServer.length, 40, 'pairs compared through the plain server');
    assert.deepEqual(
      result.createHttpServer.filter((verdict) => !(verdict.request && verdict.response && verdict.fast)),
      [],
      'requests and responses through createHttpServer share their hidden classes, in fast mode',
    );
    assert.deepEqual(
      result.createServer.filter((verdict) => verdict.request || verdict.response),
      [],
      "the control: through Node's plain server, Express's prototype change gives each request and response its own",
    );
  });
});
