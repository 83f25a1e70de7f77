import assert from 'node:assert/strict';
import { migratedDatabase, testDatabases } from '../../../test/support/test-databases.ts';
import type { Database } from './database.ts';
import { inUnitOfWork, transactionOf } from './unit-of-work.ts';

for (const factory of testDatabases()) {
  describe(`units of work on ${factory.name}`, () => {
    const migrated = migratedDatabase(factory);
    let db: Database;
    before(() => {
      db = migrated.db;
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

    it('runs before-commit steps in the transaction after the work, in order, before any after-commit callback', async () => {
      const order: string[] = [];
      await inUnitOfWork(db.knex, async (unit) => {
        unit.afterCommit(() => order.push('after commit'));
        unit.beforeCommit(async () => {
          order.push(`first step, work's row ${(await transactionOf(unit)('service_settings').where({ name: 'work' }).first()) ? 'seen' : 'missing'}`);
          await transactionOf(unit)('service_settings').insert({ name: 'before-commit', value: '1' });
          unit.beforeCommit(async () => void order.push('step asked for by a step'));
        });
        unit.beforeCommit(async () => void order.push('second step'));
        await transactionOf(unit)('service_settings').insert({ name: 'work', value: '1' });
        order.push('work returns');
      });
      assert.deepEqual(order, ['work returns', "first step, work's row seen", 'second step', 'step asked for by a step', 'after commit']);
      assert.equal(await settingExists('before-commit'), true);
    });

    it('rolls back everything, the work and its steps, when a before-commit step fails', async () => {
      let committed = false;
      await assert.rejects(
        inUnitOfWork(db.knex, async (unit) => {
          await transactionOf(unit)('service_settings').insert({ name: 'work-of-failed-step', value: '1' });
          unit.beforeCommit(async () => {
            await transactionOf(unit)('service_settings').insert({ name: 'failed-step', value: '1' });
            throw new Error('step refused');
          });
          unit.afterCommit(() => (committed = true));
        }),
        /step refused/,
      );
      assert.equal(committed, false);
      assert.equal(await settingExists('work-of-failed-step'), false);
      assert.equal(await settingExists('failed-step'), false);
    });

    it('refuses to hand out the transaction of a unit that has ended', async () => {
      const unit = await inUnitOfWork(db.knex, async (open) => open);
      assert.throws(() => transactionOf(unit), /not open/);
    });
  });
}
