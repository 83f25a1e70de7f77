import assert from 'node:assert/strict';
import { testDatabases, type TestDatabase } from '../../../test/support/test-databases.ts';
// The whole service, so that the statements it makes when its modules load are made.
import '../../service.ts';
import { AccountsRepository } from '../../accounts/accounts-repository.ts';
import { hashApiKey } from '../../accounts/api-keys.ts';
import * as admin from '../../accounts/lender-admin.ts';
import { openDatabase, type Database } from './database.ts';
import { hotStatement, hotStatementsMade, type HotStatement } from './hot-statements.ts';
import { namedStatement, namedStatementsMade, runNamed, type NamedStatement } from './named-statements.ts';

/** The statements the service makes; those of tests are named `test_…`. */
const serviceHot = [...hotStatementsMade.values()].filter((statement) => !statement.name.startsWith('test_'));
const serviceNamed = [...namedStatementsMade.values()].filter((statement) => !statement.name.startsWith('test_'));

/** The values a statement binds: its `?` placeholders, or the eight `$n` of the one written for PostgreSQL alone. */
const valuesFor = (statement: HotStatement | NamedStatement): null[] =>
  new Array<null>('postgresOnly' in statement && statement.postgresOnly ? 8 : statement.sql.split('?').length - 1).fill(null);

describe('statements prepared once per connection', () => {
  it('refuses a second statement under a name already taken by another text', () => {
    hotStatement('test_named_twice', 'select 1 as one');
    assert.doesNotThrow(() => hotStatement('test_named_twice', 'select 1 as one'));
    assert.throws(() => hotStatement('test_named_twice', 'select 2 as two'), /two hot statements are named/);
    namedStatement('test_named_twice', 'select 1 as one');
    assert.throws(() => namedStatement('test_named_twice', 'select 2 as two'), /two named statements are called/);
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
     * Every statement kept prepared per connection: the hot reads, and the named statements, each of
     * those in a transaction rolled back (a write of nulls may break a constraint, which is not what
     * is looked for here).
     */
    const runAll = async (): Promise<string[]> => {
      const failures: string[] = [];
      // One after another, so that each runs again on the connection that prepared it.
      for (const statement of serviceHot) {
        if (statement.postgresOnly && db.dialect !== 'postgres') continue;
        await db.hot.rows(statement, valuesFor(statement)).catch((error: Error) => failures.push(`${statement.name}: ${error.message}`));
      }
      for (const statement of serviceNamed) {
        await db.knex
          .transaction(async (trx) => {
            await runNamed(trx, statement, valuesFor(statement)).catch((error: { code?: string; message: string }) => {
              if (error.code === '0A000' || error.code === '26000') failures.push(`${statement.name}: ${error.message}`);
            });
            throw new Error('rolled back');
          })
          .catch(() => undefined);
      }
      return failures;
    };

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
        verification: await db.hot.rows(hotStatementsMade.get('verification_for_lender')!, ['vrf_rolling_deploy', lender.id]),
      });
      const names = [...serviceHot, ...serviceNamed].map((statement) => statement.name);
      for (const name of ['principal_by_key_hash', 'verification_for_lender', 'tape_for_lender', 'insert_verification', 'live_endpoints_of_lender'])
        assert.ok(names.includes(name), names.join('\n'));

      assert.deepEqual(await runAll(), []);
      const before = await answers();
      assert.equal(before.principal?.lender.id, lender.id);
      assert.equal(before.verification.length, 1);

      await laterMigration(async (knex) => {
        for (const table of tables) await knex.schema.alterTable(table, (t) => t.text('added_by_a_later_release'));
      });
      assert.deepEqual(await runAll(), []);
      assert.deepEqual(await answers(), before);
    });

    it('prepares a hot read again on another connection once a later migration changes the type of a column it answers', async function () {
      if (db.dialect !== 'postgres') this.skip();
      await db.knex.schema.createTable('stale_rows', (t) => {
        t.string('id', 10).primary();
        t.string('label', 10).notNullable();
      });
      await db.knex('stale_rows').insert({ id: 'a', label: 'first' });
      const HOT = hotStatement('test_stale_rows_label', 'select "label" from "stale_rows" where "id" = ?');
      const widenLabel = (length: number) =>
        laterMigration((knex) => knex.schema.alterTable('stale_rows', (t) => t.string('label', length).notNullable().alter()));
      // Several connections of the hot pool prepare the read, then all of them go stale at once.
      await Promise.all(Array.from({ length: 4 }, () => db.hot.rows(HOT, ['a'])));
      assert.ok(db.hot.poolStats().free >= 2, 'the reads ran on one connection only');
      await widenLabel(40);
      for (let i = 0; i < 8; i++) assert.deepEqual(await db.hot.rows(HOT, ['a']), [{ label: 'first' }]);
      const concurrent = await Promise.all(Array.from({ length: 8 }, () => db.hot.rows(HOT, ['a'])));
      assert.deepEqual(concurrent, new Array(8).fill([{ label: 'first' }]));
    });
  });
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
