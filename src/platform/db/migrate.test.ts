import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import pg from 'pg';
import { testDatabases, type TestDatabase } from '../../../test/support/test-databases.ts';
import { openDatabase, postgresMigrator, STATEMENT_TIMEOUT_MS } from './database.ts';
import { migrations } from './migrations/index.ts';

/** Holds the lock `migrate()` takes, as another migrating process would, until `release()`. */
async function holdMigrationLock(testDb: TestDatabase): Promise<{ release(): Promise<void> }> {
  if (testDb.name === 'postgres') {
    const client = new pg.Client({ connectionString: testDb.url });
    await client.connect();
    await client.query('begin');
    await client.query('select pg_advisory_xact_lock(4206071117)');
    return { release: () => client.end() };
  }
  const lock = new Database(`${testDb.url.slice('sqlite:'.length)}.migration-lock`);
  lock.exec('BEGIN EXCLUSIVE');
  return {
    async release() {
      lock.close();
    },
  };
}

for (const factory of testDatabases()) {
  describe(`migrations from several processes at once on ${factory.name}`, function () {
    this.timeout(60_000);
    let testDb: TestDatabase;
    beforeEach(async () => {
      testDb = await factory.create();
    });
    afterEach(async () => {
      await testDb.drop();
    });

    it('four processes starting together on a new database all start, and each migration is applied once', async () => {
      // Without the lock, three of four failed creating knex_migrations ("already exists").
      const databases = Array.from({ length: 4 }, () => openDatabase(testDb.url));
      try {
        const results = await Promise.allSettled(databases.map((db) => db.migrate()));
        assert.deepEqual(
          results.map((r) => (r.status === 'fulfilled' ? 'started' : String(r.reason))),
          ['started', 'started', 'started', 'started'],
        );
        const knex = databases[0]!.knex;
        const applied = (await knex('knex_migrations').select('name')).map((row: { name: string }) => row.name);
        assert.deepEqual(
          applied,
          (await migrations.getMigrations([])).map((m) => migrations.getMigrationName(m)),
        );
        assert.deepEqual(await knex('knex_migrations_lock').select('is_locked'), [{ is_locked: 0 }]);
      } finally {
        for (const db of databases) await db.close();
      }
    });

    it('a process waits while another one migrates, then finds nothing left to do', async () => {
      const held = await holdMigrationLock(testDb);
      const db = openDatabase(testDb.url);
      try {
        let finished = false;
        const migrating = db.migrate().then(() => (finished = true));
        await new Promise((resolve) => setTimeout(resolve, 500));
        assert.equal(finished, false, 'migrated while another process held the lock');
        assert.equal(await db.knex.schema.hasTable('knex_migrations'), false);
        await held.release();
        await migrating;
        assert.equal(await db.knex.schema.hasTable('verifications'), true);
      } finally {
        await db.close();
      }
    });

    if (factory.name === 'postgres') {
      it("migrations run without the service's statement and query timeouts, which an index build on a large table outlasts", async () => {
        const service = openDatabase(testDb.url);
        const migrator = postgresMigrator(testDb.url);
        const longerThanARequest = (STATEMENT_TIMEOUT_MS + 500) / 1000;
        try {
          await assert.rejects(service.knex.raw('select pg_sleep(?)', [longerThanARequest]), /timeout/i);
          await migrator.raw('select pg_sleep(?)', [longerThanARequest]);
        } finally {
          await migrator.destroy();
          await service.close();
        }
      });
    }
  });
}
