import assert from 'node:assert/strict';
import type { Request } from 'express';
import { listOperations, loadApiDocument, type ApiOperation } from './api-document.ts';
import { contentTypeOfContract, contractContentType, UNSUPPORTED_MEDIA_TYPE } from './content-type.ts';

/** What the middleware hands on (to the validator) for a request with that method, path and header. */
function forwardedBy(operations: ApiOperation[]) {
  const middleware = contentTypeOfContract(operations);
  return (method: string, path: string, contentType: string | undefined): string | undefined => {
    const req = { method, path, headers: contentType === undefined ? {} : { 'content-type': contentType } } as unknown as Request;
    let nexts = 0;
    void middleware(req, {} as never, () => nexts++);
    assert.equal(nexts, 1);
    return req.headers['content-type'];
  };
}

describe('the Content-Type given to the validator', () => {
  const operations = listOperations(loadApiDocument());
  const forward = forwardedBy(operations);

  it('keeps the media type of a body the operation takes, lower-cased, without its parameters', () => {
    for (const header of ['application/json', 'application/json; charset=utf-8', 'Application/JSON ; Charset="UTF-8"', 'application/json;v=1;a=b']) {
      assert.equal(forward('POST', '/api/v1/verifications', header), 'application/json', header);
    }
    for (const header of [
      'text/plain',
      'TEXT/PLAIN; charset=utf-8',
      'application/vnd.api+json',
      'multipart/form-data; boundary=x',
      'application/json, text/plain',
    ]) {
      assert.equal(forward('POST', '/api/v1/verifications', header), UNSUPPORTED_MEDIA_TYPE, header);
    }
    // No header, or one without a media type, is none, as the validator reads it.
    assert.equal(forward('POST', '/api/v1/verifications', undefined), undefined);
    assert.equal(forward('POST', '/api/v1/verifications', ''), undefined);
    assert.equal(forward('POST', '/api/v1/verifications', ' ; charset=utf-8'), undefined);
    // An operation whose body is optional is told the same.
    assert.equal(forward('POST', '/api/v1/webhooks/whk_a/rotate-secret', 'application/json; v=2'), 'application/json');
    assert.equal(forward('POST', '/api/v1/webhooks/whk_a/rotate-secret', 'text/plain'), UNSUPPORTED_MEDIA_TYPE);
  });

  it('gives an operation without a request body no Content-Type at all', () => {
    for (const [method, path] of [
      ['GET', '/api/v1/verifications'],
      ['HEAD', '/api/v1/verifications/vrf_a'],
      ['POST', '/api/v1/verifications/vrf_a/cancel'],
      ['DELETE', '/api/v1/webhooks/whk_a'],
      ['GET', '/healthz'],
    ] as const) {
      assert.equal(forward(method, path, 'application/json'), undefined, `${method} ${path}`);
      assert.equal(forward(method, path, 'application/x-1; v=1'), undefined, `${method} ${path}`);
    }
  });

  it('hands on a bounded set of Content-Types whatever 2,000 requests send', () => {
    const forwarded = new Map<string, Set<string | undefined>>();
    const targets = [
      ['POST', '/api/v1/verifications'],
      ['POST', '/api/v1/webhooks/whk_a/rotate-secret'],
      ['GET', '/api/v1/verifications/vrf_a'],
      ['POST', '/api/v1/verifications/vrf_a/cancel'],
      // No operation's exact path, which the validator's own patterns still match.
      ['GET', '/healthz/'],
    ] as const;
    for (let i = 0; i < 2_000; i++) {
      const header = [`application/json; charset=x${i}`, `application/json; a=${i}`, `application/x-${i}`, `text/plain; v=${i}`][i % 4]!;
      for (const [method, path] of targets) {
        const key = `${method} ${path}`;
        forwarded.set(key, (forwarded.get(key) ?? new Set()).add(forward(method, path, header)));
      }
    }
    assert.deepEqual(Object.fromEntries([...forwarded].map(([key, types]) => [key, [...types].sort()])), {
      'POST /api/v1/verifications': ['application/json', UNSUPPORTED_MEDIA_TYPE],
      'POST /api/v1/webhooks/whk_a/rotate-secret': ['application/json', UNSUPPORTED_MEDIA_TYPE],
      'GET /api/v1/verifications/vrf_a': [undefined],
      'POST /api/v1/verifications/vrf_a/cancel': [undefined],
      'GET /healthz/': ['application/json', UNSUPPORTED_MEDIA_TYPE],
    });
  });

  it('refuses to start with a contract whose request body media types it could not keep', () => {
    const [operation] = operations;
    for (const type of ['application/*', '*/*', 'application/json; charset=utf-8', UNSUPPORTED_MEDIA_TYPE]) {
      assert.throws(() => contentTypeOfContract([{ ...operation!, requestMediaTypes: [type] }]), /cannot keep/, type);
    }
  });

  it('reads the media type as the validator does', () => {
    const json = new Set(['application/json']);
    assert.equal(contractContentType('  APPLICATION/Json  ;x=1', json), 'application/json');
    assert.equal(contractContentType('application/jsonx', json), UNSUPPORTED_MEDIA_TYPE);
    assert.equal(contractContentType(undefined, json), undefined);
  });
});
