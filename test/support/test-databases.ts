import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { openDatabase, type Database } from '../../src/platform/db/database.ts';
import { randomBase62 } from '../../src/platform/ids.ts';

/** A throw-away database for one test suite: a fresh SQLite file, or a fresh PostgreSQL database. */
export interface TestDatabase {
  name: 'sqlite' | 'postgres';
  url: string;
  drop(): Promise<void>;
}

export type TestDatabaseFactory = { name: TestDatabase['name']; create(): Promise<TestDatabase> };

/**
 * The databases storage tests run on: always SQLite, and PostgreSQL when TEST_POSTGRES_URL names a
 * server (CI starts one), so the same tests prove both dialects.
 */
export function testDatabases(): TestDatabaseFactory[] {
  const factories: TestDatabaseFactory[] = [
    {
      name: 'sqlite',
      async create() {
        const dir = mkdtempSync(join(tmpdir(), 'civ-test-'));
        return { name: 'sqlite', url: `sqlite:${join(dir, 'test.sqlite')}`, drop: async () => rmSync(dir, { recursive: true, force: true }) };
      },
    },
  ];
  const serverUrl = process.env.TEST_POSTGRES_URL;
  if (serverUrl) {
    factories.push({
      name: 'postgres',
      async create() {
        const database = `civ_test_${randomBase62(12).toLowerCase()}`;
        const admin = new pg.Client({ connectionString: serverUrl });
        await admin.connect();
        await admin.query(`CREATE DATABASE ${database}`);
        await admin.end();
        const url = new URL(serverUrl);
        url.pathname = `/${database}`;
        return {
          name: 'postgres',
          url: url.toString(),
          async drop() {
            const client = new pg.Client({ connectionString: serverUrl });
            await client.connect();
            await client.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
            await client.end();
          },
        };
      },
    });
  }
  return factories;
}

/**
 * A migrated database of `factory` for the tests of the enclosing `describe`: opened before them,
 * closed and dropped after them. Read `db` inside the tests, once the hook has run.
 */
export function migratedDatabase(factory: TestDatabaseFactory): { readonly db: Database } {
  let testDb: TestDatabase | undefined;
  let opened: Database | undefined;
  before(async () => {
    testDb = await factory.create();
    opened = openDatabase(testDb.url);
    await opened.migrate();
  });
  after(async () => {
    await opened?.close();
    await testDb?.drop();
  });
  return {
    get db() {
      if (!opened) throw new Error('the database is opened by a before() hook: read it inside a test');
      return opened;
    },
  };
}
