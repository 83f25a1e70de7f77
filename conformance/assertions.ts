import assert from 'node:assert/strict';
import type { ApiResponse } from './harness.ts';

export type ErrorBody = { error: string; message: string; details?: Array<{ field: string; issue: string }> };

/**
 * The response is the catalogue error `code` with `status` and a message that says what is wrong;
 * with `mentions`, the error also names the offending field (in the message or the details).
 */
export function assertError(response: ApiResponse, status: number, code: string, mentions?: RegExp): ErrorBody {
  assert.equal(response.status, status, `${response.method} ${response.url}: ${response.text}`);
  const body = response.json as ErrorBody;
  assert.equal(body.error, code, response.text);
  assert.equal(typeof body.message, 'string');
  assert.ok(body.message.length > 0, 'the message says what is wrong');
  if (mentions) assert.match(response.text, mentions, 'the error names the offending field');
  return body;
}
