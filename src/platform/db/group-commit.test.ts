import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import knex, { type Knex } from 'knex';
import { isDatabaseUnavailable } from './database.ts';
import { GroupCommit } from './group-commit.ts';
import { commitInGroups, inUnitOfWork, transactionOf } from './unit-of-work.ts';

describe('group commit on the SQLite writer', function () {
  this.timeout(20_000);
  let dir: string;
  let file: string;
  let writer: Knex;
  let otherProcess: BetterSqlite3.Database;
  /** How many transactions the writer began: one per group. */
  let begins: number;

  const openWriter = (waitMs = 5000) => {
    writer = knex({ client: 'better-sqlite3', connection: { filename: file }, useNullAsDefault: true, pool: { min: 1, max: 1 } });
    writer.on('query', (query: { sql: string }) => {
      if (query.sql.startsWith('BEGIN')) begins++;
    });
    commitInGroups(writer, new GroupCommit(writer, waitMs, async () => {}, 'locks'));
    return writer;
  };
  const unit = (work: (trx: Knex.Transaction) => Promise<unknown>) => inUnitOfWork(writer, (u) => work(transactionOf(u)));
  /** What another connection sees committed. */
  const committedValues = () => (otherProcess.prepare('select a from t order by a').all() as Array<{ a: number }>).map((row) => row.a);
  const outcomesOf = (settled: PromiseSettledResult<unknown>[]) => settled.map((outcome) => outcome.status);

  beforeEach(() => {
    begins = 0;
    dir = mkdtempSync(join(tmpdir(), 'civ-group-commit-'));
    file = join(dir, 'writer.sqlite');
    otherProcess = new BetterSqlite3(file);
    otherProcess.exec('PRAGMA journal_mode = WAL; create table t (a integer unique not null); create table locks (name text)');
  });
  afterEach(async () => {
    await writer?.destroy();
    otherProcess.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('commits units queued together in one transaction, each resolving only once its rows are committed', async () => {
    openWriter();
    const seenAtResolve: number[][] = [];
    await Promise.all(Array.from({ length: 10 }, (_, i) => unit((trx) => trx('t').insert({ a: i })).then(() => seenAtResolve.push(committedValues()))));
    for (const seen of seenAtResolve) assert.ok(seen.length >= 1 && seen.every((a) => a < 10));
    assert.deepEqual(committedValues(), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    // All ten queued before the group took the write lock: one transaction, or two when the machine
    // stalled the first past GROUP_OPEN_MS (15 ms), as a busy test run can.
    assert.ok(begins <= 2, `${begins} transactions for ten units queued together`);
  });

  it('keeps a group open for units that arrive on later turns of the event loop, as requests do', async () => {
    openWriter();
    const arrivals: Array<Promise<unknown>> = [];
    for (let i = 0; i < 6; i++) {
      arrivals.push(unit((trx) => trx('t').insert({ a: i })));
      await new Promise((resolve) => setImmediate(resolve));
    }
    await Promise.all(arrivals);
    assert.deepEqual(committedValues(), [0, 1, 2, 3, 4, 5]);
    assert.ok(begins <= 2, `${begins} transactions for six units`);
  });

  it('rolls back a unit that throws, or whose statement a constraint refuses, alone; the rest of its group commits', async () => {
    openWriter();
    const outcomes = await Promise.allSettled([
      unit((trx) => trx('t').insert({ a: 1 })),
      unit(async (trx) => {
        await trx('t').insert({ a: 2 });
        throw new Error('this unit fails');
      }),
      unit(async (trx) => {
        await trx('t').insert({ a: 3 });
        await trx('t').insert({ a: 1 });
      }),
      unit((trx) => trx('t').insert({ a: 4 })),
    ]);
    assert.deepEqual(outcomesOf(outcomes), ['fulfilled', 'rejected', 'rejected', 'fulfilled']);
    assert.match(String((outcomes[2] as PromiseRejectedResult).reason), /UNIQUE constraint failed: t.a/);
    assert.deepEqual(committedValues(), [1, 4]);
  });

  it('fails every unit of a group whose commit fails, and keeps none of their rows', async () => {
    // A deferred constraint is checked at the commit, after each unit released its savepoint: the one
    // way a group's commit can fail for what a unit wrote (the service's schema has none).
    otherProcess.exec(
      'create table parent (id integer primary key); create table child (parent_id integer references parent (id) deferrable initially deferred)',
    );
    openWriter();
    await writer.raw('PRAGMA foreign_keys = ON');
    const outcomes = await Promise.allSettled(
      Array.from({ length: 5 }, (_, i) =>
        unit(async (trx) => {
          await trx('t').insert({ a: i });
          if (i === 2) await trx('child').insert({ parent_id: 42 });
        }),
      ),
    );
    // The five shared the failed commit.
    assert.deepEqual(outcomesOf(outcomes), ['rejected', 'rejected', 'rejected', 'rejected', 'rejected']);
    for (const outcome of outcomes) assert.match(String((outcome as PromiseRejectedResult).reason), /FOREIGN KEY constraint failed|group commit/);
    assert.deepEqual(committedValues(), []);
    await unit((trx) => trx('t').insert({ a: 7 }));
    assert.deepEqual(committedValues(), [7]);
  });

  describe('when SQLite rolls the whole transaction back (a full disk, an I/O error)', () => {
    beforeEach(() => {
      otherProcess.exec(
        "create table lender_rows (who text); create trigger disk_full before insert on lender_rows when new.who = 'lender-B' begin select raise(rollback, 'simulated full disk'); end",
      );
    });
    const committedRows = () => otherProcess.prepare('select who from lender_rows').all();

    it('fails the units already run, each with its own error carrying no other unit’s values, and runs the rest in the next group', async () => {
      openWriter();
      const outcomes = await Promise.allSettled([
        unit((trx) => trx('lender_rows').insert({ who: 'first' })),
        unit((trx) => trx('lender_rows').insert({ who: 'lender-A' })),
        unit((trx) => trx('lender_rows').insert({ who: 'lender-B' })),
        unit((trx) => trx('lender_rows').insert({ who: 'lender-C' })),
      ]);
      // One group: the first two ran before lender-B's error undid it; lender-C had not run yet.
      assert.deepEqual(outcomesOf(outcomes), ['rejected', 'rejected', 'rejected', 'fulfilled']);
      const [first, a, b] = outcomes.slice(0, 3).map((outcome) => (outcome as PromiseRejectedResult).reason as Error);
      assert.notEqual(first, a);
      assert.notEqual(a, b);
      assert.doesNotMatch(a!.message, /lender-B/);
      assert.match(b!.message, /simulated full disk/);
      assert.deepEqual(committedRows(), [{ who: 'lender-C' }]);
    });
  });

  it('opens each group with the write lock, so a unit that only read leaves the next no stale snapshot', async () => {
    openWriter();
    await unit((trx) => trx('t').insert({ a: 0 }));
    otherProcess.pragma('busy_timeout = 0');
    let anotherProcessWrote: boolean | undefined;
    const outcomes = await Promise.allSettled([
      unit((trx) => trx('t').insert({ a: 1 })),
      unit(async (trx) => trx('t').select()),
      unit(async (trx) => {
        // Between two units of one group, as the operator's CLI might.
        try {
          otherProcess.exec('insert into t values (99)');
          anotherProcessWrote = true;
        } catch (error) {
          if ((error as { code?: string }).code !== 'SQLITE_BUSY') throw error;
          anotherProcessWrote = false;
        }
        await trx('t').insert({ a: 2 });
      }),
    ]);
    assert.deepEqual(outcomesOf(outcomes), ['fulfilled', 'fulfilled', 'fulfilled']);
    assert.equal(anotherProcessWrote, false, 'another process wrote while the group was open');
    assert.deepEqual(committedValues(), [0, 1, 2]);
  });

  it('ends in 503 the wait of a unit begun inside another, which waits for itself, and goes on', async () => {
    openWriter(300);
    const started = Date.now();
    await assert.rejects(
      unit(async (trx) => {
        await trx('t').insert({ a: 1 });
        await unit((inner) => inner('t').insert({ a: 9 }));
      }),
      (error: Error) => error.name === 'KnexTimeoutError' && isDatabaseUnavailable(error),
    );
    assert.ok(Date.now() - started < 5000, `failed after ${Date.now() - started} ms`);
    await unit((trx) => trx('t').insert({ a: 2 }));
    assert.deepEqual(committedValues(), [2]);
  });

  it('is off with the switch: each unit is a transaction of its own', async () => {
    writer = knex({ client: 'better-sqlite3', connection: { filename: file }, useNullAsDefault: true, pool: { min: 1, max: 1 } });
    writer.on('query', (query: { sql: string }) => {
      if (query.sql.startsWith('BEGIN')) begins++;
    });
    await Promise.all(Array.from({ length: 5 }, (_, i) => unit((trx) => trx('t').insert({ a: i }))));
    assert.equal(begins, 5);
    assert.deepEqual(committedValues(), [0, 1, 2, 3, 4]);
  });
});
