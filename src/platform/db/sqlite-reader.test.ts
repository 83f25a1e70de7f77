import assert from 'node:assert/strict';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import knex, { type Knex } from 'knex';
import { lockOut, walFileWithOneRow } from '../../../test/support/sqlite-files.ts';
import { isDatabaseUnavailable } from './database.ts';
import { waitingSqliteReader } from './sqlite-reader.ts';

describe('the SQLite read pool on better-sqlite3', function () {
  this.timeout(20_000);
  let dir: string;
  let file: string;
  let reader: Knex;

  const openReader = (busyTimeoutMs: number) =>
    knex({
      client: waitingSqliteReader(busyTimeoutMs) as unknown as typeof Knex.Client,
      connection: { filename: file, options: { readonly: true } },
      useNullAsDefault: true,
      pool: { min: 1, max: 2 },
    });
  const count = async () => Number((await reader('t').count({ n: '*' }).first())?.n);

  beforeEach(() => {
    ({ dir, file } = walFileWithOneRow('civ-reader-'));
  });
  afterEach(async () => {
    await reader.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  it('reads on the writer’s copy of SQLite: while a connection of this process holds the database, a read waits off the event loop, then answers', async () => {
    reader = openReader(5000);
    const holder = lockOut(file);
    let turns = 0;
    const ticking = setInterval(() => turns++, 10);
    try {
      let answered = false;
      const reading = count().finally(() => (answered = true));
      await new Promise((resolve) => setTimeout(resolve, 300));
      // node-sqlite3, a second copy of SQLite, read through this lock at once: it does not see it.
      assert.equal(answered, false, 'the read did not wait for the lock');
      assert.ok(turns >= 10, `the event loop turned ${turns} times in 300 ms`);
      holder.exec('ROLLBACK');
      holder.close();
      assert.equal(await reading, 1);
    } finally {
      clearInterval(ticking);
      if (holder.open) holder.close();
    }
  });

  it('gives up after its busy timeout with SQLITE_BUSY, which answers 503', async () => {
    reader = openReader(200);
    const holder = lockOut(file);
    try {
      await assert.rejects(count(), (error: { code?: string }) => error.code === 'SQLITE_BUSY' && isDatabaseUnavailable(error));
    } finally {
      holder.close();
    }
  });

  it('keeps SQLite’s default page cache of 2 MB per connection, not better-sqlite3’s 16 MB', async () => {
    reader = openReader(5000);
    assert.deepEqual(await reader.raw('PRAGMA cache_size'), [{ cache_size: -2000 }]);
  });

  it('cannot write', async () => {
    reader = openReader(5000);
    await assert.rejects(reader('t').insert({ a: 3 }), (error: { code?: string }) => error.code === 'SQLITE_READONLY');
    assert.equal(await count(), 1);
  });
});

describe('one copy of SQLite in the service process', () => {
  const src = new URL('../..', import.meta.url).pathname;

  it("no service code uses node-sqlite3 (its own copy of SQLite, blind to better-sqlite3's locks)", () => {
    const users = readdirSync(src, { recursive: true })
      .map(String)
      .filter((file) => file.endsWith('.ts') && !file.endsWith('.test.ts'))
      .filter((file) => /from 'sqlite3'|require\('sqlite3'\)|client: 'sqlite3'/.test(readFileSync(join(src, file), 'utf8')))
      .sort();
    assert.deepEqual(users, []);
  });
});
