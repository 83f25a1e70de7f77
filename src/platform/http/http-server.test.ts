import assert from 'node:assert/strict';
import { once } from 'node:events';
import { execFile } from 'node:child_process';
import { Agent, IncomingMessage, request, ServerResponse } from 'node:http';
import { connect } from 'node:net';
import { promisify } from 'node:util';
import express from 'express';
import { createHttpServer } from './http-server.ts';
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
    assert.match(answer, /"error":"bad_request"/);
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

  it("makes each request with the app's request and response prototypes, still Node's own request and response", async () => {
    const prototypes = { request: Object.create(IncomingMessage.prototype) as object, response: Object.create(ServerResponse.prototype) as object };
    let seen: Record<string, unknown> = {};
    const listener = Object.assign((req: IncomingMessage, res: ServerResponse) => {
      seen = {
        requestPrototype: Object.getPrototypeOf(req) === prototypes.request,
        responsePrototype: Object.getPrototypeOf(res) === prototypes.response,
        isIncomingMessage: req instanceof IncomingMessage,
        isServerResponse: res instanceof ServerResponse,
        url: req.url,
        header: req.headers['x-probe'],
      };
      res.end('ok');
    }, prototypes);
    const { server } = createHttpServer(listener, { rateLimits });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const answer = await fetch(`http://127.0.0.1:${(server.address() as { port: number }).port}/path?q=1`, { headers: { 'x-probe': 'yes' } });
    assert.equal(await answer.text(), 'ok');
    assert.deepEqual(seen, {
      requestPrototype: true,
      responsePrototype: true,
      isIncomingMessage: true,
      isServerResponse: true,
      url: '/path?q=1',
      header: 'yes',
    });
    server.close();
  });

  // What the prototypes are for (docs/performance.md): Express's own prototype change on each request
  // gives each request object a hidden class of its own, which V8 shows only to natives syntax, so the
  // comparison runs in a child process. The plain `createServer(app)` is the control: the probe sees
  // the difference there.
  it("gives concurrent requests of an Express app one hidden class, where Node's plain server gives each its own", async function () {
    this.timeout(30_000);
    const probe = `
      import { createServer } from 'node:http';
      import express from 'express';
      import { createHttpServer } from ${JSON.stringify(new URL('./http-server.ts', import.meta.url).href)};
      import { RateLimits } from ${JSON.stringify(new URL('./rate-limit.ts', import.meta.url).href)};
      const sameMap = new Function('a', 'b', 'return %HaveSameMap(a, b)');
      const verdicts = [];
      let held;
      const app = express();
      // Two requests at a time: the second compares itself with the first while both are in the same place.
      app.get('/probe', (req, res) => {
        if (!held) return void (held = { req, res });
        verdicts.push(sameMap(held.req, req) && sameMap(held.res, res));
        held.res.json({});
        held = undefined;
        res.json({});
      });
      const result = {};
      for (const [name, server] of [['createHttpServer', createHttpServer(app, { rateLimits: new RateLimits({ dialect: 'sqlite' }) }).server], ['createServer', createServer(app)]]) {
        verdicts.length = 0;
        server.listen(0, '127.0.0.1');
        await new Promise((resolve) => server.once('listening', resolve));
        const url = 'http://127.0.0.1:' + server.address().port + '/probe';
        for (let pair = 0; pair < 60; pair++) await Promise.all([fetch(url).then((r) => r.text()), fetch(url).then((r) => r.text())]);
        result[name] = verdicts.slice(20);
        server.closeAllConnections();
        server.close();
      }
      console.log(JSON.stringify(result));
    `;
    const { stdout } = await promisify(execFile)(process.execPath, ['--allow-natives-syntax', '--import', 'tsx', '--input-type=module', '-e', probe], {
      cwd: new URL('../../..', import.meta.url).pathname,
    });
    const result = JSON.parse(stdout) as Record<'createHttpServer' | 'createServer', boolean[]>;
    assert.equal(result.createHttpServer.length, 40);
    assert.ok(
      result.createHttpServer.every((same) => same),
      'requests through createHttpServer share their hidden classes',
    );
    assert.ok(
      result.createServer.every((same) => !same),
      "the control: through Node's plain server, Express's prototype change gives each request its own",
    );
  });
});
