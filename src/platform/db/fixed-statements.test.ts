import assert from 'node:assert/strict';
import { testDatabases, type TestDatabase } from '../../../test/support/test-databases.ts';
import { openDatabase, type Database } from './database.ts';
import { fixedInsertOf, fixedStatement, preparedNames, PreparedNames, runFixed } from './fixed-statements.ts';
import { asPrepared, writeWithNextStatement } from './writes-with-next-statement.ts';

describe('fixed statements', () => {
  it('marks a write without returning as one that can wait for the next statement, and names its table', () => {
    assert.equal(fixedStatement('insert into "a" ("x") values (?)').writes, 'a');
    assert.equal(fixedStatement('  update "b"\n   set "x" = ? where "y" = ?').writes, 'b');
    assert.equal(fixedStatement('delete from "c" where "x" = ?').writes, 'c');
    // Its caller reads what it answers, or it is no write.
    assert.equal(fixedStatement('insert into "a" ("x") values (?) returning "x"').writes, null);
    assert.equal(fixedStatement('select "x" from "a" where "x" = ?').writes, null);
  });

  it('writes its SQL on one line', () => {
    assert.equal(fixedStatement('\n  update "b"\n    set "x" = ?\n').sql, 'update "b" set "x" = ?');
  });

  it('makes an insert of n rows once per n, its placeholders row after row', () => {
    const insert = fixedInsertOf('t', ['a', 'b'], 'on conflict ("a") do nothing');
    assert.equal(insert(2).sql, 'insert into "t" ("a", "b") values (?, ?), (?, ?) on conflict ("a") do nothing');
    assert.equal(insert(1).sql, 'insert into "t" ("a", "b") values (?, ?) on conflict ("a") do nothing');
    assert.equal(insert(2), insert(2));
    assert.equal(insert(2).writes, 't');
    assert.throws(() => insert(0), /at least one row/);
  });

  it('names each fixed text once, for PostgreSQL to prepare it, and no more texts than its bound', () => {
    const names = new PreparedNames(2);
    const first = names.name('select 1');
    assert.equal(names.name('select 1'), first);
    assert.equal(names.of('select 1'), first);
    assert.notEqual(names.name('select 2'), first);
    assert.equal(names.name('select 3'), undefined);
    assert.equal(names.of('select 3'), undefined);
    assert.match(preparedNames.of(fixedStatement('select "x" from "named" where "y" = ?').sql) ?? '', /^civ_[0-9a-f]{24}$/);
    // From the text alone: the same in every process and release.
    assert.equal(new PreparedNames(5).name('select 1'), first);
    // A bulk write (more than 100 values) stays unnamed: each connection would keep it.
    assert.equal(names.of('select 1'), first);
    assert.equal(new PreparedNames(5).name(`insert into "t" ("a") values ${new Array<string>(101).fill('(?)').join(', ')}`), undefined);
    assert.ok(new PreparedNames(5).name(`insert into "t" ("a") values ${new Array<string>(100).fill('(?)').join(', ')}`));
  });

  it('sends a fixed text under its name, a text made of fixed parts under a new one, and any other text as it is', () => {
    const names = new PreparedNames(10);
    const fixed = names.name('insert into "a" ("x") values (?)')!;
    const carrier = names.name('select 1')!;
    const query = { sql: 'insert into "a" ("x") values (?)', bindings: [1], options: { rowMode: 'array' } };
    assert.deepEqual(asPrepared(query, [], names), { ...query, options: { rowMode: 'array', name: fixed } });
    assert.equal(asPrepared('COMMIT;', [], names), 'COMMIT;');
    const built = { sql: 'insert into "a" ("x") values (?) returning "x"', bindings: [1] };
    assert.equal(asPrepared(built, [], names), built);

    const combined = { sql: 'with kept_write_0 as (insert into "a" ("x") values (?)) select 1', bindings: [1] };
    const named = asPrepared(combined, [{ sql: 'select 1' }, { sql: 'insert into "a" ("x") values (?)' }], names) as { options: { name: string } };
    assert.ok(![fixed, carrier].includes(named.options.name));
    assert.equal(names.of(combined.sql), named.options.name);
    // A kept write the query builder made: the combination is no fixed text.
    const withBuilt = { sql: 'with kept_write_0 as (update "a" set "x" = ?) select 1', bindings: [1] };
    assert.equal(asPrepared(withBuilt, [{ sql: 'select 1' }, { sql: 'update "a" set "x" = ?' }], names), withBuilt);
    assert.equal(names.of(withBuilt.sql), undefined);
  });
});

