import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { signWebhookBodyWith, verifyWebhookSignature } from './verify-signature.ts';

describe('webhook signature helper (6.3, D15)', () => {
  const secret = 'whsec_0123456789abcdefghijklmnopqrstuv';
  const body = Buffer.from('{"event":"verification.completed","verification_id":"vrf_abcdefgh12345678"}');

  it('accepts sha256=<hex> and bare hex of the exact body', () => {
    const header = signWebhookBodyWith(body, [secret]);
    assert.match(header, /^sha256=[0-9a-f]{64}$/);
    assert.equal(verifyWebhookSignature(body, header, secret), true);
    assert.equal(verifyWebhookSignature(body.toString(), header.slice('sha256='.length), secret), true);
    assert.equal(verifyWebhookSignature(body, header.toUpperCase().replace('SHA256=', 'sha256='), secret), true);
  });

  it('refuses another body, another secret, a malformed or missing header', () => {
    const header = signWebhookBodyWith(body, [secret]);
    assert.equal(verifyWebhookSignature(Buffer.concat([body, Buffer.from(' ')]), header, secret), false);
    assert.equal(verifyWebhookSignature(body, header, `${secret}x`), false);
    assert.equal(verifyWebhookSignature(body, 'sha256=abc', secret), false);
    assert.equal(verifyWebhookSignature(body, 'sha1=' + 'a'.repeat(64), secret), false);
    assert.equal(verifyWebhookSignature(body, undefined, secret), false);
  });

  it('accepts the list sent during a rotation with either secret, and nothing else (P25)', () => {
    const old = `${secret}-old`;
    const header = signWebhookBodyWith(body, [secret, old]);
    assert.match(header, /^sha256=[0-9a-f]{64}, sha256=[0-9a-f]{64}$/);
    assert.equal(verifyWebhookSignature(body, header, secret), true);
    assert.equal(verifyWebhookSignature(body, header, old), true);
    assert.equal(verifyWebhookSignature(body, header.replace(', ', ','), old), true);
    assert.equal(verifyWebhookSignature(body, header, `${secret}-other`), false);
    // A list is no looser than its entries: one malformed entry, or too many, refuses the whole header.
    assert.equal(verifyWebhookSignature(body, `${header}, sha256=abc`, secret), false);
    assert.equal(verifyWebhookSignature(body, `${header}, `, secret), false);
    assert.equal(
      verifyWebhookSignature(
        body,
        Array(5)
          .fill(signWebhookBodyWith(body, [secret]))
          .join(','),
        secret,
      ),
      false,
    );
  });

  it('verifies the signed examples published in spec/asyncapi.yaml', () => {
    const spec = parse(readFileSync(new URL('../../spec/asyncapi.yaml', import.meta.url), 'utf8'));
    const exampleSecret = /`(whsec_example_[0-9a-f]+)`/.exec(spec.info.description)![1]!;
    const messages = Object.values<{ examples: Array<{ headers: Record<string, string>; payload: { $ref: string } }> }>(spec.components.messages);
    let checked = 0;
    for (const message of messages) {
      for (const example of message.examples) {
        const [file, pointer] = example.payload.$ref.split('#');
        const schema = JSON.parse(readFileSync(new URL(`../../spec/${file!.replace('./', '')}`, import.meta.url), 'utf8'));
        const payload = schema.examples[Number(pointer!.split('/').pop())];
        assert.equal(verifyWebhookSignature(JSON.stringify(payload), example.headers['X-Service-Signature'], exampleSecret), true);
        checked++;
      }
    }
    assert.equal(checked, messages.length);
    assert.ok(checked >= 5);
  });
});
