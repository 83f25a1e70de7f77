import assert from 'node:assert/strict';
import { testDatabases, type TestDatabase } from '../../../test/support/test-databases.ts';
// The whole service, so that every statement it prepares is made.
import '../../service.ts';
import { openDatabase, type Database } from './database.ts';
import { preparedNames, runFixed } from './fixed-statements.ts';
import { assertNamesItsColumns, hotStatementsMade } from './hot-statements.ts';

describe('statements prepared once per connection', () => {
  it('refuses one that reads * instead of naming its columns', () => {
    for (const sql of [
      'select * from t',
      'select t.* from t',
      'select a, t.*, b from t',
      'select (select x.* from x) from t',
      'with p as (select 1) select p.* from p',
    ])
      assert.throws(() => assertNamesItsColumns(sql), /names the columns it reads/, sql);
    for (const sql of ['select count(*) as n from t', 'select a, b from t where c = ?', 'select a * 2 as b from t', 'insert into "t" ("a") values (?)'])
      assert.doesNotThrow(() => assertNamesItsColumns(sql), sql);
  });
});

for (const factory of testDatabases()) {
  describe(`statements prepared once per connection on ${factory.name}`, () => {
    let testDb: TestDatabase;
    let db: Database;
    let tables: string[];
    /**
     * Every read kept prepared per connection: the hot reads, and the fixed statements that read.
     * Other test files, loaded in the same process, make statements of their own, on tables of their
     * own: a statement naming a table the service's schema lacks is theirs.
     */
    const reads = () =>
      [
        // A statement written with PostgreSQL's own placeholders ($n) is PostgreSQL's only.
        ...hotStatementsMade
          .filter((statement) => db.dialect === 'postgres' || !/\$\d/.test(statement.sql))
          .map((statement) => ({ label: statement.name, sql: statement.sql, run: () => db.hot.rows(statement, placeholdersOf(statement.sql)) })),
        ...preparedNames
          .texts()
          .filter((sql) => /^select\b/i.test(sql))
          .map((sql) => ({ label: sql, sql, run: () => db.knex.transaction((trx) => runFixed(trx, { sql, writes: null }, placeholdersOf(sql))) })),
      ].filter((read) => tablesNamedIn(read.sql).every((table) => tables.includes(table)));

    before(async () => {
      testDb = await factory.create();
      db = openDatabase(testDb.url);
      await db.migrate();
      tables = await tablesOf(db);
    });
    after(async () => {
      await db.close();
      await testDb.drop();
    });

    it('answers as before after a later migration adds a column to every table (a rolling deploy)', async () => {
      const labels = reads().map((read) => read.label);
      assert.ok(labels.includes('principal_by_key_hash') && labels.includes('verification_for_lender'), labels.join('\n'));
      assert.ok(
        labels.some((label) => label.includes('from "webhook_endpoints"')),
        labels.join('\n'),
      );
      if (db.dialect === 'postgres') assert.ok(labels.includes('principal_counting_requests'), labels.join('\n'));
      // Several at once, so that every connection of the pool has prepared each.
      const runAll = () =>
        Promise.all(reads().flatMap((read) => Array.from({ length: 4 }, () => read.run().catch((error: Error) => `${read.label}: ${error.message}`))));
      const failures = (answers: unknown[]) => answers.filter((answer) => typeof answer === 'string');
      assert.deepEqual(failures(await runAll()), []);
      assert.ok(tables.includes('lender_accounts') && tables.includes('verifications'), tables.join());
      // Another process, a release later: its migration adds a column to each table.
      const later = openDatabase(testDb.url);
      try {
        for (const table of tables) await later.knex.schema.alterTable(table, (t) => t.text('added_by_a_later_release'));
      } finally {
        await later.close();
      }
      assert.deepEqual(failures(await runAll()), []);
    });
  });
}

/** A value for each placeholder (`?`, or PostgreSQL's `$n`): the read finds nothing, but runs. */
function placeholdersOf(sql: string): null[] {
  const numbered = [...sql.matchAll(/\$(\d+)/g)].map((match) => Number(match[1]));
  return new Array<null>(numbered.length > 0 ? Math.max(...numbered) : (sql.match(/\?/g) ?? []).length).fill(null);
}

/** The tables a statement reads or writes: those after `from`, `join`, `into` or `update`, quoted or not, but its own `with` queries. */
function tablesNamedIn(sql: string): string[] {
  const own = [...sql.matchAll(/(?:\bwith|,)\s+(\w+)\s+as\s*\(/gi)].map((match) => match[1]!);
  return [...sql.matchAll(/\b(?:from|join|into|(?<!do )update)\s+"?(\w+)"?/gi)].map((match) => match[1]!).filter((name) => !own.includes(name));
}

async function tablesOf(db: Database): Promise<string[]> {
  const rows: Array<{ name: string }> =
    db.dialect === 'postgres'
      ? (
          await db.knex.raw<{ rows: Array<{ name: string }> }>(
            "select table_name as name from information_schema.tables where table_schema = current_schema() and table_type = 'BASE TABLE'",
          )
        ).rows
      : await db.knex.raw<Array<{ name: string }>>("select name from sqlite_master where type = 'table' and name not like 'sqlite_%'");
  return rows.map((row) => row.name).filter((name) => !name.startsWith('knex_'));
}
