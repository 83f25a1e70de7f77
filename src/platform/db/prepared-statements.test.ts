import assert from 'node:assert/strict';
import { testDatabases, type TestDatabase } from '../../../test/support/test-databases.ts';
// The whole service, so that the statements it makes when its modules load are made.
import '../../service.ts';
import { AccountsRepository } from '../../accounts/accounts-repository.ts';
import { hashApiKey } from '../../accounts/api-keys.ts';
import * as admin from '../../accounts/lender-admin.ts';
import { VERIFICATION_FOR_LENDER } from '../../verifications/verifications-repository.ts';
import { openDatabase, type Database } from './database.ts';
import { fixedStatement, preparedNames, runFixed } from './fixed-statements.ts';
import { hotStatement, hotStatementsMade } from './hot-statements.ts';
import { assertNamesItsColumns, staleStatementsSeen } from './prepared-sql.ts';

describe('statements prepared once per connection', () => {
  it('refuses one that answers * instead of naming its columns', () => {
    for (const sql of [
      'select * from t',
      'select t.* from t',
      'select "t".* from "t"',
      'select a, t.*, b from t',
      'select (select x.* from x) from t',
      'with p as (select 1) select p.* from p',
      'insert into "t" ("a") values (?) returning *',
      'update "t" set "a" = ? returning "t".*',
    ])
      assert.throws(() => assertNamesItsColumns(sql), /names the columns it reads/, sql);
    for (const sql of [
      'select count(*) as n from t',
      'select a, b from t where c = ?',
      'select a * 2 as b from t',
      'insert into "t" ("a") values (?) returning "a"',
    ])
      assert.doesNotThrow(() => assertNamesItsColumns(sql), sql);
  });

  it('refuses a second hot statement under a name already taken by another text', () => {
    hotStatement('named_twice_in_a_test', 'select 1 as one');
    assert.doesNotThrow(() => hotStatement('named_twice_in_a_test', 'select 1 as one'));
    assert.throws(() => hotStatement('named_twice_in_a_test', 'select 2 as two'), /two hot statements are named/);
  });
});

