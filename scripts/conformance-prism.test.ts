import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { request } from 'node:http';
import { whyNotThroughProxy } from '../conformance/proxy-route.ts';
import { startPrism, type Prism } from './conformance-prism.ts';

/** What the fake upstream received: the request line's target and the body bytes. */
interface Received {
  method: string;
  target: string;
  body: Buffer;
}

async function readBody(incoming: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of incoming) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** Sends exactly these bytes (node:http, so a body on GET is possible) and resolves to the status. */
function send(base: string, method: string, target: string, headers: Record<string, string>, body: string | Uint8Array | undefined): Promise<number> {
  return new Promise((resolve, reject) => {
    const outgoing = request(
      `${base}${target}`,
      { method, headers: body === undefined ? headers : { ...headers, 'content-length': String(Buffer.byteLength(body)) } },
      (incoming) => {
        incoming.resume();
        incoming.on('end', () => resolve(incoming.statusCode ?? 0));
      },
    );
    outgoing.setTimeout(5_000, () => outgoing.destroy(new Error(`${method} ${target}: no answer in 5 s`)));
    outgoing.on('error', reject);
    outgoing.end(body);
  });
}

describe('conformance:prism (Stoplight Prism validation proxy)', function () {
  this.timeout(60_000);

  let upstream: Server;
  let prism: Prism;
  let received: Received[] = [];
  /** How the fake upstream answers GET /healthz. */
  let health: { status: number; body: string } = { status: 200, body: '{"status":"ok"}' };

  before(async () => {
    upstream = createServer((incoming, response) => {
      void readBody(incoming).then((body) => {
        received.push({ method: incoming.method ?? '', target: incoming.url ?? '', body });
        if (incoming.url === '/healthz') response.writeHead(health.status, { 'content-type': 'application/json' }).end(health.body);
        else response.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not_found","message":"No such route."}');
      });
    }).listen(0, '127.0.0.1');
    await once(upstream, 'listening');
    prism = await startPrism(`http://127.0.0.1:${(upstream.address() as { port: number }).port}`);
  });

  after(async () => {
    prism?.child.kill('SIGTERM');
    upstream?.close();
  });

  beforeEach(() => {
    received = [];
  });

  /** Prism logs a violation after it has answered: wait for the log to settle. */
  async function violationsAfter(action: () => Promise<unknown>): Promise<string[]> {
    const before = prism.log.responseViolations.length;
    const requestsBefore = prism.log.requests;
    await action();
    for (let i = 0; i < 20 && prism.log.requests === requestsBefore; i++) await new Promise((done) => setTimeout(done, 50));
    await new Promise((done) => setTimeout(done, 300));
    return prism.log.responseViolations.slice(before).map((v) => `${v.request} ${v.message}`);
  }

  it("reads a broken response's violations from Prism's log, and none from a response the contract allows", async () => {
    health = { status: 200, body: '{"status":"ok"}' };
    assert.deepEqual(await violationsAfter(() => send(prism.baseUrl, 'GET', '/healthz', {}, undefined)), []);

    health = { status: 200, body: '{"status":42,"unexpected":true}' };
    const broken = await violationsAfter(() => send(prism.baseUrl, 'GET', '/healthz', {}, undefined));
    assert.ok(
      broken.some((v) => v.startsWith('GET /healthz Violation: response.body') && v.includes('unexpected')),
      broken.join('\n'),
    );
    assert.ok(
      broken.some((v) => v.includes('response.body.status')),
      broken.join('\n'),
    );
  });

  it('counts a status the operation does not document (Prism ranks it a warning)', async () => {
    health = { status: 418, body: '{"error":"teapot","message":"No."}' };
    const undocumented = await violationsAfter(() => send(prism.baseUrl, 'GET', '/healthz', {}, undefined));
    assert.ok(
      undocumented.some((v) => v.includes('Unable to match the returned status code')),
      undocumented.join('\n'),
    );
  });

  it('counts a request that matches no operation as not validated, not as a response violation', async () => {
    const unrouted = prism.log.unrouted;
    assert.deepEqual(await violationsAfter(() => send(prism.baseUrl, 'GET', '/nowhere', {}, undefined)), []);
    assert.equal(prism.log.unrouted, unrouted + 1);
  });

  // The routing rule of conformance/proxy-route.ts checked against Prism itself: a request it calls
  // forwardable must reach the upstream byte for byte; one it routes around must not.
  const cases: Array<{ label: string; method: string; target: string; headers?: Record<string, string>; body?: string | Uint8Array }> = [
    { label: 'a plain GET', method: 'GET', target: '/healthz' },
    { label: 'a query', method: 'GET', target: '/api/v1/verifications?limit=5&status=completed' },
    { label: 'a repeated query parameter in a row', method: 'GET', target: '/api/v1/verifications?status=a&status=b' },
    { label: 'interleaved repeated query parameters', method: 'GET', target: '/api/v1/verifications?status=a&limit=5&status=b' },
    { label: 'a path with a double slash', method: 'GET', target: '/api//v1/verifications' },
    {
      label: 'compact JSON',
      method: 'POST',
      target: '/api/v1/verifications',
      headers: { 'content-type': 'application/json' },
      body: '{"a":1,"b":[true,null]}',
    },
    { label: 'spaced JSON', method: 'POST', target: '/api/v1/verifications', headers: { 'content-type': 'application/json' }, body: '{ "a": 1 }' },
    { label: 'malformed JSON', method: 'POST', target: '/api/v1/verifications', headers: { 'content-type': 'application/json' }, body: '{"a":' },
    { label: 'JSON null', method: 'POST', target: '/api/v1/verifications', headers: { 'content-type': 'application/json' }, body: 'null' },
    { label: 'a JSON string', method: 'POST', target: '/api/v1/verifications', headers: { 'content-type': 'application/json' }, body: '"x"' },
    { label: 'duplicate JSON keys', method: 'POST', target: '/api/v1/verifications', headers: { 'content-type': 'application/json' }, body: '{"a":1,"a":2}' },
    { label: 'a text body', method: 'POST', target: '/api/v1/verifications', headers: { 'content-type': 'text/plain' }, body: 'hello' },
    { label: 'a body on GET', method: 'GET', target: '/healthz', headers: { 'content-type': 'application/json' }, body: '{}' },
    { label: 'a request head over 16 KB', method: 'GET', target: '/healthz', headers: { 'x-padding': 'p'.repeat(20 * 1024) } },
    { label: 'a request head of 12 KB', method: 'GET', target: '/healthz', headers: { 'x-padding': 'p'.repeat(12 * 1024) } },
    {
      label: 'bytes that are not UTF-8',
      method: 'POST',
      target: '/api/v1/verifications',
      headers: { 'content-type': 'application/octet-stream' },
      body: new Uint8Array([0xff, 0xfe, 0x41]),
    },
  ];
  for (const c of cases) {
    it(`routes ${c.label} ${'through or around the proxy as Prism forwards it'}`, async () => {
      health = { status: 200, body: '{"status":"ok"}' };
      const headers = c.headers ?? {};
      const reason = whyNotThroughProxy(c.method, new URL(c.target, 'http://127.0.0.1'), headers, c.body);
      await send(prism.baseUrl, c.method, c.target, headers, c.body).catch(() => 0);
      await new Promise((done) => setTimeout(done, 100));
      const sentBody = c.body === undefined ? Buffer.alloc(0) : Buffer.from(c.body);
      const forwardedAsSent = received.some((r) => r.method === c.method && r.target === c.target && r.body.equals(sentBody));
      assert.equal(
        reason === undefined,
        forwardedAsSent,
        `rule says ${reason ?? 'through the proxy'}; upstream received ${JSON.stringify(received.map((r) => `${r.method} ${r.target} ${r.body.toString('hex')}`))}`,
      );
    });
  }
});
