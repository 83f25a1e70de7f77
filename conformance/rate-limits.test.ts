import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { forEachTarget, PILOT_QUOTA, requireKey, type ApiResponse, type KeyName, type RequestOptions } from './harness.ts';
import { covers } from './matrix.ts';
import { sweptOperations } from './operations.ts';
import { CREATE_PATH, createVerification, randomReference, sleep } from './sandbox.ts';
import { skipBecause } from './skip.ts';

/**
 * Rate limits (section 8, D8): one quota per key for all endpoints, a fixed 60-second window that
 * the X-RateLimit-* headers describe, a per-second burst limit, and 429 rate_limited with
 * Retry-After. The refusals are provoked on the `pilot` key (60/min, burst 10) so the other keys
 * keep their quota. (assertConforms already insists on the headers on every /api/v1 response.)
 */

const SANDBOX_QUOTA_PER_MINUTE = 1000;
/** P11: requests without a valid key, per client address. */
const ANONYMOUS_QUOTA_PER_MINUTE = 120;
const BURST_REQUESTS = 25;
/** Paced below the pilot burst (10/s), so only the minute window can refuse. */
const PACED_INTERVAL_MS = 150;
const PROBE_PATH = '/api/v1/verifications/vrf_unknown';

interface Quota {
  limit: number;
  remaining: number;
  reset: number;
}

function quotaOf(response: ApiResponse): Quota {
  const read = (name: string) => {
    const raw = response.headers.get(name);
    assert.ok(raw !== null && /^\d+$/.test(raw), `${response.method} ${response.url} → ${response.status}: ${name} is ${raw}`);
    return Number(raw);
  };
  return { limit: read('x-ratelimit-limit'), remaining: read('x-ratelimit-remaining'), reset: read('x-ratelimit-reset') };
}

function assertSaneQuota(response: ApiResponse): Quota {
  const quota = quotaOf(response);
  const now = Date.now() / 1000;
  const where = `${response.method} ${response.url} → ${response.status}`;
  assert.ok(quota.limit >= 1, `${where}: X-RateLimit-Limit ${quota.limit}`);
  assert.ok(quota.remaining >= 0 && quota.remaining < quota.limit, `${where}: X-RateLimit-Remaining ${quota.remaining} of ${quota.limit}`);
  // A Unix time within the 60-second window that holds now (one second either side for rounding).
  assert.ok(quota.reset >= Math.floor(now) - 1 && quota.reset <= Math.ceil(now) + 61, `${where}: X-RateLimit-Reset ${quota.reset} at ${now}`);
  return quota;
}

/** Two responses of one key in the same window name (nearly) the same reset time. */
const sameWindow = (a: Quota, b: Quota) => Math.abs(a.reset - b.reset) <= 1;

function assertRateLimited(response: ApiResponse): number {
  assert.equal(response.status, 429, response.text);
  const body = response.json as { error: string; message: string };
  assert.equal(body.error, 'rate_limited');
  assert.ok(body.message.length > 0);
  const retryAfter = response.headers.get('retry-after');
  assert.ok(retryAfter !== null && /^\d+$/.test(retryAfter) && Number(retryAfter) >= 1, `Retry-After is whole seconds, at least 1: ${retryAfter}`);
  assertSaneQuota(response);
  return Number(retryAfter);
}

const BASE62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const ANONYMOUS_BURST_REQUESTS = 50;

/** A well-formed key nobody issued: refused as 401, so it counts against the client address. */
const unissuedKey = (mode: string) =>
  `${mode === 'production' ? 'civ_live_' : 'civ_test_'}${Array.from(randomBytes(40), (byte) => BASE62[byte % BASE62.length]).join('')}`;

