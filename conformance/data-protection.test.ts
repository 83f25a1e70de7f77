import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { assertError } from './assertions.ts';
import { forEachTarget, requireKey, requireSandbox, type Target } from './harness.ts';
import { transitionRows } from './event-contract.ts';
import { createVerification, follow, randomReference, sleep, tapeOf, type Verification } from './sandbox.ts';
import { finished, requireWebhooks, WebhookSession, type Delivery, type DeliveryList, type WebhookResource } from './webhooks.ts';

/**
 * The data-protection operations of section 4.8 (role gdpr_admin): every row of the error table for
 * them (no identifier 400 validation_error, nothing found 404 not_found, no gdpr_admin role 403
 * forbidden) and each operation's success shape. Every response is also checked against spec/ by
 * the harness.
 */

interface AccessReport {
  subject: { email?: string; obligor_id?: string };
  generated_at: string;
  processing: { controller: string; purposes: unknown[]; retention: unknown[] };
  verifications: Array<{
    verification: Verification;
    consent_session: { state: string; expires_at: string };
    state_history: Array<{ from: string | null; to: string; trigger: string; reason: string | null; at: string }>;
    platform_connections: Array<{
      platform: string;
      status: string;
      account_id: string | null;
      account_email: string | null;
      scopes: string[];
      connected_at: string | null;
    }>;
    income: unknown[];
    tapes: Array<{ verification_id: string }>;
    overlays: Array<{ overlay_id: string; verification_id: string }>;
    webhook_events: Array<{ event: string; payload: { verification_id: string } }>;
    webhook_deliveries: Array<{
      delivery_id: string;
      status: string;
      attempts: number;
      attempt_log: Array<Delivery['attempts'][number] & { response_snippet: string | null }>;
      next_attempt_at: string | null;
      replay_of: string | null;
    }>;
  }>;
}

interface Receipt {
  receipt_id: string;
  erased_at: string;
  identifiers: string[];
  counts: Record<string, number>;
}

const accessPath = (query: Record<string, string>) => `/api/v1/gdpr/access?${new URLSearchParams(query).toString()}`;
const exportPath = (query: Record<string, string>) => `/api/v1/gdpr/export?${new URLSearchParams(query).toString()}`;

