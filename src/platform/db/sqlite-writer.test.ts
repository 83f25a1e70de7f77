import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import knex, { type Knex } from 'knex';
import { isDatabaseUnavailable } from './database.ts';
import { WRITER_SESSIONS, retryWhileBusy, waitingSqliteWriter, type WriterSession } from './sqlite-writer.ts';

describe('the SQLite writer on better-sqlite3', function () {
  this.timeout(20_000);
  let dir: string;
  let file: string;
  let writer: Knex;
  let otherProcess: BetterSqlite3.Database;
  /** Every SQL text the writer's connection prepared. */
  let prepared: string[];

  /** `groupOpenMs` as the service has it unless given. */
  const openWriter = (busyTimeoutMs: number, groupOpenMs?: number) => {
    const recording = new WeakSet<BetterSqlite3.Database>();
    return knex({
      client: waitingSqliteWriter(
        busyTimeoutMs,
        'PRAGMA busy_timeout = 0; PRAGMA journal_mode = WAL;',
        undefined,
        groupOpenMs,
      ) as unknown as typeof Knex.Client,
      connection: { filename: file },
      useNullAsDefault: true,
      pool: {
        min: 1,
        max: WRITER_SESSIONS,
        afterCreate(session: WriterSession, done: (error: Error | null, session: unknown) => void) {
          // Every session is the same connection: record its statements once.
          const { database } = session.shared;
          if (!recording.has(database)) {
            recording.add(database);
            const prepare = database.prepare.bind(database);
            database.prepare = (sql: string) => {
              prepared.push(sql);
              return prepare(sql);
            };
          }
          done(null, session);
        },
      },
    });
  };

  /** Counts the turns of the event loop while `work` runs: a synchronous wait would leave none. */
  async function loopTurnsDuring<T>(work: Promise<T>): Promise<{ result: T; turns: number; ms: number }> {
    let turns = 0;
    const started = Date.now();
    const ticking = setInterval(() => turns++, 10);
    try {
      const result = await work;
      return { result, turns, ms: Date.now() - started };
    } finally {
      clearInterval(ticking);
    }
  }

  beforeEach(() => {
    prepared = [];
    dir = mkdtempSync(join(tmpdir(), 'civ-writer-'));
    file = join(dir, 'writer.sqlite');
    otherProcess = new BetterSqlite3(file);
    otherProcess.exec('PRAGMA journal_mode = WAL; create table t (a integer)');
  });
  afterEach(async () => {
    await writer.destroy();
    otherProcess.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('waits for another connection’s write lock off the event loop, then writes', async () => {
    writer = openWriter(5000);
    await writer('t').insert({ a: 1 });
    otherProcess.exec('BEGIN IMMEDIATE; insert into t values (2)');
    setTimeout(() => otherProcess.exec('COMMIT'), 300);
    const { turns, ms } = await loopTurnsDuring(writer.transaction(async (trx) => trx('t').insert({ a: 3 })));
    assert.ok(ms >= 250, `wrote after ${ms} ms, before the lock was released`);
    assert.ok(turns >= 10, `the event loop turned ${turns} times in ${ms} ms`);
    assert.deepEqual(
      (await writer('t').orderBy('a').select('a')).map((row: { a: number }) => row.a),
      [1, 2, 3],
    );
  });

  it('never retries a statement whose transaction ended while it waited for the lock', async () => {
    writer = openWriter(5000);
    otherProcess.exec('BEGIN IMMEDIATE; insert into t values (2)');
    setTimeout(() => otherProcess.exec('COMMIT'), 200);
    // The first insert waits for the lock; its sibling fails at once, so Knex rolls the transaction
    // back and lends the connection on while the first still waits.
    await assert.rejects(
      writer.transaction((trx) => Promise.all([trx('t').insert({ a: 3 }), trx('missing_table').insert({ a: 4 })])),
      /no such table/,
    );
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.deepEqual(
      (await writer('t').orderBy('a').select('a')).map((row: { a: number }) => row.a),
      [2],
    );
  });

  it('lets the event loop turn between transactions queued for the connection', async () => {
    writer = openWriter(5000);
    await writer('t').insert({ a: 0 });
    const order: string[] = [];
    let queued = true;
    const turn = () => {
      if (!queued) return;
      order.push('turn');
      setImmediate(turn);
    };
    setImmediate(turn);
    await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        writer.transaction(async (trx) => {
          await trx('t').insert({ a: i });
          order.push('tx');
        }),
      ),
    );
    queued = false;
    assert.equal(order.filter((step) => step === 'tx').length, 10);
    assert.ok(!order.join(' ').includes('tx tx'), `transactions ran back to back: ${order.join(' ')}`);
  });

  it('lets a single statement queued behind transactions go next, one at a time between two transactions', async () => {
    writer = openWriter(5000);
    await writer('t').insert({ a: 0 });
    const order: string[] = [];
    let releaseFirst!: () => void;
    const firstHolds = new Promise<void>((resolve) => (releaseFirst = resolve));
    const settle = () => new Promise((resolve) => setTimeout(resolve, 50));
    // The first transaction holds the connection until the others and the statements are queued.
    const first = writer.transaction(async (trx) => {
      await trx('t').insert({ a: 1 });
      order.push('tx0');
      await firstHolds;
    });
    await settle();
    const transactions = Array.from({ length: 4 }, (_, i) =>
      writer.transaction(async (trx) => {
        await trx('t').insert({ a: 10 + i });
        order.push(`tx${i + 1}`);
      }),
    );
    await settle();
    const statements = Array.from({ length: 3 }, (_, i) =>
      writer('t')
        .insert({ a: 100 + i })
        .then(() => order.push(`s${i}`)),
    );
    await settle();
    releaseFirst();
    await Promise.all([first, ...transactions, ...statements]);
    assert.deepEqual(order, ['tx0', 's0', 'tx1', 's1', 'tx2', 's2', 'tx3', 'tx4']);
    assert.equal(committedValues().length, 9);
  });

  /** The values of t another connection sees: only what has been committed. */
  const committedValues = () => (otherProcess.prepare('select a from t order by a').all() as Array<{ a: number }>).map((row) => row.a);

  it('commits queued transactions together, each resolving only once its rows are committed', async () => {
    // No time limit in reach: on a loaded machine ten turns can outlast the service's 15 ms, and
    // the group would then be closed by time, which the next test covers.
    writer = openWriter(5000, 60_000);
    await writer('t').insert({ a: 0 });
    const seenAtResolve: number[][] = [];
    await Promise.all(
      Array.from({ length: 10 }, (_, i) => writer.transaction((trx) => trx('t').insert({ a: i + 1 })).then(() => seenAtResolve.push(committedValues()))),
    );
    const all = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
    // One commit for the ten: when the first resolves, another connection sees every row already.
    for (const seen of seenAtResolve) assert.deepEqual(seen, all);
  });

  it('commits a group once it has been open for its time limit, though transactions still queue', async () => {
    writer = openWriter(5000);
    const busyMs = 3;
    const committedAtFirstResolve: number[][] = [];
    await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        writer
          .transaction(async (trx) => {
            await trx('t').insert({ a: i + 1 });
            // The writer's turn held as a creation's dozen statements hold it.
            for (const until = Date.now() + busyMs; Date.now() < until;);
          })
          .then(() => {
            if (committedAtFirstResolve.length === 0) committedAtFirstResolve.push(committedValues());
          }),
      ),
    );
    // About 60 ms of queued transactions: a 15 ms limit commits the first group after five or six of
    // them, where a 50 ms limit let it grow to fifteen while the first member waited.
    const seen = committedAtFirstResolve[0]!;
    assert.ok(seen.length >= 1 && seen.length <= 8, `the first commit carried ${seen.length} transactions`);
    assert.equal(committedValues().length, 20);
  });

  it('rolls back a failed transaction alone; the rest of its group commits', async () => {
    writer = openWriter(5000);
    const outcomes = await Promise.allSettled(
      Array.from({ length: 6 }, (_, i) =>
        writer.transaction(async (trx) => {
          await trx('t').insert({ a: i });
          if (i === 3) throw new Error('transaction 3 fails');
          await trx('t').insert({ a: i + 100 });
        }),
      ),
    );
    assert.deepEqual(
      outcomes.map((outcome) => outcome.status),
      ['fulfilled', 'fulfilled', 'fulfilled', 'rejected', 'fulfilled', 'fulfilled'],
    );
    assert.deepEqual(committedValues(), [0, 1, 2, 4, 5, 100, 101, 102, 104, 105]);
  });

  it('fails every transaction of a group whose commit fails, and keeps none of their rows', async () => {
    // A deferred constraint is checked at the commit, after each transaction released its savepoint:
    // the one way a group's commit can fail for what a member wrote (the service's schema has none).
    otherProcess.exec(
      'create table parent (id integer primary key); create table child (parent_id integer references parent (id) deferrable initially deferred)',
    );
    writer = openWriter(5000);
    await writer.raw('PRAGMA foreign_keys = ON');
    const outcomes = await Promise.allSettled(
      Array.from({ length: 5 }, (_, i) =>
        writer.transaction(async (trx) => {
          await trx('t').insert({ a: i });
          if (i === 2) await trx('child').insert({ parent_id: 42 });
        }),
      ),
    );
    for (const outcome of outcomes) {
      assert.equal(outcome.status, 'rejected');
      if (outcome.status === 'rejected') assert.match(String(outcome.reason), /FOREIGN KEY constraint failed/);
    }
    assert.deepEqual(committedValues(), []);
    await writer.transaction((trx) => trx('t').insert({ a: 7 }));
    assert.deepEqual(committedValues(), [7]);
  });

  it('opens each group with the write lock, so a member that only read leaves the next no stale snapshot', async () => {
    writer = openWriter(5000);
    await writer('t').insert({ a: 0 });
    otherProcess.pragma('busy_timeout = 0');
    let anotherProcessWrote: boolean | undefined;
    const outcomes = await Promise.allSettled([
      writer.transaction(async (trx) => trx('t').select()),
      writer.transaction(async (trx) => {
        // Between the two members of one group, as the operator's CLI might.
        try {
          otherProcess.exec('insert into t values (99)');
          anotherProcessWrote = true;
        } catch (error) {
          if ((error as { code?: string }).code !== 'SQLITE_BUSY') throw error;
          anotherProcessWrote = false;
        }
        await trx('t').insert({ a: 1 });
      }),
    ]);
    assert.deepEqual(
      outcomes.map((outcome) => (outcome.status === 'rejected' ? String(outcome.reason) : outcome.status)),
      ['fulfilled', 'fulfilled'],
    );
    assert.equal(anotherProcessWrote, false, 'another process wrote while the group was open');
    assert.deepEqual(committedValues(), [0, 1]);
  });

  for (const [what, meanwhile] of [
    ['a statement outside the transaction', (db: Knex) => db('t').count()],
    ['a nested transaction', (db: Knex) => db.transaction((inner) => inner('t').insert({ a: 9 }))],
  ] as const) {
    it(`ends in 503 the wait of ${what} begun inside a transaction, which waits for itself, and goes on`, async () => {
      writer = openWriter(300);
      const started = Date.now();
      await assert.rejects(
        writer.transaction(async (trx) => {
          await trx('t').insert({ a: 1 });
          await meanwhile(writer);
        }),
        (error: Error) => error.name === 'KnexTimeoutError' && isDatabaseUnavailable(error),
      );
      assert.ok(Date.now() - started < 5000, `failed after ${Date.now() - started} ms`);
      await writer.transaction((trx) => trx('t').insert({ a: 2 }));
      assert.deepEqual(committedValues(), [2]);
    });
  }

  it('fails the whole group when a member cannot be rolled back alone, and goes on', async () => {
    writer = openWriter(5000);
    await writer('t').insert({ a: 0 });
    const session = (await writer.client.acquireConnection()) as WriterSession;
    const { database } = session.shared;
    await writer.client.releaseConnection(session);
    // The member's ROLLBACK TO fails once, after SQLite has rolled back the whole transaction (as an
    // I/O error can).
    const exec = database.exec.bind(database);
    let failOnce = true;
    database.exec = (sql: string) => {
      if (failOnce && sql.startsWith('ROLLBACK TO')) {
        failOnce = false;
        exec('ROLLBACK');
        throw Object.assign(new Error('disk I/O error'), { code: 'SQLITE_IOERR' });
      }
      return exec(sql);
    };
    // The third waits for the connection while the second fails: it must start a group of its own.
    const outcomes = await Promise.allSettled([
      writer.transaction((trx) => trx('t').insert({ a: 1 })),
      writer.transaction(async (trx) => {
        await trx('t').insert({ a: 2 });
        throw new Error('this transaction fails');
      }),
      writer.transaction((trx) => trx('t').insert({ a: 3 })),
    ]);
    assert.deepEqual(
      outcomes.map((outcome) => outcome.status),
      ['rejected', 'rejected', 'fulfilled'],
    );
    assert.deepEqual(committedValues(), [0, 3]);
    await writer.transaction((trx) => trx('t').insert({ a: 4 }));
    assert.deepEqual(committedValues(), [0, 3, 4]);
  });

  describe('when SQLite rolls the whole transaction back (a full disk, an I/O error)', () => {
    beforeEach(() => {
      otherProcess.exec(
        "create table lender_rows (who text); create trigger disk_full before insert on lender_rows when new.who = 'lender-B' begin select raise(rollback, 'simulated full disk'); end",
      );
    });
    const committedRows = () => otherProcess.prepare('select who from lender_rows').all();

    it('fails each member of the group with its own error, carrying no other member’s values', async () => {
      writer = openWriter(5000);
      const outcomes = await Promise.allSettled([
        writer.transaction((trx) => trx('lender_rows').insert({ who: 'lender-A' })),
        writer.transaction((trx) => trx('lender_rows').insert({ who: 'lender-B' })),
      ]);
      const [a, b] = outcomes.map((outcome) => (outcome.status === 'rejected' ? (outcome.reason as Error) : null));
      assert.ok(a && b, 'both transactions fail');
      assert.notEqual(a, b);
      assert.match(a.message, /simulated full disk/);
      assert.doesNotMatch(a.message, /lender-B/);
      assert.match(b.message, /lender-B/);
      assert.deepEqual(committedRows(), []);
    });

    it('refuses what the transaction writes after catching that error, instead of committing it on its own', async () => {
      writer = openWriter(5000);
      await assert.rejects(
        writer.transaction(async (trx) => {
          await trx('lender_rows').insert({ who: 'lender-A' });
          await trx('lender_rows')
            .insert({ who: 'lender-B' })
            .catch(() => undefined);
          await trx('lender_rows').insert({ who: 'after the error' });
        }),
        /rolled back by an earlier error/,
      );
      assert.deepEqual(committedRows(), []);
      await writer.transaction((trx) => trx('lender_rows').insert({ who: 'next' }));
      assert.deepEqual(committedRows(), [{ who: 'next' }]);
    });
  });

  it('prepares each SQL text once and runs it again with new values', async () => {
    writer = openWriter(5000);
    for (let a = 1; a <= 20; a++) await writer('t').insert({ a });
    assert.equal((await writer('t').count<{ n: number }[]>({ n: '*' }))[0]!.n, 20);
    assert.equal(prepared.filter((sql) => sql.startsWith('insert into `t`')).length, 1, prepared.join('\n'));
  });

  it('gives up after its busy timeout with SQLITE_BUSY, which answers 503', async () => {
    writer = openWriter(200);
    await writer('t').insert({ a: 1 });
    otherProcess.exec('BEGIN IMMEDIATE; insert into t values (2)');
    try {
      const { result, turns, ms } = await loopTurnsDuring(
        writer('t')
          .insert({ a: 3 })
          .then(
            () => null,
            (error: unknown) => error,
          ),
      );
      assert.equal((result as { code?: string } | null)?.code, 'SQLITE_BUSY');
      assert.equal(isDatabaseUnavailable(result), true);
      assert.ok(ms >= 150 && ms < 2000, `gave up after ${ms} ms`);
      assert.ok(turns >= 5, `the event loop turned ${turns} times in ${ms} ms`);
    } finally {
      otherProcess.exec('ROLLBACK');
    }
    assert.deepEqual(
      (await writer('t').select('a')).map((row: { a: number }) => row.a),
      [1],
    );
  });
});

describe('waiting while SQLite is locked', () => {
  const locked = () => Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' });

  it("after its caller's own first try found the database locked, tries again only after a pause", async () => {
    let paused = false;
    setImmediate(() => (paused = true));
    const tries: boolean[] = [];
    const answer = await retryWhileBusy(1_000, () => tries.push(paused) && 'written', undefined, locked());
    assert.equal(answer, 'written');
    assert.deepEqual(tries, [true]);
  });

  it("gives up at once when the caller's first try failed for another reason, or the wait would pass its timeout", async () => {
    let tries = 0;
    const step = () => ++tries;
    await assert.rejects(retryWhileBusy(1_000, step, undefined, new Error('no such table')), /no such table/);
    await assert.rejects(retryWhileBusy(0, step, undefined, locked()), /database is locked/);
    assert.equal(tries, 0);
  });
});
