import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { assertError } from './assertions.ts';
import { forEachTarget, requireKey, requireSandbox, type Target } from './harness.ts';
import { skipBecause } from './skip.ts';
import {
  cancelVerification,
  CREATE_PATH,
  createVerification,
  created,
  getVerification,
  randomReference,
  type CreateBody,
  type Verification,
} from './sandbox.ts';

/**
 * POST /api/v1/verifications `return_url`: the way back to the lender's app. Only an origin the
 * lender registered is taken (never an open redirect); every page the consent link ends on links
 * to the URL with `verification_id` and `outcome` (the verification's status) added to its query
 * and nothing else. The suite reads the pages' markup only for links, never their wording.
 */

/** An origin nobody registers: a fresh subdomain of a reserved name (RFC 2606). */
const unregistered = () => `https://unregistered-${randomUUID().slice(0, 8)}.conformance.example`;

/** The links of the page at the consent URL that lead to `origin`, and the page's status. */
async function returnLinksOf(consentUrl: string, origin: string): Promise<{ status: number; links: URL[] }> {
  const response = await fetch(consentUrl, { headers: { accept: 'text/html' }, redirect: 'manual' });
  const html = await response.text();
  const links = [...html.matchAll(/<a\s[^>]*href="([^"]*)"/g)]
    .map((m) => new URL(m[1]!.replace(/&amp;/g, '&'), consentUrl))
    .filter((url) => url.origin === origin);
  return { status: response.status, links };
}

/** Asserts the one link back: the return URL as given, plus `verification_id` and `outcome`, nothing else. */
function assertReturnLink(links: URL[], returnUrl: string, verification: Verification, outcome: string): void {
  assert.equal(links.length, 1, `one link back to the lender's app, found ${links.map(String).join(', ') || 'none'}`);
  const link = links[0]!;
  const given = new URL(returnUrl);
  assert.equal(`${link.origin}${link.pathname}`, `${given.origin}${given.pathname}`);
  const expected = new URLSearchParams(given.search);
  expected.set('verification_id', verification.verification_id);
  expected.set('outcome', outcome);
  assert.deepEqual(
    [...link.searchParams.entries()].sort(),
    [...expected.entries()].sort(),
    "the query: the lender's own, verification_id and outcome, nothing else",
  );
  assert.equal(link.hash, '');
}

function requireReturnOrigin(context: Mocha.Context, target: Target): string {
  if (!target.returnOrigin) skipBecause(context, 'pass --return-origin (CONFORMANCE_RETURN_ORIGIN), an origin registered for the account of --key, to run it');
  return target.returnOrigin;
}

forEachTarget((target) => {
  const realCreator = (extra: { return_url?: string } = {}): CreateBody => ({
    obligor_reference: randomReference('conformance-return-'),
    creator_platforms: ['youtube'],
    ...extra,
  });

  describe('errors: a return_url whose origin the lender did not register [op:createVerification 400 validation_error]', () => {
    it('400 validation_error naming body.return_url; nothing is created and the Idempotency-Key stays free', async () => {
      const body = realCreator({ return_url: `${unregistered()}/back` });
      const idempotencyKey = randomUUID();
      const refused = await createVerification(target, body, { idempotencyKey });
      const error = assertError(refused, 400, 'validation_error', /return_url/);
      assert.ok(
        error.details?.some((detail) => detail.field === 'body.return_url'),
        JSON.stringify(error),
      );
      const list = await target.api.get(`${CREATE_PATH}?obligor_reference=${encodeURIComponent(body.obligor_reference)}`);
      assert.equal(list.status, 200, list.text);
      assert.deepEqual((list.json as { data: unknown[] }).data, [], 'the refused creation left a verification');
      // Nothing was stored under the key: the same key with a valid body creates, not 409 or a replay.
      const { return_url: _refused, ...withoutReturn } = body;
      const retried = await createVerification(target, withoutReturn, { idempotencyKey });
      assert.equal(retried.status, 201, retried.text);
      assert.equal(retried.headers.get('idempotent-replayed'), null);
      assert.equal((retried.json as Verification).return_url, undefined);
    });

    it('plain http to a public host, credentials or a fragment are refused even on a registered origin', async function () {
      const origin = requireReturnOrigin(this, target);
      const host = new URL(origin).host;
      for (const returnUrl of [`http://${host}/back`, `https://user:secret@${host}/back`, `${origin}/back#section`]) {
        assertError(await createVerification(target, realCreator({ return_url: returnUrl })), 400, 'validation_error', /return_url/);
      }
    });

    it("another lender cannot lead back to this lender's origin", async function () {
      const origin = requireReturnOrigin(this, target);
      requireKey(this, target, 'otherLender');
      const refused = await createVerification(target, realCreator({ return_url: `${origin}/back` }), { key: 'otherLender' });
      assertError(refused, 400, 'validation_error', /return_url/);
    });
  });

  describe('happy: the consent link ends with a link back to the lender [op:createVerification 201]', () => {
    it("the resource shows the return_url; a completed verification's page links back with outcome=completed", async function () {
      requireSandbox(this, target);
      const origin = requireReturnOrigin(this, target);
      const returnUrl = `${origin}/onboarding/income?step=3&lang=fr`;
      const verification = await created(target, { ...realCreator({ return_url: returnUrl }), obligor_reference: 'demo_prime_multi' });
      assert.equal(verification.status, 'completed');
      assert.equal(verification.return_url, returnUrl);
      assert.equal((await getVerification(target, verification.verification_id)).return_url, returnUrl);
      const page = await returnLinksOf(verification.consent_url, origin);
      assertReturnLink(page.links, returnUrl, verification, 'completed');
    });

    it("a cancelled verification's page links back with outcome=cancelled; one without a return_url links nowhere", async function () {
      const origin = requireReturnOrigin(this, target);
      const returnUrl = `${origin}/back`;
      const verification = await created(target, realCreator({ return_url: returnUrl }));
      assert.equal(verification.return_url, returnUrl);
      assert.equal((await cancelVerification(target, verification.verification_id)).status, 200);
      const page = await returnLinksOf(verification.consent_url, origin);
      assert.equal(page.status, 410);
      assertReturnLink(page.links, returnUrl, verification, 'cancelled');

      const without = await created(target, realCreator());
      await cancelVerification(target, without.verification_id);
      assert.deepEqual((await returnLinksOf(without.consent_url, origin)).links, []);
    });
  });
});
