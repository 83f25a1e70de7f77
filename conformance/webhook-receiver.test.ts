import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { request } from 'node:https';
import type { JsonObject } from './contract.ts';
import { EventContract } from './event-contract.ts';
import { makeTestCa, signatureOf, verifySignature, WebhookReceiver, type TestCa } from './webhook-receiver.ts';

/**
 * The suite's own webhook tools, without a service: the signature check (6.3, D15) on the signed
 * examples of spec/asyncapi.yaml and on what it must refuse, and the receiver answering from its
 * script and recording raw bytes. The webhook tests lean on both, so both must be shown to work.
 */

/** spec/asyncapi.yaml: "The message examples below are signed with the example secret ... over the compact JSON of the example payload". */
const EXAMPLE_SECRET = 'whsec_example_5b1f0c2e9d4a7f36';

function signedExamples(): Array<{ message: string; event: string; headers: Record<string, string>; body: string; payload: JsonObject }> {
  const contract = EventContract.load();
  return Object.entries(contract.asyncapi.components!.messages!).flatMap(([message, definition]) =>
    definition.examples!.map((example) => {
      // `payload: {$ref: './schemas/events/<event>.json#/examples/0'}`, resolved by hand.
      const ref = /^\.\/schemas\/events\/([^#]+)\.json#\/examples\/(\d+)$/.exec(example.payload.$ref);
      assert.ok(ref, `${message}: unexpected example payload ${JSON.stringify(example.payload)}`);
      const schema = contract.eventSchema(ref[1]!);
      const payload = (schema.examples as JsonObject[])[Number(ref[2])]!;
      return { message, event: definition.name!, headers: example.headers, body: JSON.stringify(payload), payload };
    }),
  );
}

describe('conformance webhook tools: the signature check (6.3, D15) [suite self-test]', () => {
  it('verifies every signed example of spec/asyncapi.yaml, as sha256=<hex> and as bare hex', () => {
    const examples = signedExamples();
    assert.equal(new Set(examples.map((e) => e.event)).size, EventContract.load().eventNames.length, 'one signed example per event');
    for (const { message, headers, body } of examples) {
      const header = headers['X-Service-Signature']!;
      assert.match(header, /^sha256=[0-9a-f]{64}$/, `${message}: the example header`);
      assert.ok(verifySignature(body, header, EXAMPLE_SECRET), `${message}: ${header} is not HMAC-SHA256(${EXAMPLE_SECRET}, ${body})`);
      assert.ok(verifySignature(Buffer.from(body), header.slice('sha256='.length), EXAMPLE_SECRET), `${message}: bare hex`);
      assert.equal(`sha256=${signatureOf(body, EXAMPLE_SECRET)}`, header);
    }
  });

  it('the examples are valid: payload against its event schema, headers against the message', () => {
    const contract = EventContract.load();
    for (const { message, event, headers, payload } of signedExamples()) {
      contract.assertPayload(event, payload, message);
      contract.assertHeaders(event, headers, message);
      assert.equal(headers['X-Service-Event'], event, message);
      assert.equal(payload.event, event, message);
    }
  });

  it('refuses another secret, a changed body (one byte, or the same JSON re-serialised), and malformed headers', () => {
    const { headers, body } = signedExamples()[0]!;
    const header = headers['X-Service-Signature']!;
    const hex = header.slice('sha256='.length);
    assert.ok(!verifySignature(body, header, `${EXAMPLE_SECRET}x`), 'another secret');
    assert.ok(!verifySignature(body, header, EXAMPLE_SECRET.slice('whsec_'.length)), 'the secret without its whsec_ prefix');
    assert.ok(!verifySignature(`${body} `, header, EXAMPLE_SECRET), 'a trailing space');
    assert.ok(!verifySignature(JSON.stringify(JSON.parse(body), null, 2), header, EXAMPLE_SECRET), 'the same JSON, re-serialised');
    assert.ok(!verifySignature(body.replace('"event"', '"Event"'), header, EXAMPLE_SECRET), 'one changed byte');
    for (const malformed of [
      undefined,
      '',
      'sha256=',
      `sha1=${hex}`,
      `sha256=${hex.slice(0, 63)}`,
      `sha256=${hex}00`,
      `sha256=${hex.slice(0, 62)}zz`,
      `sha256=${hex},sha256=${hex.slice(0, 63)}`,
      `sha256=${hex},`,
      Array(5).fill(`sha256=${hex}`).join(','),
      `v1=${hex}`,
    ]) {
      assert.ok(!verifySignature(body, malformed, EXAMPLE_SECRET), `header ${JSON.stringify(malformed)}`);
    }
    assert.ok(!verifySignature(body, [header, header], EXAMPLE_SECRET), 'a repeated header');
  });

  it('a rotation overlap lists two signatures (P25): either secret verifies, a third does not', () => {
    const { body } = signedExamples()[0]!;
    const old = `${EXAMPLE_SECRET}old`;
    const header = `sha256=${signatureOf(body, EXAMPLE_SECRET)}, sha256=${signatureOf(body, old)}`;
    assert.ok(verifySignature(body, header, EXAMPLE_SECRET), 'the new secret');
    assert.ok(verifySignature(body, header, old), 'the old secret');
    assert.ok(verifySignature(body, header.replace(', ', ','), old), 'without the space');
    assert.ok(!verifySignature(body, header, `${EXAMPLE_SECRET}x`), 'another secret');
  });
});

describe('conformance webhook tools: the receiver [suite self-test]', () => {
  let ca: TestCa;
  let receiver: WebhookReceiver;

  before(async function () {
    this.timeout(20_000);
    ca = makeTestCa();
    receiver = await WebhookReceiver.start(ca, '127.0.0.1');
  });
  after(async () => {
    await receiver?.close();
    if (ca) rmSync(ca.dir, { recursive: true, force: true });
  });

  /** POSTs `body` to the receiver, trusting only the test CA, as the service does through NODE_EXTRA_CA_CERTS. */
  const post = (path: string, body: Buffer, headers: Record<string, string> = {}) =>
    new Promise<number>((resolve, reject) => {
      const req = request(receiver.urlFor(path), { method: 'POST', ca: ca.ca, headers: { 'content-type': 'application/json', ...headers } }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('error', reject);
      req.end(body);
    });

  it('serves a certificate for 127.0.0.1 signed by the test CA (and only that CA is trusted here)', async () => {
    assert.equal(await post(receiver.newPath('tls'), Buffer.from('{}')), 200);
    await assert.rejects(
      new Promise((resolve, reject) => request(receiver.urlFor('/x'), { method: 'POST' }, resolve).on('error', reject).end()),
      /self[- ]signed|unable to verify|certificate/i,
    );
  });

  it('answers from the script per path, then the default, and records path, headers and raw bytes', async () => {
    const path = receiver.newPath('script');
    const other = receiver.newPath('other');
    receiver.script(path, 500, { status: 503 });
    receiver.answerAlways(other, 410);
    const body = Buffer.from('{"a": 1,\n "é": "x"}  ');
    assert.deepEqual([await post(path, body), await post(path, body), await post(path, body), await post(other, body)], [500, 503, 200, 410]);
    const recorded = receiver.requestsTo(path);
    assert.equal(recorded.length, 3);
    assert.ok(
      recorded.every((r) => r.rawBody.equals(body)),
      'the raw bytes, unparsed',
    );
    assert.deepEqual(
      recorded.map((r) => r.answeredStatus),
      [500, 503, 200],
    );
    assert.equal(recorded[0]!.headers['content-type'], 'application/json');
    assert.ok(recorded[0]!.receivedAt <= recorded[2]!.receivedAt);
    assert.equal(receiver.requestsTo(other).length, 1, 'paths are kept apart');
  });

  it('waits its scripted delay before answering', async () => {
    const path = receiver.newPath('delay');
    receiver.script(path, { status: 202, delayMs: 300 });
    const started = Date.now();
    assert.equal(await post(path, Buffer.from('{}')), 202);
    assert.ok(Date.now() - started >= 290, `answered after ${Date.now() - started} ms`);
  });

  it('with the secret of a path, answers 401 to a request whose signature does not verify (6.3.3)', async () => {
    const path = receiver.newPath('signed');
    const secret = 'whsec_receiver_self_test';
    receiver.expectSignedWith(path, secret);
    const body = Buffer.from('{"event":"verification.completed"}');
    assert.equal(await post(path, body, { 'x-service-signature': `sha256=${signatureOf(body, secret)}` }), 200);
    assert.equal(await post(path, body, { 'x-service-signature': signatureOf(body, secret) }), 200);
    assert.equal(await post(path, body, { 'x-service-signature': `sha256=${signatureOf(body, 'whsec_other')}` }), 401);
    assert.equal(await post(path, body), 401);
    assert.deepEqual(
      receiver.requestsTo(path).map((r) => r.signature),
      ['valid', 'valid', 'invalid', 'invalid'],
    );
  });

  it('waitFor resolves once enough requests arrived and fails after its timeout, saying what it saw', async () => {
    const path = receiver.newPath('wait');
    const waiting = receiver.waitForCount(path, 2, 5_000);
    await post(path, Buffer.from('{}'));
    await post(path, Buffer.from('{}'));
    assert.equal((await waiting).length, 2);
    await assert.rejects(receiver.waitForCount(path, 3, 100), /3 request\(s\) did not arrive within 100 ms; received 2/);
  });
});
