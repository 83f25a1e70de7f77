import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { assertError } from './assertions.ts';
import { assertEventRequest, transitionRows } from './event-contract.ts';
import { forEachTarget, requireKey, requireSandbox, type Target } from './harness.ts';
import { createVerification, randomReference, type Verification } from './sandbox.ts';
import { attemptWaitMs, requireWebhooks, WebhookSession } from './webhooks.ts';

/**
 * POST /api/v1/verifications/{id}/overlays (4.9, D20) and the `tape.updated` event it causes: every
 * status of the operation, what the overlay changes in the tape at each schema version, and the
 * event's signature, schema, subscription filter and order after `verification.completed`.
 */

interface Tape {
  schema_version: string;
  tape_generated_at: string;
  as_of_date: string;
  overlay_blocks?: Array<{ overlay_id: string; type: string; status: string }>;
  islamic_compliance?: { status: string };
  eligibility: { eligible?: boolean; tier?: string; max_advance_eur?: number; flags: Array<{ code: string; severity: string; message: string }> };
  cashflow_summary?: unknown;
}

/** The flags an aml, kyb or credit_bureau verdict sets (P34, docs/scoring.md section 4). */
const SCREENING_FLAGS = ['AML_HIT', 'AML_REVIEW_REQUIRED', 'KYB_FAILED', 'KYB_REVIEW_REQUIRED', 'CREDIT_BUREAU_ADVERSE', 'CREDIT_BUREAU_REVIEW_REQUIRED'];
const screeningFlags = (tape: Tape) => tape.eligibility.flags.filter((f) => SCREENING_FLAGS.includes(f.code));
const verdict = (type: 'aml' | 'kyb' | 'credit_bureau', status: string, observedAt: string) => ({
  type,
  provider: 'Screen Co',
  reference: `scr-${randomUUID().slice(0, 8)}`,
  status,
  observed_at: observedAt,
});

const screening = (status: string, observedAt = '2026-11-20T09:30:00Z') => ({
  type: 'sharia_screening',
  provider: 'Amanah Screening Ltd',
  reference: `scr-${randomUUID().slice(0, 8)}`,
  status,
  observed_at: observedAt,
  data: { methodology: 'AAOIFI', haram_revenue_share: 0 },
});

