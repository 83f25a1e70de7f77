import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import request from 'supertest';
import { AccountsRepository } from '../src/accounts/accounts-repository.ts';
import * as admin from '../src/accounts/lender-admin.ts';
import { runAdmin } from '../src/admin/run-admin.ts';
import { COMPACTED_TABLES } from '../src/gdpr/personal-data.ts';
import { loadConfig } from '../src/platform/config.ts';
import { createLogger } from '../src/platform/logger.ts';
import { adminContext } from '../src/admin/admin-context.ts';
import { startService, type Service } from '../src/service.ts';
import { testDatabases, type TestDatabase } from './support/test-databases.ts';

/**
 * What an erasure leaves in PostgreSQL's data files, and what `admin gdpr compact` clears: the
 * test reads the files themselves, so it needs the server's data directory on this machine. CI runs
 * PostgreSQL on 127.0.0.1 and the tests as a user that can read it: there the scan is required.
 */
const postgres = testDatabases().find((f) => f.name === 'postgres');

describe('erasure and `admin gdpr compact`: the bytes in PostgreSQL data files', function () {
  this.timeout(120_000);
  let testDb: TestDatabase;
  let service: Service;
  let client: pg.Client;
  let env: Record<string, string>;
  let dataDirectory: string;

  before(async function () {
    if (!postgres) return this.skip();
    testDb = await postgres.create();
    env = { DATABASE_URL: testDb.url, ENCRYPTION_KEY: 'e'.repeat(64) };
    service = await startService(loadConfig(env), createLogger({ level: 'silent' }));
    client = new pg.Client({ connectionString: testDb.url });
    await client.connect();
    dataDirectory = (await client.query<{ data_directory: string }>('show data_directory')).rows[0]!.data_directory;
    const local = ['127.0.0.1', 'localhost', '[::1]'].includes(new URL(testDb.url).hostname);
    let readable = true;
    try {
      readdirSync(dataDirectory);
    } catch {
      readable = false;
    }
    if (!readable) {
      assert.ok(!local, `PostgreSQL runs on this machine but its data directory ${dataDirectory} cannot be read: run the tests as a user that can`);
      return this.skip();
    }
  });
  after(async () => {
    await client?.end();
    await service?.close();
    await testDb?.drop();
  });

  /** Whether any of the named tables' files (heap, indexes, TOAST), or with none named every file of the database, holds `text`. */
  const filesHolding = async (text: string, tables?: readonly string[]): Promise<string[]> => {
    await client.query('checkpoint');
    let files: string[];
    if (tables) {
      const { rows } = await client.query<{ path: string }>(
        `select pg_relation_filepath(c.oid) as path from pg_class c
          where c.oid in (select unnest(array[t.oid, t.reltoastrelid]) from pg_class t where t.relname = any($1) and t.relnamespace = 'public'::regnamespace)
             or c.oid in (select indexrelid from pg_index where indrelid in (select oid from pg_class where relname = any($1) and relnamespace = 'public'::regnamespace))`,
        [tables],
      );
      files = rows.filter((r) => r.path).map((r) => join(dataDirectory, r.path));
    } else {
      const { rows } = await client.query<{ oid: number }>('select oid from pg_database where datname = current_database()');
      const base = join(dataDirectory, 'base', String(rows[0]!.oid));
      files = readdirSync(base).map((name) => join(base, name));
    }
    const needle = Buffer.from(text, 'utf8');
    return files.filter((file) => {
      try {
        return readFileSync(file).includes(needle);
      } catch {
        return false;
      }
    });
  };

  it('an erased reference and lender name stay in the heap and index files after VACUUM; after `admin gdpr compact` no file of the database holds them', async () => {
    const ctx = adminContext(loadConfig(env), new AccountsRepository(service.db.knex));
    const lender = await admin.createLender(ctx, { name: 'Compaction Credit' });
    const lenderKey = (await admin.createKey(ctx, { lenderId: lender.id, role: 'lender' })).apiKey;
    const gdprKey = (await admin.createKey(ctx, { lenderId: lender.id, role: 'gdpr_admin' })).apiKey;
    const reference = `scrub-${randomUUID()}`;
    const lenderName = `Lender ${randomUUID()}`;
    const create = async (body: Record<string, unknown>) => {
      const created = await request(service.app)
        .post('/api/v1/verifications')
        .auth(lenderKey, { type: 'bearer' })
        .set('Idempotency-Key', randomUUID())
        .send(body);
      assert.equal(created.status, 201, created.text);
    };
    // Other creators' rows first, which stay: the erased row's page is then neither empty nor the
    // table's last, which VACUUM would cut off the file.
    for (let i = 0; i < 10; i++) await create({ obligor_reference: `other-${i}-${randomUUID()}`, creator_platforms: ['youtube'] });
    await create({ obligor_reference: reference, lender_name: lenderName, creator_platforms: ['youtube'] });
    // As autovacuum would have by now on a working database: statistics gathered, rows frozen.
    await client.query('vacuum analyze');
    const erased = await request(service.app).post('/api/v1/gdpr/erase').auth(gdprKey, { type: 'bearer' }).send({ obligor_id: reference });
    assert.equal(erased.status, 200, erased.text);
    // What docs/data-protection.md told operators to do, and what autovacuum does.
    await client.query(`vacuum ${COMPACTED_TABLES.join(', ')}`);
    const heap = join(dataDirectory, (await client.query<{ path: string }>("select pg_relation_filepath('verifications') as path")).rows[0]!.path);
    const obligorIndex = await client.query<{ path: string }>(
      "select pg_relation_filepath(indexrelid) as path from pg_index where indrelid = 'verifications'::regclass and pg_get_indexdef(indexrelid) like '%obligor_reference%'",
    );
    const holdingReference = await filesHolding(reference, ['verifications']);
    assert.ok(holdingReference.includes(heap), 'after VACUUM the reference is no longer in the heap file');
    assert.ok(
      obligorIndex.rows.some((r) => holdingReference.includes(join(dataDirectory, r.path))),
      'after VACUUM the reference is no longer in an index file',
    );
    assert.ok((await filesHolding(lenderName, ['verifications'])).includes(heap), 'after VACUUM the lender name is no longer in the heap file');

    const compacted = (await runAdmin(env, ['gdpr', 'compact'])) as { tables: Array<{ table: string; ms: number }>; longest_lock_ms: number };
    assert.deepEqual(
      compacted.tables.map((t) => t.table),
      [...COMPACTED_TABLES, 'pg_statistic'],
    );
    assert.deepEqual(await filesHolding(reference), [], 'the reference is still in a file of the database');
    assert.deepEqual(await filesHolding(lenderName), [], 'the lender name is still in a file of the database');
    // The service goes on with the rewritten tables.
    const again = await request(service.app)
      .post('/api/v1/verifications')
      .auth(lenderKey, { type: 'bearer' })
      .set('Idempotency-Key', randomUUID())
      .send({ obligor_reference: `after-${reference}`, creator_platforms: ['youtube'] });
    assert.equal(again.status, 201, again.text);
  });
});
