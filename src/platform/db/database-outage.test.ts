import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, connect, type Server, type Socket } from 'node:net';
import request from 'supertest';
import { AccountsRepository } from '../../accounts/accounts-repository.ts';
import * as admin from '../../accounts/lender-admin.ts';
import { adminContext, startService, type Service } from '../../service.ts';
import { testDatabases, type TestDatabase } from '../../../test/support/test-databases.ts';
import { loadConfig } from '../config.ts';
import { createLogger } from '../logger.ts';
import { DATABASE_TIMEOUT_MS } from './database.ts';

/**
 * A TCP relay between the service and PostgreSQL that can freeze: it stops passing bytes either way
 * without closing anything, as a server stopped with SIGSTOP (or a network that drops packets) looks
 * to the service. Thawing passes everything held back.
 */
class FreezableRelay {
  private readonly server: Server;
  private readonly pairs: Array<[Socket, Socket]> = [];
  private frozen = false;

  constructor(target: { host: string; port: number }) {
    this.server = createServer((client) => {
      const upstream = connect(target.port, target.host);
      this.pairs.push([client, upstream]);
      client.pipe(upstream);
      upstream.pipe(client);
      if (this.frozen) this.pause(client, upstream);
      const end = () => {
        client.destroy();
        upstream.destroy();
      };
      client.on('error', end);
      upstream.on('error', end);
    });
  }

  async listen(): Promise<number> {
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
    return (this.server.address() as { port: number }).port;
  }

  private pause(...sockets: Socket[]) {
    for (const socket of sockets) socket.pause();
  }

  freeze(): void {
    this.frozen = true;
    for (const pair of this.pairs) this.pause(...pair);
  }

  thaw(): void {
    this.frozen = false;
    for (const pair of this.pairs) for (const socket of pair) socket.resume();
  }

  close(): void {
    for (const pair of this.pairs) for (const socket of pair) socket.destroy();
    this.server.close();
  }
}

for (const factory of testDatabases().filter((f) => f.name === 'postgres')) {
  describe('a frozen PostgreSQL server', function () {
    this.timeout(60_000);
    let testDb: TestDatabase;
    let relay: FreezableRelay;
    let service: Service;
    let key: string;

    before(async () => {
      testDb = await factory.create();
      const url = new URL(testDb.url);
      relay = new FreezableRelay({ host: url.hostname, port: Number(url.port || 5432) });
      url.host = `127.0.0.1:${await relay.listen()}`;
      const config = loadConfig({ DATABASE_URL: url.toString() });
      service = await startService(config, createLogger({ level: 'silent' }));
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
      assert.ok(took < DATABASE_TIMEOUT_MS * 2 + 2_000, `answers took ${took} ms`);
      relay.thaw();
      let recovered = false;
      for (let i = 0; i < 40 && !recovered; i++) {
        recovered = (await get('/api/v1/verifications/vrf_unknown')).status === 404;
        if (!recovered) await new Promise((resolve) => setTimeout(resolve, 250));
      }
      assert.ok(recovered, 'the service did not recover once the database answered again');
      assert.equal((await get('/readyz')).status, 200);
    });
  });
}
