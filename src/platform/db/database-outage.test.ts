import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import request from 'supertest';
import { AccountsRepository } from '../../accounts/accounts-repository.ts';
import * as admin from '../../accounts/lender-admin.ts';
import { adminContext } from '../../admin/admin-context.ts';
import { startService, type Service } from '../../service.ts';
import { TcpRelay } from '../../../test/support/tcp-relay.ts';
import { testDatabases, type TestDatabase } from '../../../test/support/test-databases.ts';
import { loadConfig } from '../config.ts';
import { createLogger } from '../logger.ts';
import { DOCUMENTED_ANSWER_BOUND_MS } from './database.ts';

for (const factory of testDatabases().filter((f) => f.name === 'postgres')) {
  describe('a frozen PostgreSQL server', function () {
    this.timeout(60_000);
    let testDb: TestDatabase;
    let relay: TcpRelay;
    let service: Service;
    let key: string;
    const lines: Array<{ msg: string; level: number; failures?: number }> = [];

    before(async () => {
      testDb = await factory.create();
      const url = new URL(testDb.url);
      relay = new TcpRelay({ host: url.hostname, port: Number(url.port || 5432) });
      const config = loadConfig({ DATABASE_URL: await relay.relayedUrl(testDb.url) });
      const destination = new Writable({
        write(chunk, _encoding, done) {
          lines.push(JSON.parse(String(chunk)) as (typeof lines)[number]);
          done();
        },
      });
      service = await startService(config, createLogger({ level: 'warn', destination }));
      const ctx = adminContext(config, new AccountsRepository(service.db.knex));
      const lender = await admin.createLender(ctx, { name: 'Outage Lending' });
      key = (await admin.createKey(ctx, { lenderId: lender.id, role: 'lender' })).apiKey;
    });
    after(async () => {
      relay.thaw();
      await service.close();
      relay.close();
      await testDb.drop();
    });

    it('answers every request within a bounded time with 503 and Retry-After, /readyz too, and recovers without a restart', async () => {
      const get = (path: string) => request(service.app).get(path).auth(key, { type: 'bearer' });
      assert.equal((await get('/api/v1/verifications/vrf_unknown')).status, 404);
      relay.freeze();
      const started = Date.now();
      const answers = await Promise.all([...Array.from({ length: 8 }, () => get('/api/v1/verifications/vrf_unknown')), get('/readyz')]);
      const took = Date.now() - started;
      for (const answer of answers) {
        assert.equal(answer.status, 503, answer.text);
        assert.equal(answer.body.error, 'service_unavailable');
        assert.ok(Number(answer.headers['retry-after']) >= 1);
      }
      assert.ok(took <= DOCUMENTED_ANSWER_BOUND_MS, `answers took ${took} ms; the README promises ${DOCUMENTED_ANSWER_BOUND_MS} ms`);
      relay.thaw();
      let recovered = false;
      for (let i = 0; i < 40 && !recovered; i++) {
        recovered = (await get('/api/v1/verifications/vrf_unknown')).status === 404;
        if (!recovered) await new Promise((resolve) => setTimeout(resolve, 250));
      }
      assert.ok(recovered, 'the service did not recover once the database answered again');
      assert.equal((await get('/readyz')).status, 200);
      // Told once as it began and once as it ended, whatever failed meanwhile; each 503 has its own request line.
      const outage = lines.filter((line) => !['request completed', 'database unavailable'].includes(line.msg));
      assert.deepEqual(
        outage.map((line) => [line.level, line.msg]),
        [
          [50, 'database unavailable: requests answer 503 until it answers again'],
          [40, 'database answering again'],
        ],
      );
      assert.ok(outage[1]!.failures! >= 1);
    });
  });
}