forEachTarget((target) => {
  describe('happy: rate-limit headers (D8) [header:X-RateLimit-Limit] [header:X-RateLimit-Remaining] [header:X-RateLimit-Reset] [limit:sandbox quota] [limit:quota scope]', () => {
    it('on successes and errors alike, one quota for all endpoints: Remaining goes down by one with each request', async () => {
      const key: KeyName = 'lender';
      const requests: Array<() => Promise<ApiResponse>> = [
        () => createVerification(target, { obligor_reference: randomReference('conformance-rl-'), creator_platforms: ['youtube'] }, { key }),
        () => target.api.get(PROBE_PATH, { key }),
        () => target.api.get(`${PROBE_PATH}/tape`, { key }),
        () => createVerification(target, { obligor_reference: '', creator_platforms: ['youtube'] }, { key }),
        () => target.api.get('/api/v1/no-such-resource', { key }),
        () => target.api.get('/api/v1/gdpr/access?obligor_id=x', { key }),
      ];
      const responses: ApiResponse[] = [];
      for (const request of requests) responses.push(await request());
      // A success, not-founds, a validation error and a refused role: all counted against the one quota.
      assert.deepEqual(
        responses.map((r) => r.status),
        [201, 404, 404, 400, 404, 403],
      );
      const quotas = responses.map(assertSaneQuota);
      for (let i = 1; i < quotas.length; i++) {
        const [before, after] = [quotas[i - 1]!, quotas[i]!];
        assert.equal(after.limit, before.limit, 'one limit for all endpoints');
        if (!sameWindow(before, after)) continue; // a new window began between the two
        assert.equal(after.remaining, before.remaining - 1, `request ${i + 1} counted once against the same quota (${JSON.stringify(quotas)})`);
      }
    });

    it('a request without a valid key carries the headers too (limited per client address)', async () => {
      const response = await target.api.get(PROBE_PATH, { key: null });
      assert.equal(response.status, 401);
      const quota = assertSaneQuota(response);
      if (target.canOperate) assert.equal(quota.limit, ANONYMOUS_QUOTA_PER_MINUTE, 'P11: 120 a minute per client address');
    });

    it('a sandbox key gets 1000 requests a minute (D8, P11)', async function () {
      if (!target.canOperate) {
        skipBecause(this, 'an operator may have given the external key its own limit');
      }
      assert.equal(quotaOf(await target.api.get(PROBE_PATH)).limit, SANDBOX_QUOTA_PER_MINUTE);
    });

    it('the pilot key shows its own quota of 60 a minute (a per-key limit, D8)', async function () {
      requireKey(this, target, 'pilot');
      assert.equal(quotaOf(await target.api.get(PROBE_PATH, { key: 'pilot', unpaced: true })).limit, PILOT_QUOTA.perMinute);
    });
  });

  describe('errors: rate_limited (429) on the pilot key (60/min, burst 10) [limit:pilot quota] [header:Retry-After]', function () {
    this.timeout(60_000);

    it(`${BURST_REQUESTS} requests at once trip the burst limit of 10: 429 rate_limited with Retry-After and the rate headers; waiting Retry-After is enough`, async function () {
      requireKey(this, target, 'pilot');
      const options: RequestOptions = { key: 'pilot', unpaced: true };
      const started = Date.now();
      const responses = await Promise.all(Array.from({ length: BURST_REQUESTS }, () => target.api.get(PROBE_PATH, options)));
      const elapsed = Date.now() - started;
      const refused = responses.filter((r) => r.status === 429);
      const accepted = responses.filter((r) => r.status !== 429);
      assert.ok(
        accepted.every((r) => r.status === 404),
        `the rest are answered: ${accepted.map((r) => r.status).join(',')}`,
      );
      assert.ok(refused.length > 0, `no 429 among ${BURST_REQUESTS} requests in ${elapsed} ms`);
      if (elapsed < 1000) assert.ok(accepted.length <= PILOT_QUOTA.burst, `${accepted.length} accepted within one second, burst is ${PILOT_QUOTA.burst}`);
      const waits = refused.map(assertRateLimited);
      for (const response of refused) assert.equal(quotaOf(response).limit, PILOT_QUOTA.perMinute);
      // Section 7: a client that waits Retry-After seconds gets through.
      await sleep(Math.max(...waits) * 1000);
      const after = await target.api.get(PROBE_PATH, options);
      assert.equal(after.status, 404, `after waiting ${Math.max(...waits)} s: ${after.status} ${after.text}`);
    });

    it('paced requests run the minute window down to Remaining 0, then 429 with Retry-After until its reset', async function () {
      requireKey(this, target, 'pilot');
      const seen: Array<{ response: ApiResponse; quota: Quota }> = [];
      let refusal: ApiResponse | undefined;
      for (let i = 0; i < PILOT_QUOTA.perMinute + 20 && !refusal; i++) {
        const response = await target.api.get(PROBE_PATH, { key: 'pilot', unpaced: true });
        if (response.status === 429) refusal = response;
        else {
          assert.equal(response.status, 404, response.text);
          seen.push({ response, quota: assertSaneQuota(response) });
          await sleep(PACED_INTERVAL_MS);
        }
      }
      assert.ok(refusal, `no 429 after ${seen.length} paced requests on a key of ${PILOT_QUOTA.perMinute} a minute`);
      const retryAfter = assertRateLimited(refusal);
      const refusedQuota = quotaOf(refusal);
      assert.equal(refusedQuota.remaining, 0, 'a refused request has nothing remaining');
      // The accepted requests of the refusing window count down to 0, one at a time.
      const window = seen.filter(({ quota }) => sameWindow(quota, refusedQuota)).map(({ quota }) => quota.remaining);
      assert.ok(window.length > 0 && window.length <= PILOT_QUOTA.perMinute, `${window.length} accepted in the window`);
      assert.equal(window.at(-1), 0, `the last accepted request left 0: ${window.join(',')}`);
      for (let i = 1; i < window.length; i++) assert.equal(window[i], window[i - 1]! - 1, `Remaining counts down by one: ${window.join(',')}`);
      const untilReset = refusedQuota.reset - Date.now() / 1000;
      assert.ok(retryAfter <= Math.ceil(untilReset) + 1, `Retry-After ${retryAfter} s is not past the reset in ${untilReset.toFixed(1)} s`);
      assert.ok(retryAfter <= 60, `Retry-After ${retryAfter} s is within one window`);
      // Still refused a moment later: the window, not the burst, is what refuses now.
      await sleep(1100);
      if (Date.now() / 1000 < refusedQuota.reset - 1) assertRateLimited(await target.api.get(PROBE_PATH, { key: 'pilot', unpaced: true }));
      // And the lender's other keys are not affected: the quota is per key.
      const other = await target.api.get(`${CREATE_PATH}/vrf_unknown`, { key: 'lender' });
      assert.equal(other.status, 404, other.text);
    });

    it(`a production key gets 300 requests a minute (section 8)${covers('limit:production quota', 'header:X-RateLimit-Limit')}`, async function () {
      if (target.mode !== 'production') skipBecause(this, 'needs a production deployment (a civ_live_ key); this one is a sandbox');
      const response = await target.api.get(PROBE_PATH);
      assert.equal(quotaOf(response).limit, 300, response.text);
    });

    // One quota for all endpoints (section 8): once the key's quota is spent, every operation is refused.
    for (const operation of sweptOperations().filter(({ role }) => role !== null)) {
      it(`${operation.operationId}: refused with 429 rate_limited while the key's quota is spent${covers(`op:${operation.operationId} 429 rate_limited`)}`, async function () {
        requireKey(this, target, 'pilot');
        const statuses: number[] = [];
        // Spend the burst (or find the minute already spent), then ask at once; a second boundary
        // passing between the two gives the burst back, so a few rounds are allowed.
        for (let round = 0; round < 5; round++) {
          await Promise.all(Array.from({ length: PILOT_QUOTA.burst + 1 }, () => target.api.get(PROBE_PATH, { key: 'pilot', unpaced: true })));
          const response = await target.api.request(operation.method, operation.path, {
            key: 'pilot',
            unpaced: true,
            headers: operation.headers,
            ...(operation.body === undefined ? {} : { json: operation.body }),
          });
          if (response.status === 429) {
            assertRateLimited(response);
            return;
          }
          statuses.push(response.status);
        }
        assert.fail(`${operation.method} ${operation.path} was never refused with the quota spent: ${statuses.join(', ')}`);
      });
    }
  });

  describe('security: requests without a valid key are limited per client address (D8) [limit:quota scope] [header:Retry-After]', function () {
    this.timeout(30_000);

    it(`${ANONYMOUS_BURST_REQUESTS} requests at once with keys nobody issued: some are refused 429 rate_limited, so guessing keys is slow`, async () => {
      const responses = await Promise.all(
        Array.from({ length: ANONYMOUS_BURST_REQUESTS }, () => target.api.get(PROBE_PATH, { apiKey: unissuedKey(target.mode), unpaced: true })),
      );
      assert.ok(
        responses.every((r) => r.status === 401 || r.status === 429),
        `statuses: ${responses.map((r) => r.status).join(',')}`,
      );
      const refused = responses.filter((r) => r.status === 429);
      assert.ok(refused.length > 0, `none of ${ANONYMOUS_BURST_REQUESTS} unauthenticated requests at once was refused`);
      const waits = refused.map(assertRateLimited);
      // The lender's own key is not affected by what its address sent without one.
      const keyed = await target.api.get(PROBE_PATH, { key: 'lender' });
      assert.equal(keyed.status, 404, keyed.text);
      // Leave the address's burst window as found, for the tests after this one.
      await sleep(Math.max(...waits) * 1000);
    });
  });
});