for (const factory of testDatabases()) {
  describe(`fixed statements on ${factory.name}`, () => {
    let testDb: TestDatabase;
    let db: Database;
    let sent: string[] = [];
    const record = (query: { sql: string }) => sent.push(query.sql);
    const errors: string[] = [];
    const recordError = (error: Error) => errors.push(error.message);

    const INSERT = fixedInsertOf('fixed_rows', ['id', 'label'], 'returning "id", "label"');
    const INSERT_QUIETLY = fixedInsertOf('fixed_rows', ['id', 'label']);
    const LABELLED = fixedStatement('select "id" from "fixed_rows" where "label" = ? order by "id"');

    before(async () => {
      testDb = await factory.create();
      db = openDatabase(testDb.url);
      await db.migrate();
      await db.knex.schema.createTable('fixed_rows', (t) => {
        t.string('id').primary();
        t.string('label').notNullable();
      });
      db.knex.on('query', record);
      db.knex.on('query-error', recordError);
    });
    after(async () => {
      db.knex.off('query', record);
      db.knex.off('query-error', recordError);
      await db.close();
      await testDb.drop();
    });
    beforeEach(async () => {
      await db.knex('fixed_rows').delete();
      sent = [];
      errors.length = 0;
    });
    const ids = async () => (await db.knex('fixed_rows').orderBy('id')).map((row: { id: string }) => row.id);
    const ownStatements = () => sent.filter((sql) => /fixed_rows/.test(sql));

    it("answers a write's returning rows and a select's rows, in the transaction, and commits with it", async () => {
      const answered = await db.knex.transaction(async (trx) => {
        const inserted = await runFixed(trx, INSERT(2), ['r1', 'x', 'r2', 'y']);
        const quiet = await runFixed(trx, INSERT_QUIETLY(1), ['r3', 'x']);
        return { inserted, quiet, selected: await runFixed(trx, LABELLED, ['x']) };
      });
      assert.deepEqual(answered, {
        inserted: [
          { id: 'r1', label: 'x' },
          { id: 'r2', label: 'y' },
        ],
        quiet: [],
        selected: [{ id: 'r1' }, { id: 'r3' }],
      });
      assert.deepEqual(await ids(), ['r1', 'r2', 'r3']);
    });

    it('rolls back with the transaction', async () => {
      await assert.rejects(
        db.knex.transaction(async (trx) => {
          await runFixed(trx, INSERT_QUIETLY(1), ['r1', 'x']);
          throw new Error('changed its mind');
        }),
        /changed its mind/,
      );
      assert.deepEqual(await ids(), []);
    });

    it('is kept for the next statement on PostgreSQL, as a built write is, and runs at once on SQLite', async () => {
      const selected = await db.knex.transaction(async (trx) => {
        await writeWithNextStatement(trx, { fixed: INSERT_QUIETLY(1), bindings: ['r1', 'x'] });
        // Names another table: the kept write travels in front of it.
        return runFixed(trx, fixedStatement('select "name" from "service_settings" where "name" = ?'), ['none']);
      });
      assert.deepEqual(selected, []);
      // On PostgreSQL one statement carried the write and the select; on SQLite the write ran alone, first.
      const carried = ownStatements().filter((sql) => /service_settings/.test(sql));
      const alone = ownStatements().filter((sql) => !/service_settings/.test(sql));
      assert.deepEqual([carried.length, alone.length], db.dialect === 'postgres' ? [1, 0] : [0, 1], sent.join('\n'));
      assert.deepEqual(await ids(), ['r1']);
    });

    /** How often the connection ran the prepared statement named for `sql`: null if it never prepared it. */
    const runsOnConnection = async (trx: Parameters<typeof runFixed>[0], sql: string): Promise<number | null> => {
      const name = preparedNames.of(sql);
      const result = await trx.raw<{ rows: Array<{ runs: string }> }>(
        'select generic_plans + custom_plans as runs from pg_prepared_statements where name = ?',
        [name ?? ''],
      );
      return result.rows.length === 0 ? null : Number(result.rows[0]!.runs);
    };

    it('is prepared once per connection on PostgreSQL, and run again under its name', async function () {
      if (db.dialect !== 'postgres') this.skip();
      await db.knex.transaction(async (trx) => {
        const before = (await runsOnConnection(trx, LABELLED.sql)) ?? 0;
        for (let i = 0; i < 3; i++) assert.deepEqual(await runFixed(trx, LABELLED, ['nobody']), []);
        assert.equal(await runsOnConnection(trx, LABELLED.sql), before + 3);
      });
    });

    it('carries a kept write under one prepared name on PostgreSQL when both are fixed, and unnamed when the write was built', async function () {
      if (db.dialect !== 'postgres') this.skip();
      const CARRIER = fixedStatement('select "name" from "service_settings" where "name" = ? and 1 = 1');
      const prepared = await db.knex.transaction(async (trx) => {
        await writeWithNextStatement(trx, { fixed: INSERT_QUIETLY(1), bindings: ['r1', 'x'] });
        await runFixed(trx, CARRIER, ['none']);
        await writeWithNextStatement(trx, trx('fixed_rows').update({ label: 'built' }).where({ id: 'r1' }));
        await runFixed(trx, CARRIER, ['none']);
        const result = await trx.raw<{ rows: Array<{ statement: string }> }>(
          "select statement from pg_prepared_statements where statement like 'with kept_write_0 %'",
        );
        // Earlier tests may have left others on this connection: those carried by this one.
        return result.rows.map((row) => row.statement.replace(/\$\d+/g, '?')).filter((statement) => statement.endsWith(CARRIER.sql));
      });
      assert.equal(sent.filter((sql) => sql.startsWith('with kept_write_0')).length, 2, sent.join('\n'));
      assert.deepEqual(prepared, [`with kept_write_0 as (${INSERT_QUIETLY(1).sql}) ${CARRIER.sql}`]);
      assert.deepEqual(await ids(), ['r1']);
      assert.deepEqual(
        (await db.knex('fixed_rows').select('label')).map((row: { label: string }) => row.label),
        ['built'],
      );
    });

    it('fails with the statement named and counted as any failed statement, and the transaction keeps nothing', async () => {
      await assert.rejects(
        db.knex.transaction(async (trx) => {
          await runFixed(trx, INSERT_QUIETLY(1), ['r1', 'x']);
          await runFixed(trx, INSERT_QUIETLY(1), ['r1', 'again']);
        }),
        (error: Error) => /insert into "fixed_rows"/.test(error.message),
      );
      assert.equal(errors.length, 1, errors.join('\n'));
      assert.deepEqual(await ids(), []);
    });

    it('runs a write at once outside a transaction, as a built write does', async () => {
      await writeWithNextStatement(db.knex, { fixed: INSERT_QUIETLY(2), bindings: ['r1', 'x', 'r2', 'y'] });
      assert.deepEqual(await ids(), ['r1', 'r2']);
    });

    it('refuses to answer rows outside a transaction, or to run in one that has ended', async () => {
      await assert.rejects(runFixed(db.knex as never, LABELLED, ['x']), /runs in a transaction/);
      let ended: Parameters<typeof runFixed>[0] | undefined;
      await db.knex.transaction(async (trx) => {
        ended = trx;
      });
      await assert.rejects(runFixed(ended!, INSERT_QUIETLY(1), ['late', 'x']), /Transaction query already complete/);
      await assert.rejects(writeWithNextStatement(ended!, { fixed: INSERT_QUIETLY(1), bindings: ['late', 'x'] }), /Transaction query already complete/);
      assert.deepEqual(await ids(), []);
    });
  });
}
