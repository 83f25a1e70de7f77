import assert from 'node:assert/strict';
import knex, { type Knex } from 'knex';
import { testDatabases, type TestDatabase } from '../../../test/support/test-databases.ts';
import { openDatabase, type Database } from './database.ts';
import { PostgresKeepingWrites, writeWithNextStatement } from './writes-with-next-statement.ts';

for (const factory of testDatabases()) {
  describe(`writes sent with the next statement on ${factory.name}`, () => {
    let testDb: TestDatabase;
    let db: Database;
    let sent: string[] = [];
    const record = (query: { sql: string }) => sent.push(query.sql);

    before(async () => {
      testDb = await factory.create();
      db = openDatabase(testDb.url);
      await db.migrate();
      await db.knex.schema.createTable('kept_parents', (t) => {
        t.string('id').primary();
        t.integer('version').notNullable();
      });
      await db.knex.schema.createTable('kept_children', (t) => {
        t.increments('id');
        t.string('parent_id').notNullable().references('id').inTable('kept_parents');
      });
      db.knex.on('query', record);
    });
    after(async () => {
      db.knex.off('query', record);
      await db.close();
      await testDb.drop();
    });
    beforeEach(async () => {
      await db.knex('kept_children').delete();
      await db.knex('kept_parents').delete();
      sent = [];
    });

    const postgres = () => db.dialect === 'postgres';
    const parents = async () => (await db.knex('kept_parents').orderBy('id')).map((row: { id: string; version: number }) => `${row.id}@${row.version}`);
    const children = async () => (await db.knex('kept_children').orderBy('id')).map((row: { parent_id: string }) => row.parent_id);
    const statements = () => sent.filter((sql) => !/^(begin|commit|rollback|savepoint|release)/i.test(sql.trim()));

    it('sends kept writes in front of the next statement, which answers as it would alone', async () => {
      const answered = await db.knex.transaction(async (trx) => {
        await writeWithNextStatement(trx, trx('kept_parents').insert({ id: 'p1', version: 1 }));
        await writeWithNextStatement(trx, trx('kept_children').insert({ parent_id: 'p1' }));
        return trx('service_settings').insert({ name: 'carrier', value: '1' }).returning('name');
      });
      // On PostgreSQL one statement carried all three (the child's foreign key is checked at its end); on SQLite each ran at once.
      assert.equal(statements().length, postgres() ? 1 : 3, statements().join('\n'));
      assert.deepEqual(answered, [{ name: 'carrier' }]);
      assert.deepEqual([await parents(), await children()], [['p1@1'], ['p1']]);
      await db.knex('service_settings').where({ name: 'carrier' }).delete();
    });

    it('sends them alone first when the next statement names one of their tables, so it sees them', async () => {
      const seen = await db.knex.transaction(async (trx) => {
        await writeWithNextStatement(trx, trx('kept_parents').insert({ id: 'p1', version: 1 }));
        return trx('kept_parents').where({ id: 'p1' }).first();
      });
      assert.deepEqual(seen, { id: 'p1', version: 1 });
      assert.equal(statements().length, 2);
    });

    it('never sends two kept writes on one table in one statement: the second sees the first', async () => {
      await db.knex.transaction(async (trx) => {
        await writeWithNextStatement(trx, trx('kept_parents').insert({ id: 'p1', version: 1 }));
        await writeWithNextStatement(trx, trx('kept_parents').where({ id: 'p1' }).increment('version', 1));
      });
      assert.deepEqual(await parents(), ['p1@2']);
    });

    it('commits writes kept until the end of the transaction', async () => {
      await db.knex.transaction(async (trx) => {
        await writeWithNextStatement(trx, trx('kept_parents').insert({ id: 'p1', version: 1 }));
      });
      assert.deepEqual(await parents(), ['p1@1']);
    });

    it('drops kept writes when the transaction rolls back', async () => {
      await assert.rejects(
        db.knex.transaction(async (trx) => {
          await writeWithNextStatement(trx, trx('kept_parents').insert({ id: 'p1', version: 1 }));
          throw new Error('refused');
        }),
        /refused/,
      );
      assert.deepEqual(await parents(), []);
    });

    it('fails the statement a failing kept write travels with, and the transaction keeps nothing', async () => {
      await assert.rejects(
        db.knex.transaction(async (trx) => {
          await writeWithNextStatement(trx, trx('kept_parents').insert({ id: 'p1', version: 1 }));
          // No parent p2: the foreign key refuses it, at once on SQLite, with the next statement on PostgreSQL.
          await writeWithNextStatement(trx, trx('kept_children').insert({ parent_id: 'p2' }));
          await trx('service_settings').where({ name: 'nothing' }).first();
        }),
        /foreign key/i,
      );
      assert.deepEqual([await parents(), await children()], [[], []]);
    });

    it('keeps a nested transaction to its savepoint: its kept writes roll back with it, the outer ones commit', async () => {
      await db.knex.transaction(async (trx) => {
        await writeWithNextStatement(trx, trx('kept_parents').insert({ id: 'outer', version: 1 }));
        await assert.rejects(
          trx.transaction(async (nested: Knex.Transaction) => {
            await writeWithNextStatement(nested, nested('kept_parents').insert({ id: 'nested', version: 1 }));
            throw new Error('nested refused');
          }),
          /nested refused/,
        );
        await writeWithNextStatement(trx, trx('kept_children').insert({ parent_id: 'outer' }));
      });
      assert.deepEqual([await parents(), await children()], [['outer@1'], ['outer']]);
    });

    it('rolls back a transaction whose kept writes fail just before its commit, and its connection serves the next one', async function () {
      // On SQLite the write fails at once, in the statement's own call.
      if (!postgres()) return this.skip();
      // One connection, so the next transaction gets the one the failed transaction had.
      const single = knex({ client: PostgresKeepingWrites as unknown as typeof Knex.Client, connection: testDb.url, pool: { min: 1, max: 1 } });
      try {
        await assert.rejects(
          single.transaction(async (trx) => {
            await writeWithNextStatement(trx, trx('kept_parents').insert({ id: 'p1', version: 1 }));
            await writeWithNextStatement(trx, trx('kept_children').insert({ parent_id: 'p2' }));
          }),
          /foreign key/i,
        );
        // Left inside its transaction, the connection refused the next one ("current transaction is aborted").
        await single.transaction(async (trx) => {
          await trx('kept_parents').insert({ id: 'next', version: 1 });
        });
      } finally {
        await single.destroy();
      }
      assert.deepEqual([await parents(), await children()], [['next@1'], []]);
    });

    it('keeps every write asked for at once on one transaction, on one table or several', async () => {
      await db.knex.transaction(async (trx) => {
        await Promise.all([
          writeWithNextStatement(trx, trx('kept_parents').insert({ id: 'p1', version: 1 })),
          writeWithNextStatement(trx, trx('kept_parents').insert({ id: 'p2', version: 1 })),
          writeWithNextStatement(trx, trx('kept_parents').insert({ id: 'p3', version: 1 })),
        ]);
        await writeWithNextStatement(trx, trx('kept_children').insert({ parent_id: 'p3' }));
      });
      assert.deepEqual([await parents(), await children()], [['p1@1', 'p2@1', 'p3@1'], ['p3']]);
    });

    it('refuses a write on a transaction that has ended, as Knex refuses any statement there', async () => {
      const trx = await db.knex.transaction();
      await trx.commit();
      await assert.rejects(writeWithNextStatement(trx, trx('kept_parents').insert({ id: 'late', version: 1 })), /already complete/);
      assert.deepEqual(await parents(), []);
    });

    it('runs a write at once outside a transaction', async () => {
      await writeWithNextStatement(db.knex, db.knex('kept_parents').insert({ id: 'p1', version: 1 }));
      assert.deepEqual(await parents(), ['p1@1']);
    });
  });
}
