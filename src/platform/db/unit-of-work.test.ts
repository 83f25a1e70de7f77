import assert from 'node:assert/strict';
import { testDatabases, type TestDatabase } from '../../../test/support/test-databases.ts';
import { openDatabase, type Database } from './database.ts';
import { inUnitOfWork, transactionOf } from './unit-of-work.ts';

for (const factory of testDatabases()) {
  describe(`units of work on ${factory.name}`, () => {
    let testDb: TestDatabase;
    let db: Database;

    before(async () => {
      testDb = await factory.create();
      db = openDatabase(testDb.url);
      await db.migrate();
    });
    after(async () => {
      await db.close();
      await testDb.drop();
    });

    const settingExists = async (name: string) => (await db.knex('service_settings').where({ name }).first()) !== undefined;

    it('runs after-commit callbacks once the work has committed, seeing what it wrote', async () => {
      const seen: boolean[] = [];
      await inUnitOfWork(db.knex, async (unit) => {
        await transactionOf(unit)('service_settings').insert({ name: 'committed', value: '1' });
        unit.afterCommit(() => void settingExists('committed').then((exists) => seen.push(exists)));
        assert.deepEqual(seen, [], 'a callback ran before the commit');
      });
      await new Promise((resolve) => setTimeout(resolve, 50));
      assert.deepEqual(seen, [true]);
    });

    it('never runs them when the work rolls back, and keeps nothing it wrote', async () => {
      let called = false;
      await assert.rejects(
        inUnitOfWork(db.knex, async (unit) => {
          await transactionOf(unit)('service_settings').insert({ name: 'rolled-back', value: '1' });
          unit.afterCommit(() => (called = true));
          throw new Error('refused');
        }),
        /refused/,
      );
      assert.equal(called, false);
      assert.equal(await settingExists('rolled-back'), false);
    });

    it('refuses to hand out the transaction of a unit that has ended', async () => {
      const unit = await inUnitOfWork(db.knex, async (open) => open);
      assert.throws(() => transactionOf(unit), /not open/);
    });
  });
}