forEachTarget((target: Target) => {
  const realCreator = async (reference = randomReference('conformance-gdpr-')) => {
    const response = await createVerification(target, { obligor_reference: reference, creator_platforms: ['youtube', 'stripe'] });
    assert.equal(response.status, 201, response.text);
    return response.json as Verification;
  };

  describe('errors: data-protection requests (4.8, section 7) [op:gdprAccess 404 not_found] [op:gdprExport 404 not_found] [op:gdprErase 404 not_found]', () => {
    for (const [method, path] of [
      ['GET', '/api/v1/gdpr/access'],
      ['GET', '/api/v1/gdpr/export'],
      ['POST', '/api/v1/gdpr/erase'],
    ] as const) {
      it(`${method} ${path} with neither email nor obligor_id: 400 validation_error`, async function () {
        requireKey(this, target, 'gdpr');
        const response = method === 'GET' ? await target.api.get(path, { key: 'gdpr' }) : await target.api.post(path, { key: 'gdpr', json: {} });
        // Both ways of naming the creator are named, so the caller learns what to send.
        assertError(response, 400, 'validation_error', /(email[^]*obligor_id|obligor_id[^]*email)/);
      });

      it(`${method} ${path} for a creator with no data: 404 not_found`, async function () {
        requireKey(this, target, 'gdpr');
        const subject = { obligor_id: randomReference('conformance-nobody-') };
        const response =
          method === 'GET'
            ? await target.api.get(`${path}?${new URLSearchParams(subject).toString()}`, { key: 'gdpr' })
            : await target.api.post(path, { key: 'gdpr', json: subject });
        assertError(response, 404, 'not_found');
      });

      it(`${method} ${path} with a lender key: 403 forbidden`, async () => {
        const subject = { obligor_id: 'anyone' };
        const response =
          method === 'GET'
            ? await target.api.get(`${path}?${new URLSearchParams(subject).toString()}`, { key: 'lender' })
            : await target.api.post(path, { key: 'lender', json: subject });
        assertError(response, 403, 'forbidden');
      });
    }

    it('an email that is not an address, or an identifier over its length: 400 validation_error naming it', async function () {
      requireKey(this, target, 'gdpr');
      assertError(await target.api.get(accessPath({ email: 'not-an-address' }), { key: 'gdpr' }), 400, 'validation_error', /email/);
      assertError(await target.api.get(accessPath({ obligor_id: 'x'.repeat(10_000) }), { key: 'gdpr' }), 400, 'validation_error', /obligor_id/);
      assertError(
        await target.api.post('/api/v1/gdpr/erase', { key: 'gdpr', json: { obligor_id: 'x'.repeat(10_000) } }),
        400,
        'validation_error',
        /obligor_id/,
      );
    });

    it("another lender's creator is not found: only the key's own lender account is searched", async function () {
      requireKey(this, target, 'gdpr');
      requireKey(this, target, 'otherLender');
      const reference = randomReference('conformance-other-');
      const response = await createVerification(target, { obligor_reference: reference, creator_platforms: ['stripe'] }, { key: 'otherLender' });
      assert.equal(response.status, 201, response.text);
      assertError(await target.api.get(accessPath({ obligor_id: reference }), { key: 'gdpr' }), 404, 'not_found');
      assertError(await target.api.post('/api/v1/gdpr/erase', { key: 'gdpr', json: { obligor_id: reference } }), 404, 'not_found');
    });
  });

  describe('happy: access, export and erase a creator (4.8) [op:gdprAccess 200] [op:gdprExport 200] [op:gdprErase 200]', () => {
    it('access: every verification of the creator, with its consent session, purposes and retention', async function () {
      requireKey(this, target, 'gdpr');
      const reference = randomReference('conformance-gdpr-');
      const first = await realCreator(reference);
      const second = await realCreator(reference);
      const response = await target.api.get(accessPath({ obligor_id: reference }), { key: 'gdpr' });
      assert.equal(response.status, 200, response.text);
      const report = response.json as AccessReport;
      assert.deepEqual(report.subject, { obligor_id: reference });
      assert.deepEqual(report.verifications.map((v) => v.verification.verification_id).sort(), [first.verification_id, second.verification_id].sort());
      for (const record of report.verifications) {
        assert.equal(record.consent_session.state, 'open');
        assert.equal(record.verification.obligor_reference, reference);
      }
      assert.ok(report.processing.purposes.length > 0 && report.processing.retention.length > 0);
    });

    it('access and export with @, : and / unencoded in the query (RFC 3986 allows them there): found, or not found, never refused [op:gdprAccess 404 not_found] [op:gdprExport 404 not_found]', async function () {
      requireKey(this, target, 'gdpr');
      const reference = randomReference('conformance-gdpr/2026:loan@');
      const verification = await realCreator(reference);
      for (const operation of ['access', 'export']) {
        // Written into the request as they are: URLSearchParams would percent-encode them.
        const found = await target.api.get(`/api/v1/gdpr/${operation}?obligor_id=${reference}`, { key: 'gdpr' });
        assert.equal(found.status, 200, `${operation}: ${found.text}`);
        const report = operation === 'access' ? (found.json as AccessReport) : (found.json as { report: AccessReport }).report;
        assert.deepEqual(
          report.verifications.map((v) => v.verification.verification_id),
          [verification.verification_id],
        );
        const nobody = `nobody.${randomReference('')}@example.com`;
        assertError(await target.api.get(`/api/v1/gdpr/${operation}?email=${nobody}`, { key: 'gdpr' }), 404, 'not_found');
      }
    });

    it('sandbox: every connection has a synthetic account, found by its email like a real one, connected when the tape says (P35)', async function () {
      requireKey(this, target, 'gdpr');
      requireSandbox(this, target);
      const created = await createVerification(target, { obligor_reference: 'demo_prime_multi', creator_platforms: ['youtube', 'stripe'] });
      assert.equal(created.status, 201, created.text);
      const id = (created.json as Verification).verification_id;
      const tape = await tapeOf(target, id);
      const recordOf = (report: AccessReport) => report.verifications.find((v) => v.verification.verification_id === id);
      const byReference = await target.api.get(accessPath({ obligor_id: 'demo_prime_multi' }), { key: 'gdpr' });
      assert.equal(byReference.status, 200, byReference.text);
      const connections = recordOf(byReference.json as AccessReport)!.platform_connections;
      assert.deepEqual(connections.map((c) => [c.platform, c.status]).sort(), [
        ['stripe', 'connected'],
        ['youtube', 'connected'],
      ]);
      const emails = new Set(connections.map((c) => c.account_email));
      assert.equal(emails.size, 1, 'one creator, one address');
      const [email] = [...emails];
      assert.match(email ?? '', /^[a-z0-9-]+@sandbox\.example$/, 'an address of the reserved domain');
      for (const connection of connections) {
        assert.ok(connection.scopes.length > 0, `${connection.platform}: the scopes granted`);
        const shown = (tape.platform_connections as Array<{ platform: string; connected_at?: string | null }>).find((c) => c.platform === connection.platform);
        assert.ok(connection.connected_at, `${connection.platform}: connected at a time`);
        assert.equal(connection.connected_at, shown?.connected_at, `${connection.platform}: the tape's connection time`);
      }
      assert.match(connections.find((c) => c.platform === 'stripe')!.account_id ?? '', /^acct_/);
      // Found by the address, in any case (P18), as a real creator's connected account is.
      const byEmail = await target.api.get(accessPath({ email: email!.toUpperCase() }), { key: 'gdpr' });
      assert.equal(byEmail.status, 200, byEmail.text);
      assert.ok(recordOf(byEmail.json as AccessReport), 'the verification is found by its account email');
    });

    it('export: the same content as a download with a format version', async function () {
      requireKey(this, target, 'gdpr');
      const reference = randomReference('conformance-gdpr-');
      const verification = await realCreator(reference);
      const response = await target.api.get(exportPath({ obligor_id: reference }), { key: 'gdpr' });
      assert.equal(response.status, 200, response.text);
      assert.match(response.headers.get('content-disposition') ?? '', /^attachment; filename="[^"]+\.json"$/);
      const document = response.json as { export_format: string; report: AccessReport };
      assert.equal(document.export_format, 'creator-income-export/1');
      assert.deepEqual(
        document.report.verifications.map((v) => v.verification.verification_id),
        [verification.verification_id],
      );
    });

    it('a completed sandbox verification: its tape and its event are in the report', async function () {
      requireKey(this, target, 'gdpr');
      requireSandbox(this, target);
      const reference = randomReference('test-complete-gdpr-');
      const verification = await realCreator(reference);
      // Completed is a terminal state: waiting for it on the status endpoint cannot miss it.
      const observations = await follow(target, verification.verification_id);
      assert.equal(observations.at(-1)!.resource.status, 'completed', 'the test-complete- verification completed');
      const response = await target.api.get(accessPath({ obligor_id: reference }), { key: 'gdpr' });
      assert.equal(response.status, 200, response.text);
      const record = (response.json as AccessReport).verifications[0]!;
      assert.equal(record.verification.status, 'completed', 'the test-complete- verification completed');
      assert.equal(record.consent_session.state, 'closed');
      assert.deepEqual(
        record.tapes.map((t) => t.verification_id),
        [verification.verification_id],
      );
      assert.ok(record.webhook_events.some((e) => e.event === 'verification.completed' && e.payload.verification_id === verification.verification_id));
    });

    it('export: the whole state history and every delivery attempt with what the receiver answered, as the API showed them', async function () {
      this.timeout(120_000);
      requireKey(this, target, 'gdpr');
      requireSandbox(this, target);
      requireWebhooks(this, target);
      const session = await WebhookSession.open(target);
      try {
        // An endpoint of the gdpr key's lender account, so its delivery belongs to the exported creator.
        const path = session.receiver.newPath('gdpr-export');
        const registered = await session.create({ url: session.receiver.urlFor(path), events: ['verification.completed'] }, 'lender');
        assert.equal(registered.status, 201, registered.text);
        const webhook = registered.json as WebhookResource & { secret: string };
        session.receiver.expectSignedWith(path, webhook.secret);
        const reference = randomReference('test-complete-gdpr-export-');
        const verification = await realCreator(reference);
        const states = (await follow(target, verification.verification_id)).map((o) => o.resource.status);
        assert.equal(states.at(-1), 'completed');
        let delivered: Delivery | undefined;
        for (const deadline = Date.now() + 60_000; !delivered; await sleep(200)) {
          const listed = await session.deliveries(webhook.webhook_id, { limit: 100 }, 'lender');
          assert.equal(listed.status, 200, listed.text);
          delivered = (listed.json as DeliveryList).data.find((d) => d.verification_id === verification.verification_id && finished(d));
          assert.ok(delivered || Date.now() < deadline, 'the delivery of verification.completed finished within 60 s');
        }

        const response = await target.api.get(exportPath({ obligor_id: reference }), { key: 'gdpr' });
        assert.equal(response.status, 200, response.text);
        const [record] = (response.json as { report: AccessReport }).report.verifications;
        assert.ok(record);

        const history = record.state_history;
        assert.deepEqual(
          history.map((t) => [t.from, t.to]),
          [
            [null, 'pending_consent'],
            ['pending_consent', 'processing'],
            ['processing', 'completed'],
          ],
        );
        const rows = await transitionRows();
        for (const move of history)
          assert.ok(
            rows.some((row) => row.from === move.from && row.to === move.to && row.trigger === move.trigger),
            `${JSON.stringify(move)} is a row of x-transitions`,
          );
        assert.equal(history[0]!.at, verification.created_at);
        assert.equal(history.at(-1)!.at, record.verification.completed_at);

        const exported = record.webhook_deliveries.find((d) => d.delivery_id === delivered.delivery_id);
        assert.ok(exported, 'the delivery is in the export');
        assert.equal(exported.status, delivered.status);
        assert.equal(exported.next_attempt_at, delivered.next_attempt_at);
        assert.equal(exported.replay_of, delivered.replay_of ?? null);
        assert.equal(exported.attempts, delivered.attempts.length);
        assert.deepEqual(
          exported.attempt_log.map(({ response_snippet: _snippet, ...attempt }) => attempt),
          delivered.attempts,
        );
        assert.deepEqual(
          exported.attempt_log.map((a) => [a.status_code, a.response_snippet]),
          [[200, 'ok']],
          "the receiver's answer as stored",
        );
      } finally {
        await session.cleanup();
      }
    });

    it('erase: a receipt with counts and no personal data; the creator is gone, and a second erase is 404', async function () {
      requireKey(this, target, 'gdpr');
      const reference = randomReference('conformance-gdpr-');
      const verification = await realCreator(reference);
      const response = await target.api.post('/api/v1/gdpr/erase', { key: 'gdpr', json: { obligor_id: reference } });
      assert.equal(response.status, 200, response.text);
      const receipt = response.json as Receipt;
      assert.match(receipt.receipt_id, /^ers_/);
      assert.deepEqual(receipt.identifiers, ['obligor_id']);
      assert.equal(receipt.counts.verifications, 1);
      assert.equal(receipt.counts.platform_connections, 2);
      assert.ok(!response.text.includes(reference), 'the receipt does not name the creator');
      assert.ok(!response.text.includes(verification.verification_id), 'the receipt does not name the verification');
      assertError(await target.api.get(`/api/v1/verifications/${verification.verification_id}`, { key: 'lender' }), 404, 'not_found');
      assertError(await target.api.get(accessPath({ obligor_id: reference }), { key: 'gdpr' }), 404, 'not_found');
      assertError(await target.api.post('/api/v1/gdpr/erase', { key: 'gdpr', json: { obligor_id: reference } }), 404, 'not_found');
    });

    it('erase a completed creator: the receipt counts what the access report showed, and afterwards no handle of the creator answers', async function () {
      this.timeout(60_000);
      requireKey(this, target, 'gdpr');
      requireSandbox(this, target);
      const reference = randomReference('test-complete-gdpr-erase-');
      const body = { obligor_reference: reference, creator_platforms: ['youtube', 'stripe'] };
      const idempotencyKey = randomUUID();
      const creation = await createVerification(target, body, { idempotencyKey });
      assert.equal(creation.status, 201, creation.text);
      const verification = creation.json as Verification;
      const id = verification.verification_id;
      assert.equal((await follow(target, id)).at(-1)!.resource.status, 'completed', 'the test-complete- verification completed');
      const attached = await target.api.post(`/api/v1/verifications/${id}/overlays`, {
        key: 'lender',
        json: { type: 'credit_bureau', provider: 'Conformance Bureau', status: 'clear', observed_at: '2026-01-15T10:00:00Z', data: { score: 700 } },
      });
      assert.equal(attached.status, 201, attached.text);
      const overlay = attached.json as { overlay_id: string };
      const shown = (await target.api.get(`/api/v1/verifications/${id}`, { key: 'lender' })).json as Verification;

      // What is held, as the access report and the export show it: the same, and what was made.
      const access = await target.api.get(accessPath({ obligor_id: reference }), { key: 'gdpr' });
      assert.equal(access.status, 200, access.text);
      const report = access.json as AccessReport;
      const exported = await target.api.get(exportPath({ obligor_id: reference }), { key: 'gdpr' });
      assert.equal(exported.status, 200, exported.text);
      assert.deepEqual((exported.json as { report: AccessReport }).report.verifications, report.verifications, 'the export holds what the access report shows');
      assert.equal(report.verifications.length, 1);
      const record = report.verifications[0]!;
      assert.deepEqual(record.verification, shown, 'the verification as GET /verifications/{id} shows it');
      // Its tapes: the one made at completion and the one the overlay scored again (P33's history).
      const history = await target.api.get(`/api/v1/verifications/${id}/tapes`, { key: 'lender' });
      assert.equal(history.status, 200, history.text);
      assert.equal((history.json as { data: unknown[] }).data.length, 2);
      assert.deepEqual(
        record.tapes.map((t) => t.verification_id),
        [id, id],
        'its tapes, the earlier one too',
      );
      assert.deepEqual(
        record.overlays.map((o) => [o.overlay_id, o.verification_id]),
        [[overlay.overlay_id, id]],
        'its overlay',
      );
      assert.deepEqual(record.platform_connections.map((c) => c.platform).sort(), ['stripe', 'youtube']);

      const response = await target.api.post('/api/v1/gdpr/erase', { key: 'gdpr', json: { obligor_id: reference } });
      assert.equal(response.status, 200, response.text);
      const { counts } = response.json as Receipt;
      assert.deepEqual(
        {
          verifications: counts.verifications,
          tapes: counts.tapes,
          overlays: counts.overlays,
          platform_connections: counts.platform_connections,
          income_records: counts.income_records,
        },
        {
          verifications: 1,
          tapes: record.tapes.length,
          overlays: 1,
          platform_connections: 2,
          income_records: record.income.length,
        },
        'the receipt counts what was held',
      );
      assert.ok((counts.idempotency_records ?? 0) >= 1, "the creation's stored answer is counted");

      // Every handle the creator's data had: nothing of it answers.
      for (const path of [`/api/v1/verifications/${id}`, `/api/v1/verifications/${id}/tape`, `/api/v1/verifications/${id}/tapes`, `/api/v1/benchmarks/${id}`]) {
        assertError(await target.api.get(path, { key: 'lender' }), 404, 'not_found');
      }
      assertError(await target.api.post(`/api/v1/verifications/${id}/cancel`, { key: 'lender' }), 404, 'not_found');
      const listed = await target.api.get(`/api/v1/verifications?${new URLSearchParams({ obligor_reference: reference }).toString()}`, { key: 'lender' });
      assert.equal(listed.status, 200, listed.text);
      assert.deepEqual((listed.json as { data: unknown[] }).data, [], 'the list filtered by the reference is empty');
      const page = await fetch(verification.consent_url, { redirect: 'manual' });
      const html = await page.text();
      assert.equal(page.status, 404, 'the consent link is unknown');
      assert.ok(!html.includes(reference), 'the consent link shows nothing of the creator');
      // The creation's stored answer is erased with it: the key no longer replays the erased verification.
      const again = await createVerification(target, body, { idempotencyKey });
      assert.equal(again.status, 201, again.text);
      assert.notEqual((again.json as Verification).verification_id, id, 'the Idempotency-Key replayed the erased verification');
      assert.notEqual(again.headers.get('idempotent-replayed'), 'true');
      assert.equal(
        (await target.api.post('/api/v1/gdpr/erase', { key: 'gdpr', json: { obligor_id: reference } })).status,
        200,
        'the new verification is erased too',
      );
    });

    it('two erasures of one creator at the same time: one receipt and one 404', async function () {
      requireKey(this, target, 'gdpr');
      const reference = randomReference('conformance-gdpr-');
      await realCreator(reference);
      const answers = await Promise.all([0, 1].map(() => target.api.post('/api/v1/gdpr/erase', { key: 'gdpr', json: { obligor_id: reference } })));
      assert.deepEqual(answers.map((a) => a.status).sort(), [200, 404], answers.map((a) => a.text).join('\n'));
    });
  });
});
