import assert from 'node:assert/strict';
import { once } from 'node:events';
import { Agent, request } from 'node:http';
import { connect } from 'node:net';
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
