import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { AccountsRepository } from '../accounts/accounts-repository.ts';
import * as admin from '../accounts/lender-admin.ts';
import { adminContext } from '../admin/admin-context.ts';
import { ManualClock } from '../platform/clock.ts';
import { loadConfig } from '../platform/config.ts';
import { createLogger } from '../platform/logger.ts';
import { startService, type Service } from '../service.ts';
import { testDatabases, type TestDatabase } from '../../test/support/test-databases.ts';
import type { RiskTape200 } from '../../generated/tape.ts';
import { decryptSecret } from '../platform/crypto.ts';
import type { UnitOfWork } from '../platform/db/unit-of-work.ts';
import { emailIndex } from './consent-flow.ts';
import { recordSandboxAccounts, sandboxAccountEmail } from './sandbox-accounts.ts';

interface ConnectionRecord {
  platform: string;
  status: string;
  account_id: string | null;
  account_email: string | null;
  scopes: string[];
  connected_at: string | null;
}

describe("sandbox connections' synthetic accounts (P35): the tape listener", () => {
  const encryptionKey = Buffer.alloc(32, 7);
  const connected = [
    { platform: 'youtube', status: 'connected', connected_at: '2026-11-21T10:00:00.000Z' },
    { platform: 'stripe', status: 'connected', connected_at: '2026-11-21T10:00:01.000Z' },
  ];
  const listen = async (reason: 'completion' | 'overlay_attached' | 'refresh', connections: object[] = connected) => {
    const saved: Array<{ platform: string; email: { ciphertext: string; index: string }; connectedAt: string }> = [];
    let seals = 0;
    const consent = {
      saveSandboxAccounts: async (
        _unit: UnitOfWork,
        _id: string,
        email: { ciphertext: string; index: string },
        accounts: ReadonlyArray<{ platform: string; connectedAt: string }>,
      ) => {
        seals++;
        saved.push(...accounts.map((account) => ({ ...account, email })));
        return accounts.length;
      },
    };
    const tape = { obligor: { reference: 'demo_prime_multi' }, platform_connections: connections } as unknown as RiskTape200;
    await recordSandboxAccounts(consent, encryptionKey)({} as UnitOfWork, { id: 'ver_1' }, tape, reason);
    return Object.assign(saved, { seals });
  };

  it("seals the connected platforms' address once, with the completion's tape, dated as the tape says", async () => {
    const saved = await listen('completion');
    assert.deepEqual(
      saved.map((s) => [s.platform, s.connectedAt]),
      [
        ['youtube', '2026-11-21T10:00:00.000Z'],
        ['stripe', '2026-11-21T10:00:01.000Z'],
      ],
    );
    const email = sandboxAccountEmail('demo_prime_multi');
    for (const { email: stored } of saved) {
      assert.equal(decryptSecret(encryptionKey, stored.ciphertext), email);
      assert.equal(stored.index, emailIndex(encryptionKey, email));
    }
    assert.equal(saved.seals, 1, 'one seal and one write for both platforms');
    const unconnected = await listen('completion', [connected[0]!, { platform: 'stripe', status: 'not_connected', connected_at: null }]);
    assert.deepEqual(
      unconnected.map((s) => s.platform),
      ['youtube'],
      'an unconnected platform has no account',
    );
    const none = await listen('completion', [{ platform: 'stripe', status: 'not_connected', connected_at: null }]);
    assert.equal(none.seals, 0, 'nothing connected, nothing sealed');
  });

  it('seals nothing for a later tape: a refresh or an overlay finds the accounts written', async () => {
    assert.equal((await listen('refresh')).seals, 0);
    assert.equal((await listen('overlay_attached')).seals, 0);
  });

  it('derives a valid address at the reserved domain from any reference', () => {
    const address = /^[a-z0-9]+(-[a-z0-9]+)*@sandbox\.example$/;
    for (const reference of ['demo_prime_multi', 'Créateur №7', '---', 'x'.repeat(200), 'A.B+C']) {
      assert.match(sandboxAccountEmail(reference), address, reference);
    }
    assert.notEqual(sandboxAccountEmail('a-b'), sandboxAccountEmail('a_b'), 'references alike once hyphenated keep apart');
    assert.equal(sandboxAccountEmail('demo_prime_multi'), sandboxAccountEmail('demo_prime_multi'));
  });
});