forEachTarget((target: Target) => {
  const overlaysPath = (id: string) => `/api/v1/verifications/${id}/overlays`;
  const attach = (id: string, body: unknown, options: { key?: 'lender' | 'otherLender' | 'gdpr'; idempotencyKey?: string } = {}) =>
    target.api.post(overlaysPath(id), {
      key: options.key ?? 'lender',
      json: body,
      ...(options.idempotencyKey ? { headers: { 'idempotency-key': options.idempotencyKey } } : {}),
    });
  /** A synthetic creator completes at creation (section 3): a completed verification to attach to. */
  const completedMurabaha = async () => {
    const response = await createVerification(target, {
      obligor_reference: 'demo_prime_multi',
      creator_platforms: ['youtube', 'stripe'],
      product_type: 'murabaha',
    });
    assert.equal(response.status, 201, response.text);
    const verification = response.json as Verification;
    assert.equal(verification.status, 'completed');
    return verification;
  };
  /** rbf, the default product type: nothing but a screening overlay can make it ineligible. */
  const completedRbf = async () => {
    const response = await createVerification(target, { obligor_reference: 'demo_prime_multi', creator_platforms: ['youtube', 'stripe'] });
    assert.equal(response.status, 201, response.text);
    const verification = response.json as Verification;
    assert.equal(verification.status, 'completed');
    return verification;
  };
  const tapeOf = async (id: string, version = '2.0.0') => {
    const response = await target.api.get(`/api/v1/verifications/${id}/tape?schema_version=${version}`, { key: 'lender' });
    assert.equal(response.status, 200, response.text);
    return response.json as Tape;
  };

  describe('happy: attach an overlay to a completed tape (4.9, D20) [op:createOverlay 201]', () => {
    it('a sharia_screening overlay decides islamic_compliance; the income figures and tape_generated_at stay as they were', async function () {
      requireSandbox(this, target);
      const verification = await completedMurabaha();
      const before = await tapeOf(verification.verification_id);
      assert.equal(before.islamic_compliance?.status, 'pending');
      const response = await attach(verification.verification_id, screening('compliant'));
      assert.equal(response.status, 201, response.text);
      const overlay = response.json as { overlay_id: string; verification_id: string; type: string };
      assert.match(overlay.overlay_id, /^ovl_/);
      assert.equal(overlay.verification_id, verification.verification_id);
      const after = await tapeOf(verification.verification_id);
      assert.equal(after.islamic_compliance?.status, 'compliant');
      assert.deepEqual(
        after.overlay_blocks?.map((o) => o.overlay_id),
        [overlay.overlay_id],
      );
      assert.equal(after.tape_generated_at, before.tape_generated_at, 'the same income, scored as of the same time (P21)');
      assert.deepEqual(after.cashflow_summary, before.cashflow_summary, 'an overlay changes no income figure');
    });

    it('overlay_blocks shows from schema 1.2.0 on and is absent below it', async function () {
      requireSandbox(this, target);
      const created = await createVerification(target, { obligor_reference: 'demo_prime_multi', creator_platforms: ['youtube', 'stripe'] });
      const verification = created.json as Verification;
      const response = await attach(verification.verification_id, {
        type: 'credit_bureau',
        provider: 'Bureau Ltd',
        status: 'clear',
        observed_at: '2026-11-19T10:00:00Z',
      });
      assert.equal(response.status, 201, response.text);
      const { overlay_id: overlayId } = response.json as { overlay_id: string };
      for (const version of ['1.2.0', '2.0.0']) {
        assert.deepEqual(
          (await tapeOf(verification.verification_id, version)).overlay_blocks?.map((o) => o.overlay_id),
          [overlayId],
          version,
        );
      }
      for (const version of ['1.0.0', '1.1.0']) assert.equal('overlay_blocks' in (await tapeOf(verification.verification_id, version)), false, version);
    });

    it('the latest verdict by observed_at decides, whatever the order of attachment', async function () {
      requireSandbox(this, target);
      const verification = await completedMurabaha();
      assert.equal((await attach(verification.verification_id, screening('non_compliant', '2026-11-21T08:00:00Z'))).status, 201);
      assert.equal((await attach(verification.verification_id, screening('compliant', '2026-11-01T08:00:00Z'))).status, 201);
      const tape = await tapeOf(verification.verification_id);
      assert.equal(tape.islamic_compliance?.status, 'non_compliant');
      assert.equal(tape.overlay_blocks?.length, 2);
    });

    it('clear aml, kyb and credit_bureau verdicts are carried as data and change no eligibility', async function () {
      requireSandbox(this, target);
      const verification = await completedMurabaha();
      const before = await tapeOf(verification.verification_id);
      for (const type of ['credit_bureau', 'kyb', 'aml']) {
        const response = await attach(verification.verification_id, {
          type,
          provider: 'Bureau Ltd',
          status: 'clear',
          observed_at: '2026-11-19T10:00:00Z',
          data: { score: 712 },
        });
        assert.equal(response.status, 201, response.text);
      }
      const tape = await tapeOf(verification.verification_id);
      assert.deepEqual(tape.overlay_blocks?.map((o) => o.type).sort(), ['aml', 'credit_bureau', 'kyb']);
      assert.equal(tape.islamic_compliance?.status, 'pending', 'only a sharia_screening decides islamic_compliance');
      assert.deepEqual(tape.eligibility, before.eligibility, 'a clear verdict leaves the eligibility as it was');
    });

    it('an aml hit: AML_HIT, critical, and ineligible at every schema version; a later clear lifts it; the dates stay (P34)', async function () {
      requireSandbox(this, target);
      const { verification_id: id } = await completedRbf();
      const before = await tapeOf(id);
      assert.equal(before.eligibility.eligible, true, 'demo_prime_multi is eligible without overlays');
      assert.deepEqual(screeningFlags(before), []);
      assert.equal((await attach(id, verdict('aml', 'hit', '2026-11-20T09:30:00Z'))).status, 201);
      for (const version of ['1.0.0', '1.1.0', '1.2.0', '2.0.0']) {
        const tape = await tapeOf(id, version);
        assert.deepEqual(
          screeningFlags(tape).map((f) => [f.code, f.severity]),
          [['AML_HIT', 'critical']],
          `${version}: a reader of any version sees the hit`,
        );
        assert.match(screeningFlags(tape)[0]!.message, /Screen Co.*2026-11-20T09:30:00Z.*"hit"/, version);
        assert.deepEqual([tape.eligibility.eligible, tape.eligibility.tier, tape.eligibility.max_advance_eur], [false, 'ineligible', 0], version);
      }
      const hit = await tapeOf(id);
      assert.equal(hit.tape_generated_at, before.tape_generated_at, 'the same income, scored as of the same time (P21)');
      assert.equal(hit.as_of_date, before.as_of_date);

      assert.equal((await attach(id, verdict('aml', 'Clear', '2026-11-22T09:30:00Z'))).status, 201);
      const cleared = await tapeOf(id);
      assert.deepEqual(screeningFlags(cleared), [], 'a later clear lifts the hit');
      assert.deepEqual(cleared.eligibility, before.eligibility);
      assert.equal(cleared.tape_generated_at, before.tape_generated_at);
      assert.equal(cleared.as_of_date, before.as_of_date);
    });

    it('an aml verdict observed earlier than the one on the tape does not overturn it, whatever the order of attachment (P34)', async function () {
      requireSandbox(this, target);
      const { verification_id: id } = await completedRbf();
      assert.equal((await attach(id, verdict('aml', 'clear', '2026-11-22T09:30:00Z'))).status, 201);
      assert.equal((await attach(id, verdict('aml', 'hit', '2026-11-20T09:30:00Z'))).status, 201);
      const tape = await tapeOf(id);
      assert.deepEqual(screeningFlags(tape), [], 'the clear of the 22nd decides, not the hit of the 20th attached after it');
      assert.equal(tape.eligibility.eligible, true);
    });

    it('a status the service does not read asks for review and does not lift an aml hit (P34)', async function () {
      requireSandbox(this, target);
      const { verification_id: id } = await completedRbf();
      assert.equal((await attach(id, verdict('aml', 'hit', '2026-11-20T09:30:00Z'))).status, 201);
      assert.equal((await attach(id, verdict('aml', 'under investigation', '2026-11-22T09:30:00Z'))).status, 201);
      const tape = await tapeOf(id);
      assert.deepEqual(
        screeningFlags(tape).map((f) => [f.code, f.severity]),
        [
          ['AML_HIT', 'critical'],
          ['AML_REVIEW_REQUIRED', 'warning'],
        ],
      );
      assert.equal(tape.eligibility.eligible, false, 'only a readable clear lifts a hit');
    });

    it('a failed kyb check makes the tape ineligible; an adverse credit bureau record keeps it at subprime or below (P34)', async function () {
      requireSandbox(this, target);
      const kyb = await completedRbf();
      assert.equal((await attach(kyb.verification_id, verdict('kyb', 'failed', '2026-11-20T09:30:00Z'))).status, 201);
      const failed = await tapeOf(kyb.verification_id);
      assert.deepEqual(
        screeningFlags(failed).map((f) => [f.code, f.severity]),
        [['KYB_FAILED', 'critical']],
      );
      assert.deepEqual([failed.eligibility.eligible, failed.eligibility.tier], [false, 'ineligible']);

      const bureau = await completedRbf();
      assert.equal((await attach(bureau.verification_id, verdict('credit_bureau', 'adverse', '2026-11-20T09:30:00Z'))).status, 201);
      const adverse = await tapeOf(bureau.verification_id);
      assert.deepEqual(
        screeningFlags(adverse).map((f) => [f.code, f.severity]),
        [['CREDIT_BUREAU_ADVERSE', 'warning']],
      );
      assert.equal(adverse.eligibility.tier, 'subprime', 'demo_prime_multi is prime without it');
    });

    it('with an Idempotency-Key: the same request is answered again without a second overlay; another body is 409 [op:createOverlay 409 duplicate_request] [header:Idempotency-Key]', async function () {
      requireSandbox(this, target);
      const verification = await completedMurabaha();
      const idempotencyKey = randomUUID();
      const body = screening('compliant');
      const first = await attach(verification.verification_id, body, { idempotencyKey });
      const again = await attach(verification.verification_id, body, { idempotencyKey });
      assert.equal(again.status, 201, again.text);
      assert.equal(again.headers.get('idempotent-replayed'), 'true');
      assert.deepEqual(again.json, first.json);
      assert.equal((await tapeOf(verification.verification_id)).overlay_blocks?.length, 1);
      assertError(await attach(verification.verification_id, screening('non_compliant'), { idempotencyKey }), 409, 'duplicate_request');
    });
  });

  describe('errors: overlays (4.9, section 7) [op:createOverlay 404 not_found] [op:createOverlay 422 unprocessable] [op:createOverlay 400 validation_error]', () => {
    it('a verification that is not completed: 422 unprocessable naming its status', async () => {
      const created = await createVerification(target, { obligor_reference: randomReference('conformance-overlay-'), creator_platforms: ['stripe'] });
      const verification = created.json as Verification;
      assertError(await attach(verification.verification_id, screening('compliant')), 422, 'unprocessable', /pending_consent/);
    });

    it('an unknown verification, and another lender’s: 404 not_found', async function () {
      assertError(await attach(`vrf_${randomUUID().replace(/-/g, '')}`, screening('compliant')), 404, 'not_found');
      requireKey(this, target, 'otherLender');
      requireSandbox(this, target);
      const verification = await completedMurabaha();
      assertError(await attach(verification.verification_id, screening('compliant'), { key: 'otherLender' }), 404, 'not_found');
    });

    it('a body that breaks the schema: 400 validation_error naming the field; a missing field: 400 bad_request', async function () {
      requireSandbox(this, target);
      const verification = await completedMurabaha();
      assertError(await attach(verification.verification_id, { ...screening('compliant'), type: 'horoscope' }), 400, 'validation_error', /type/);
      assertError(await attach(verification.verification_id, { ...screening('compliant'), observed_at: 'yesterday' }), 400, 'validation_error', /observed_at/);
      assertError(await attach(verification.verification_id, { ...screening('compliant'), extra: 1 }), 400, 'validation_error');
      const { provider: _omitted, ...withoutProvider } = screening('compliant');
      assertError(await attach(verification.verification_id, withoutProvider), 400, 'bad_request', /provider/);
    });

    it('a provider payload over 64 KiB: 400 validation_error naming data; at 64 KiB it is accepted', async function () {
      requireSandbox(this, target);
      const verification = await completedMurabaha();
      const payload = (bytes: number) => ({ blob: 'x'.repeat(bytes - '{"blob":""}'.length) });
      assertError(await attach(verification.verification_id, { ...screening('compliant'), data: payload(64 * 1024 + 1) }), 400, 'validation_error', /data/);
      assert.equal((await attach(verification.verification_id, { ...screening('compliant'), data: payload(64 * 1024) })).status, 201);
    });

    it('the 64 KiB are bytes of UTF-8, not characters: multi-byte text over 64 KiB in bytes (under it in characters) is refused, exactly 64 KiB accepted', async function () {
      requireSandbox(this, target);
      const verification = await completedMurabaha();
      // `{"blob":"…"}` serialised to exactly `bytes` bytes of UTF-8, mostly '€' (3 bytes, 1 character).
      const payload = (bytes: number) => {
        const room = bytes - '{"blob":""}'.length;
        return { blob: '€'.repeat(Math.floor(room / 3)) + 'x'.repeat(room % 3) };
      };
      const over = payload(64 * 1024 + 1);
      assert.equal(Buffer.byteLength(JSON.stringify(over)), 64 * 1024 + 1);
      assert.ok(JSON.stringify(over).length < (64 * 1024) / 2, 'far under the limit counted in characters');
      assertError(await attach(verification.verification_id, { ...screening('compliant'), data: over }), 400, 'validation_error', /data/);
      assert.equal((await tapeOf(verification.verification_id)).overlay_blocks?.length ?? 0, 0, 'nothing attached');
      const exact = payload(64 * 1024);
      assert.equal(Buffer.byteLength(JSON.stringify(exact)), 64 * 1024);
      const accepted = await attach(verification.verification_id, { ...screening('compliant'), data: exact });
      assert.equal(accepted.status, 201, accepted.text);
      assert.equal((await tapeOf(verification.verification_id)).overlay_blocks?.length, 1);
    });

    it('one Idempotency-Key reused on another verification with the same body: 409 duplicate_request, nothing attached there, the first still replays [op:createOverlay 409 duplicate_request] [header:Idempotency-Key]', async function () {
      requireSandbox(this, target);
      const first = await completedMurabaha();
      const second = await completedMurabaha();
      const idempotencyKey = randomUUID();
      const body = screening('compliant');
      const attached = await attach(first.verification_id, body, { idempotencyKey });
      assert.equal(attached.status, 201, attached.text);
      assertError(await attach(second.verification_id, body, { idempotencyKey }), 409, 'duplicate_request');
      assert.equal((await tapeOf(second.verification_id)).overlay_blocks?.length ?? 0, 0, 'the other verification got no overlay');
      assert.equal((await tapeOf(second.verification_id)).islamic_compliance?.status, 'pending');
      const replay = await attach(first.verification_id, body, { idempotencyKey });
      assert.equal(replay.status, 201, replay.text);
      assert.equal(replay.headers.get('idempotent-replayed'), 'true');
      assert.deepEqual(replay.json, attached.json);
      assert.equal((await tapeOf(first.verification_id)).overlay_blocks?.length, 1);
    });

    it('the 51st overlay on one tape: 422 unprocessable', async function () {
      requireSandbox(this, target);
      const verification = await completedMurabaha();
      for (let i = 0; i < 50; i++) {
        const response = await attach(verification.verification_id, {
          type: 'aml',
          provider: 'Screen Co',
          status: 'clear',
          observed_at: '2026-11-19T10:00:00Z',
        });
        assert.equal(response.status, 201, response.text);
      }
      assertError(await attach(verification.verification_id, screening('compliant')), 422, 'unprocessable', /50/);
    });

    it('a gdpr_admin key: 403 forbidden', async function () {
      requireKey(this, target, 'gdpr');
      assertError(await attach(`vrf_${randomUUID().replace(/-/g, '')}`, screening('compliant'), { key: 'gdpr' }), 403, 'forbidden');
    });
  });

  describe('happy: tape.updated to subscribed endpoints (6.1, D13) [event:tape.updated] [header:X-Service-Signature] [header:X-Service-Event] [header:X-Service-Delivery]', function () {
    this.timeout(attemptWaitMs(target, 1) * 2 + 30_000);
    let session: WebhookSession | undefined;

    before(function () {
      requireWebhooks(this, target);
      requireSandbox(this, target);
    });
    after(async function () {
      this.timeout(30_000);
      await session?.cleanup();
    });

    it('is signed, valid against its schema, sent only to endpoints subscribed to it, after verification.completed', async () => {
      const opened = await WebhookSession.open(target);
      session = opened;
      const everything = await opened.registerReceiver('overlay-every-event', ['verification.completed', 'tape.updated']);
      const completedOnly = await opened.registerReceiver('overlay-completed-only', ['verification.completed']);
      const tapeOnly = await opened.registerReceiver('overlay-tape-only', ['tape.updated']);
      const verification = await opened.createVerification('demo_prime_multi', ['youtube', 'stripe']);
      const response = await opened.request('POST', overlaysPath(verification.verification_id), { json: screening('compliant') });
      assert.equal(response.status, 201, response.text);
      const rows = await transitionRows();
      const wait = attemptWaitMs(target, 1);
      const ours = (requests: ReturnType<typeof opened.receiver.requestsTo>) =>
        requests.filter((r) => r.rawBody.toString().includes(verification.verification_id));
      const atEvery = ours(await opened.receiver.waitFor(everything.path, (r) => ours(r).length >= 2, wait, 'completed then tape.updated'));
      const events = atEvery.map((request) => assertEventRequest(request, everything, rows).payload);
      assert.deepEqual(
        events.map((e) => e.event),
        ['verification.completed', 'tape.updated'],
        'tape.updated follows the verification’s earlier event',
      );
      const updated = events[1] as unknown as { reason: string; schema_version: string; data: { status: string } };
      assert.equal(updated.reason, 'overlay_attached');
      assert.equal(updated.schema_version, '2.0.0');
      assert.equal(updated.data.status, 'completed');
      const atTapeOnly = ours(await opened.receiver.waitFor(tapeOnly.path, (r) => ours(r).length >= 1, wait, 'tape.updated'));
      assert.deepEqual(
        atTapeOnly.map((request) => assertEventRequest(request, tapeOnly, rows).payload.event),
        ['tape.updated'],
      );
      const atCompletedOnly = ours(opened.receiver.requestsTo(completedOnly.path));
      assert.ok(
        atCompletedOnly.every((request) => assertEventRequest(request, completedOnly, rows).payload.event === 'verification.completed'),
        'an endpoint not subscribed to tape.updated received it',
      );
    });
  });
});
