import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import knex, { type Knex } from 'knex';
import { openDatabase, type Database } from './database.ts';
import { GroupCommit } from './group-commit.ts';
import { commitInGroups, inUnitOfWork, transactionOf } from './unit-of-work.ts';
import { AUTOCHECKPOINT_BACKSTOP_PAGES, RESTART_AFTER_PAGES, WalRestart, catchUpWal, startWalCheckpointer, type WalCheckpointer } from './wal-checkpointer.ts';

const PAGE = 4096;
const sizeOf = (file: string) => {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
};

async function until(condition: () => boolean, what: string, ms = 5_000): Promise<void> {
  for (const deadline = Date.now() + ms; !condition();) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('the SQLite WAL checkpointed off the event loop', function () {
  this.timeout(30_000);
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'civ-checkpoint-'));
  });
  afterEach(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  describe('as the service opens its database', () => {
    let database: Database;
    let file: string;
    beforeEach(async () => {
      file = join(dir, 'db.sqlite');
      database = openDatabase(`sqlite:${file}`);
      await database.knex.schema.createTable('t', (table) => {
        table.integer('id').primary();
        table.text('v');
      });
    });
    afterEach(async () => {
      await database.close();
    });
    /** `rows` rows of `bytes` characters each, in one transaction. */
    const insertInOne = (rows: number, bytes: number) =>
      database.knex.transaction(async (trx) => {
        for (let from = 0; from < rows; from += 250) await trx('t').insert(Array.from({ length: 250 }, (_, i) => ({ id: from + i, v: 'x'.repeat(bytes) })));
      });

    it('leaves checkpoints to its own connection, the writer’s only a backstop, and the committed pages still reach the database file', async () => {
      const [setting] = await database.knex.raw<Array<{ wal_autocheckpoint: number }>>('PRAGMA wal_autocheckpoint');
      assert.equal(setting!.wal_autocheckpoint, AUTOCHECKPOINT_BACKSTOP_PAGES);
      const beforeCheckpoint = sizeOf(file);
      // About 1,200 pages in one commit: past SQLite's default threshold of 1,000, where the writer
      // used to copy them into the file inside its commit, and far below its backstop now.
      await insertInOne(4000, 1000);
      await until(() => sizeOf(file) >= beforeCheckpoint + 1000 * PAGE, 'the pages are copied into the database file');
      assert.equal(Number((await database.reader('t').count({ n: '*' }).first())?.n), 4000);
    });

    it('cuts the WAL file back once it starts again after a longer transaction, so it keeps no more than its length of old pages', async () => {
      // About 6,000 pages in one commit: the WAL file grows to 24 MiB.
      await insertInOne(6000, 3900);
      assert.ok(sizeOf(`${file}-wal`) > 5000 * PAGE);
      // Small commits go on while the checkpointer copies the WAL and asks the writer to start it again.
      let id = 6000;
      for (const deadline = Date.now() + 10_000; sizeOf(`${file}-wal`) > RESTART_AFTER_PAGES * PAGE;) {
        assert.ok(Date.now() < deadline, `the WAL file is still ${Math.round(sizeOf(`${file}-wal`) / PAGE)} pages long`);
        await database.knex('t').insert({ id: id++, v: 'small' });
        await new Promise((resolve) => setTimeout(resolve, 30));
      }
      assert.equal(Number((await database.reader('t').count({ n: '*' }).first())?.n), id);
    });
  });

  it('checkpoints on the writer’s copy of SQLite: a connection of this process holding the database keeps it out, and the refusal is counted', async () => {
    const file = join(dir, 'held.sqlite');
    const holder = new BetterSqlite3(file);
    holder.exec('PRAGMA journal_mode = WAL; create table t (a integer); PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE; insert into t values (1)');
    const errors: unknown[] = [];
    const checkpointer = startWalCheckpointer(file, 100, new WalRestart((error) => errors.push(error), 10));
    try {
      // A second copy of SQLite in the process (node-sqlite3's) does not see this lock, and
      // checkpointed under it.
      await until(() => errors.length > 0, 'a pass is refused');
      assert.ok(
        errors.every((error) => (error as { code?: string }).code === 'SQLITE_BUSY'),
        errors.map((error) => String(error)).join(', '),
      );
    } finally {
      await checkpointer.close();
      holder.close();
    }
  });

  it('closes while a pass waits for a lock: its thread ends, and a second close is the same wait', async () => {
    const file = join(dir, 'closing.sqlite');
    const holder = new BetterSqlite3(file);
    holder.exec('PRAGMA journal_mode = WAL; create table t (a integer); PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE; insert into t values (1)');
    const threads = () => Number(/^Threads:\s+(\d+)/m.exec(readFileSync('/proc/self/status', 'utf8'))![1]);
    const errors: unknown[] = [];
    const checkpointer = startWalCheckpointer(file, 1000, new WalRestart((error) => errors.push(error), 10));
    try {
      // A pass is under way on the thread, waiting up to its busy timeout for the lock.
      await until(() => errors.length > 0, 'a pass is refused');
      const running = threads();
      const first = checkpointer.close();
      assert.equal(checkpointer.close(), first);
      await first;
      await until(() => threads() < running, 'the thread has ended');
    } finally {
      holder.close();
    }
  });

  describe('with the writer on its own', () => {
    let writer: Knex;
    let checkpointer: WalCheckpointer | undefined;
    let file: string;
    let restart: WalRestart;
    let errors: unknown[];
    beforeEach(async () => {
      file = join(dir, 'writer.sqlite');
      // The checkpointer passes every 10 ms, and the writer's copy is tried as often.
      restart = new WalRestart((error) => errors.push(error), 10);
      errors = [];
      writer = knex({
        client: 'better-sqlite3',
        connection: { filename: file },
        useNullAsDefault: true,
        pool: {
          min: 1,
          max: 1,
          afterCreate: (connection: { pragma(text: string): unknown }, done: (error: Error | null, connection: unknown) => void) => {
            for (const pragma of ['busy_timeout = 5000', 'journal_mode = WAL', 'wal_autocheckpoint = 0']) connection.pragma(pragma);
            done(null, connection);
          },
        },
      });
      // The writer as the service has it: units of work in group commits, each followed by the catch-up.
      commitInGroups(writer, new GroupCommit(writer, 5000, () => catchUpWal(writer, restart), 't'));
      await writer.schema.createTable('t', (table) => {
        table.integer('id').primary();
        table.text('v');
        table.text('name');
      });
    });
    afterEach(async () => {
      await checkpointer?.close();
      checkpointer = undefined;
      await writer.destroy();
    });
    const insertRows = (from: number, count: number) =>
      inUnitOfWork(writer, (unit) => transactionOf(unit)('t').insert(Array.from({ length: count }, (_, i) => ({ id: from + i, v: 'y'.repeat(1000) }))));
    /** The WAL header's checkpoint sequence number: SQLite adds one each time the WAL starts again from its beginning. */
    const walGeneration = () => readFileSync(`${file}-wal`).readUInt32BE(12);

    it('copies the WAL’s last pages after its next commit when asked, and its next transaction starts the WAL again', async () => {
      await insertRows(0, 400);
      const generation = walGeneration();
      restart.wanted = true;
      await insertRows(400, 40);
      // The copy follows the group's commit, before the next group begins.
      for (const until = Date.now() + 2000; restart.wanted && Date.now() < until;) await new Promise((resolve) => setTimeout(resolve, 1));
      assert.equal(restart.wanted, false);
      await insertRows(440, 40);
      assert.equal(walGeneration(), generation + 1);
      assert.equal(Number((await writer('t').count({ n: '*' }).first())?.n), 480);
    });

    it('keeps the WAL short under steady writes, with the checkpointer asking the writer to start it again', async () => {
      checkpointer = startWalCheckpointer(file, 5000, restart, 100);
      // Its thread takes a moment to start: the writes begin once it has asked once, after a first
      // 150 pages or so.
      for (let from = -600; from < 0; from += 200) await insertRows(from, 200);
      for (const until = Date.now() + 10_000; !restart.wanted && Date.now() < until;) await new Promise((resolve) => setTimeout(resolve, 5));
      assert.ok(restart.wanted, 'the checkpointer never asked');
      restart.wanted = false;
      const generation = walGeneration();
      // About 2,500 pages in 250 transactions, ten queued at a time, committed in groups.
      for (let round = 0; round < 25; round++) {
        await Promise.all(Array.from({ length: 10 }, (_, n) => insertRows((round * 10 + n) * 40, 40)));
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      // Without the writer's copy the WAL never starts again and holds every page written: 2,500 and
      // more. How often it starts again depends on when the two copies meet; once is enough here.
      assert.ok(walGeneration() > generation, 'the WAL never started again');
      assert.ok(sizeOf(`${file}-wal`) < 2400 * PAGE, `the WAL is ${Math.round(sizeOf(`${file}-wal`) / PAGE)} pages long`);
      assert.deepEqual(errors, []);
      assert.equal(Number((await writer('t').count({ n: '*' }).first())?.n), 10_600);
    });
  });
});