for (const factory of testDatabases()) {
  describe(`sandbox connections' synthetic accounts (P35) on ${factory.name}`, function () {
    this.timeout(60_000);
    let testDb: TestDatabase;
    let service: Service;
    let clock: ManualClock;
    let key: string;
    let gdprKey: string;

    before(async () => {
      testDb = await factory.create();
      clock = new ManualClock('2026-11-21T10:00:00.000Z');
      service = await startService(
        loadConfig({ DATABASE_URL: testDb.url, SANDBOX_COMPLETE_DELAY_MS: '1000', SANDBOX_REFRESH_INTERVAL_MS: '60000' }),
        createLogger({ level: 'silent' }),
        { clock },
      );
      const ctx = adminContext({ mode: 'sandbox' }, new AccountsRepository(service.db.knex), clock);
      const lender = await admin.createLender(ctx, { name: 'Sandbox Accounts Lender' });
      key = (await admin.createKey(ctx, { lenderId: lender.id, role: 'lender' })).apiKey;
      gdprKey = (await admin.createKey(ctx, { lenderId: lender.id, role: 'gdpr_admin' })).apiKey;
    });
    after(async () => {
      await service.close();
      await testDb.drop();
    });

    const api = (method: 'get' | 'post', path: string, apiKey = key) => request(service.app)[method](path).auth(apiKey, { type: 'bearer' });
    const create = async (body: Record<string, unknown>) => {
      const response = await api('post', '/api/v1/verifications').set('Idempotency-Key', randomUUID()).send(body);
      assert.equal(response.status, 201, response.text);
      return response.body as { verification_id: string; consent_url: string; status: string };
    };
    const connectionsOf = (
      id: string,
      body: { verifications: Array<{ verification: { verification_id: string }; platform_connections: ConnectionRecord[] }> },
    ) => body.verifications.find((v) => v.verification.verification_id === id)!.platform_connections;
    const tapeOf = async (id: string) =>
      (await api('get', `/api/v1/verifications/${id}/tape`)).body as { platform_connections: Array<{ platform: string; connected_at: string | null }> };

    it('gives a synthetic creator connected at creation its accounts, found by their email as a real creator is', async () => {
      const reference = `Demo Accounts/${randomUUID().slice(0, 8)}`;
      // A synthetic creator completes at once, connected to every platform of its series.
      const verification = await create({ obligor_reference: 'demo_prime_multi', creator_platforms: ['youtube', 'stripe'] });
      assert.equal(verification.status, 'completed');
      const email = sandboxAccountEmail('demo_prime_multi');
      assert.match(email, /^demo-prime-multi-[0-9a-f]{8}@sandbox\.example$/);
      assert.match(sandboxAccountEmail(reference), /^demo-accounts-[0-9a-f]{8}-[0-9a-f]{8}@sandbox\.example$/);
      const found = await api('get', `/api/v1/gdpr/access?email=${encodeURIComponent(email.toUpperCase())}`, gdprKey);
      assert.equal(found.status, 200, found.text);
      const connections = connectionsOf(verification.verification_id, found.body);
      const tape = await tapeOf(verification.verification_id);
      for (const platform of ['youtube', 'stripe']) {
        const connection = connections.find((c) => c.platform === platform)!;
        assert.equal(connection.status, 'connected');
        assert.equal(connection.account_email, email);
        assert.ok(connection.scopes.length > 0, `${platform}: scopes`);
        assert.equal(connection.connected_at, tape.platform_connections.find((c) => c.platform === platform)!.connected_at);
        assert.notEqual(connection.connected_at, null);
      }
      assert.match(connections.find((c) => c.platform === 'stripe')!.account_id!, /^acct_[0-9a-f]{16}$/);
      assert.equal(connections.find((c) => c.platform === 'youtube')!.account_id, null, 'Google names no account id, as in production');
      // Stored as a grant's address is: encrypted, never in plain text.
      const rows = await service.db.knex('platform_connections').where({ verification_id: verification.verification_id });
      for (const row of rows) {
        assert.equal(row.account_email, null);
        assert.ok(row.account_email_ciphertext && !String(row.account_email_ciphertext).includes('sandbox.example'));
      }
    });

    it('gives a platform connected on the consent page its account once the tape is read; a refresh keeps its connection time', async () => {
      const reference = `sandbox-accounts-${randomUUID().slice(0, 8)}`;
      const verification = await create({ obligor_reference: reference, creator_platforms: ['youtube', 'stripe'], monitoring: { months: 2 } });
      const path = new URL(verification.consent_url).pathname;
      assert.equal((await request(service.app).post(`${path}/sandbox/stripe`).type('form').send({ decision: 'allow' })).status, 303);
      assert.equal((await request(service.app).post(`${path}/complete`)).status, 303);
      await service.jobs.runDue();
      const tape = await tapeOf(verification.verification_id);
      const connectedAt = tape.platform_connections.find((c) => c.platform === 'stripe')!.connected_at;
      const found = await api('get', `/api/v1/gdpr/access?email=${sandboxAccountEmail(reference)}`, gdprKey);
      assert.equal(found.status, 200, found.text);
      const connections = connectionsOf(verification.verification_id, found.body);
      assert.equal(connections.find((c) => c.platform === 'stripe')!.connected_at, connectedAt);
      const youtube = connections.find((c) => c.platform === 'youtube')!;
      assert.deepEqual([youtube.status, youtube.account_email, youtube.connected_at], ['not_connected', null, null], 'an unconnected platform has no account');

      clock.advance(60_000);
      await service.jobs.runDue();
      const history = await api('get', `/api/v1/verifications/${verification.verification_id}/tapes`);
      assert.equal(history.body.data.length, 2, history.text);
      const refreshed = await tapeOf(verification.verification_id);
      assert.equal(refreshed.platform_connections.find((c) => c.platform === 'stripe')!.connected_at, connectedAt);
    });

    it('erases the synthetic accounts with the creator', async () => {
      const reference = `sandbox-erase-${randomUUID().slice(0, 8)}`;
      const verification = await create({ obligor_reference: reference, creator_platforms: ['stripe'] });
      const path = new URL(verification.consent_url).pathname;
      await request(service.app).post(`${path}/sandbox/stripe`).type('form').send({ decision: 'allow' });
      await request(service.app).post(`${path}/complete`);
      await service.jobs.runDue();
      const email = sandboxAccountEmail(reference);
      assert.equal((await api('get', `/api/v1/gdpr/access?email=${email}`, gdprKey)).status, 200);
      const erased = await api('post', '/api/v1/gdpr/erase', gdprKey).send({ email });
      assert.equal(erased.status, 200, erased.text);
      assert.equal((await api('get', `/api/v1/gdpr/access?email=${email}`, gdprKey)).status, 404);
      assert.equal((await service.db.knex('platform_connections').where({ verification_id: verification.verification_id })).length, 0);
    });
  });
}