for (const factory of testDatabases()) {
  describe(`statements prepared once per connection on ${factory.name}`, () => {
    let testDb: TestDatabase;
    let db: Database;
    let tables: string[];

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

    /** Another process, a release later: its migration changes the tables under this one. */
    const laterMigration = async (change: (knex: Database['knex']) => Promise<void>) => {
      const later = openDatabase(testDb.url);
      try {
        await change(later.knex);
      } finally {
        await later.close();
      }
    };

    /**
     * Every read kept prepared per connection: the hot reads, and the fixed statements that read.
     * Other test files, loaded in the same process, make statements of their own, on tables of their
     * own: a statement naming a table the service's schema lacks is theirs.
     */
    const reads = () =>
      [
        // A statement written with PostgreSQL's own placeholders ($n) is PostgreSQL's only.
        ...[...hotStatementsMade.values()]
          .filter((statement) => db.dialect === 'postgres' || !/\$\d/.test(statement.sql))
          .map((statement) => ({ label: statement.name, sql: statement.sql, run: () => db.hot.rows(statement, placeholdersOf(statement.sql)) })),
        ...preparedNames
          .texts()
          .filter((sql) => /^select\b/i.test(sql))
          .map((sql) => ({ label: sql, sql, run: () => db.knex.transaction((trx) => runFixed(trx, { sql, writes: null }, placeholdersOf(sql))) })),
      ].filter((read) => tablesNamedIn(read.sql).every((table) => tables.includes(table)));

    it('answers as before after a later migration adds a column to every table (a rolling deploy)', async () => {
      const ctx: admin.AdminContext = {
        accounts: new AccountsRepository(db.knex, db.hot),
        mode: 'sandbox',
        now: () => new Date('2026-11-21T10:00:00Z'),
        validatePolicyOverrides: () => undefined,
      };
      const lender = await admin.createLender(ctx, { name: 'Rolling Deploy Bank' });
      const { apiKey } = await admin.createKey(ctx, { lenderId: lender.id, role: 'lender' });
      const at = '2026-11-21T10:00:00.000Z';
      await db.knex('verifications').insert({
        id: 'vrf_rolling_deploy',
        lender_id: lender.id,
        obligor_reference: 'demo_prime_multi',
        creator_platforms: '["youtube"]',
        lender_name: lender.name,
        product_type: 'rbf',
        status: 'pending_consent',
        consent_token_hash: 'f'.repeat(64),
        consent_url: 'https://example.test/consent',
        expires_at: at,
        created_at: at,
        updated_at: at,
      });
      await db.knex('platform_connections').insert({ verification_id: 'vrf_rolling_deploy', platform: 'youtube', status: 'pending', updated_at: at });
      const answers = async () => ({
        principal: await ctx.accounts.findPrincipalByKeyHash(hashApiKey(apiKey)),
        verification: await db.hot.rows(VERIFICATION_FOR_LENDER, ['vrf_rolling_deploy', lender.id]),
      });

      const labels = reads().map((read) => read.label);
      assert.ok(labels.includes('principal_by_key_hash') && labels.includes('verification_for_lender'), labels.join('\n'));
      assert.ok(
        labels.some((label) => label.includes('from "webhook_endpoints"')),
        labels.join('\n'),
      );
      if (db.dialect === 'postgres') assert.ok(labels.includes('principal_counting_requests'), labels.join('\n'));
      // One after another, so that each runs again on the connection that prepared it (the pool
      // makes no second one for reads that never overlap).
      const runAll = async () => {
        const failures: string[] = [];
        for (const read of reads()) await read.run().catch((error: Error) => failures.push(`${read.label}: ${error.message}`));
        return failures;
      };
      const staleBefore = staleStatementsSeen();
      assert.deepEqual(await runAll(), []);
      const before = await answers();
      assert.equal(before.principal?.lender.id, lender.id);
      assert.equal(before.verification.length, 1);

      await laterMigration(async (knex) => {
        for (const table of tables) await knex.schema.alterTable(table, (t) => t.text('added_by_a_later_release'));
      });
      assert.deepEqual(await runAll(), []);
      assert.deepEqual(await answers(), before);
      // None went stale: no hot read was saved by its retry.
      assert.equal(staleStatementsSeen(), staleBefore);
    });

    it('prepares a statement again on another connection once a later migration changes the type of a column it answers', async function () {
      if (db.dialect !== 'postgres') this.skip();
      await db.knex.schema.createTable('stale_rows', (t) => {
        t.string('id', 10).primary();
        t.string('label', 10).notNullable();
      });
      await db.knex('stale_rows').insert({ id: 'a', label: 'first' });
      const HOT = hotStatement('stale_rows_label', 'select "label" from "stale_rows" where "id" = ?');
      const FIXED = fixedStatement('update "stale_rows" set "label" = ? where "id" = ? returning "label"');
      const update = (label: string) => db.knex.transaction((trx) => runFixed<{ label: string }>(trx, FIXED, [label, 'a']));
      const widenLabel = (length: number) =>
        laterMigration((knex) => knex.schema.alterTable('stale_rows', (t) => t.string('label', length).notNullable().alter()));
      assert.ok(preparedNames.of(FIXED.sql), 'the update is prepared under a name');
      const staleBefore = staleStatementsSeen();
      // Each step one after another on the pool's one connection, as the pool lends it.

      // A transaction's statement fails its transaction once; its connection is given up, so the
      // next transaction prepares the statement again, on a new one.
      assert.deepEqual(await update('second'), [{ label: 'second' }]);
      await widenLabel(20);
      await assert.rejects(update('third'), /cached plan must not change result type/);
      assert.deepEqual(await update('fourth'), [{ label: 'fourth' }]);

      // A hot read, which changes nothing before it is refused, is tried once more, prepared again
      // on another connection.
      assert.deepEqual(await db.hot.rows(HOT, ['a']), [{ label: 'fourth' }]);
      await widenLabel(40);
      assert.deepEqual(await db.hot.rows(HOT, ['a']), [{ label: 'fourth' }]);
      assert.equal(staleStatementsSeen(), staleBefore + 2);

      // Two connections that both prepared the read: the first to find it stale gives up the other
      // too, so the retry does not land on it.
      type PgConnection = { query(query: { name: string; text: string; values: unknown[] }): Promise<unknown> };
      const pool = db.knex.client as unknown as { acquireConnection(): Promise<PgConnection>; releaseConnection(connection: PgConnection): Promise<unknown> };
      const older = await Promise.all([pool.acquireConnection(), pool.acquireConnection()]);
      assert.notEqual(older[0], older[1]);
      for (const connection of older) await connection.query({ name: HOT.name, text: HOT.sql.replace('?', '$1'), values: ['a'] });
      for (const connection of older) await pool.releaseConnection(connection);
      await widenLabel(60);
      assert.deepEqual(await db.hot.rows(HOT, ['a']), [{ label: 'fourth' }]);
      const lent = await Promise.all([pool.acquireConnection(), pool.acquireConnection()]);
      for (const connection of lent) await pool.releaseConnection(connection);
      assert.ok(
        lent.every((connection) => !older.includes(connection)),
        'a connection made before the stale statement was lent again',
      );
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
