import { createRequire } from 'node:module';
import BetterSqlite3 from 'better-sqlite3';
import knex, { type Knex } from 'knex';
import { LRUCache } from 'lru-cache';
import type { WalRestart } from './wal-checkpointer.ts';

/** Distinct SQL texts kept prepared per connection, the writer's and each reader's (Knex's statements repeat; multi-row inserts vary by row count). */
const PREPARED_STATEMENTS_KEPT = 500;

/**
 * SQLite's "the database is locked": another connection (in practice another process, such as the
 * operator's CLI) holds the write lock, or is recovering the WAL after a crash. Worth waiting for.
 * SQLITE_BUSY_SNAPSHOT is not: the transaction read a state another writer has since replaced, and
 * only starting it again helps.
 */
export function isSqliteBusy(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'SQLITE_BUSY' || code === 'SQLITE_BUSY_RECOVERY';
}

/**
 * Runs `step`, and again after a pause off the event loop while it finds the database locked, for up
 * to `busyTimeoutMs`: what SQLite's own busy handler does, but without blocking the event loop, on
 * connections whose busy timeout is zero. `stillValid` is asked after each pause; when it says no,
 * the last error stands. `lockedAlready` is the SQLITE_BUSY of a first try the caller made itself
 * (the statements that run at once and only wait when locked): the retry then begins with a pause.
 */
export async function retryWhileBusy<T>(
  busyTimeoutMs: number,
  step: () => T | Promise<T>,
  stillValid: () => boolean = () => true,
  lockedAlready?: unknown,
): Promise<T> {
  const deadline = Date.now() + busyTimeoutMs;
  let pauseMs = 1;
  const pauseAfter = async (error: unknown): Promise<void> => {
    if (!isSqliteBusy(error) || Date.now() + pauseMs > deadline) throw error;
    await new Promise((resolve) => setTimeout(resolve, pauseMs));
    if (!stillValid()) throw error;
    pauseMs = Math.min(pauseMs * 2, 50);
  };
  if (lockedAlready !== undefined) await pauseAfter(lockedAlready);
  for (;;) {
    try {
      return await step();
    } catch (error) {
      await pauseAfter(error);
    }
  }
}

/**
 * `database` as Knex's client sees it, with each SQL text prepared once: Knex prepares every
 * statement it runs, and a statement's native memory is freed only when the garbage collector gets to
 * it, which under a few thousand statements a second let the process grow.
 */
export function preparingOnce(database: BetterSqlite3.Database): Pick<BetterSqlite3.Database, 'prepare'> {
  const statements = new LRUCache<string, BetterSqlite3.Statement>({ max: PREPARED_STATEMENTS_KEPT });
  return {
    prepare: (sql: string) => {
      let statement = statements.get(sql);
      if (!statement) {
        statement = database.prepare(sql);
        statements.set(sql, statement);
      }
      return statement;
    },
  } as Pick<BetterSqlite3.Database, 'prepare'>;
}

/** Knex's own client for better-sqlite3: the methods overridden below. */
interface BetterSqlite3Client {
  _query(connection: unknown, query: unknown): Promise<unknown>;
  acquireRawConnection(): Promise<unknown>;
  destroyRawConnection(connection: unknown): Promise<unknown>;
}
export type ClientClass = new (config: Knex.Config) => BetterSqlite3Client;

// Knex exports its dialect clients only by path, untyped.
export const KnexBetterSqlite3 = createRequire(import.meta.url)('knex/lib/dialects/better-sqlite3/index.js') as ClientClass;

/**
 * The most transactions one commit carries, and the longest a group stays open (see `SharedConnection`).
 * The first member's answer, and the webhook deliveries it made, wait for the group's commit: under
 * `bench:webhooks` a 50 ms cap put 44-51 ms at the median from state change to first attempt and
 * 110-126 ms at p99; 15 ms measured 29-33 and 75-90 ms. The cost, where creations saturate the
 * writer: more, smaller groups, about 6 % fewer creations per second (docs/performance.md). A 6 ms
 * cap did not lower the p99 further.
 */
const GROUP_COMMIT_LIMITS = { members: 32, ms: 15 };

/**
 * How many sessions Knex's pool may lend at once: a transaction keeps its session from `BEGIN` until
 * its group has committed, so a full group and the transactions queued behind it each hold one.
 */
export const WRITER_SESSIONS = GROUP_COMMIT_LIMITS.members * 2;

/** The savepoint each transaction of a group runs in, so that it can roll back alone. */
const MEMBER = 'group_member';

/** What Knex's pool lends: a session on the one connection. Knex marks it with the transaction it is lent to. */
export interface WriterSession {
  readonly shared: SharedConnection;
  __knexTxId?: string;
}

interface Query {
  sql: string;
  response?: unknown;
}

/**
 * The error each member of a lost group is rejected with: its own object, since Knex prefixes the
 * message of the error a statement fails with by that statement's SQL and values, and one object
 * shared by the group would carry one lender's values into another's error and log.
 */
function copyForMember(error: unknown): Error {
  const { message, code } = error as { message?: unknown; code?: unknown };
  return new BetterSqlite3.SqliteError(String(message ?? error), typeof code === 'string' ? code : 'SQLITE_ERROR');
}

/**
 * The writer's one connection, shared by every session Knex's pool lends, and the turn each session
 * takes on it.
 *
 * **Group commit.** A creation's transaction writes a few rows to a dozen tables and indexes, and each
 * commit wrote every page it touched to the WAL again: 33.5 pages (134 KB) per creation, of which
 * under 3 are new data, and a checkpoint copied them into the database file every 30 creations
 * (docs/performance.md). Transactions queued for the writer now commit together: each runs in a
 * savepoint of one open transaction (its `ROLLBACK` rolls back its own work only), and its `COMMIT`
 * releases the savepoint and then waits for the group's commit, so a transaction's promise resolves
 * only once its rows are committed, exactly as before. The group commits when no transaction is
 * waiting for the connection, or after `GROUP_COMMIT_LIMITS`. If that commit fails, every
 * transaction of the group fails with its error and none of their writes remain. The schema has no
 * deferred constraints, so a transaction that released its savepoint cannot make the commit fail.
 *
 * **Turns.** Statements are synchronous; a session holds the connection from its `BEGIN` to its
 * `COMMIT` or `ROLLBACK` (a statement outside a transaction, for that statement, after the open group
 * has committed, so it never reads or writes what might still be rolled back). Sessions get it in the
 * order they asked for it, except that a single statement goes ahead of waiting transactions
 * (`nextInLine`). The next session gets the connection one turn of the event loop later: without it
 * every queued transaction would run in one turn, holding every other request and timer for all of
 * them, and in that turn the requests that reached their `BEGIN` join the queue and the group.
 */
class SharedConnection {
  private owner: WriterSession | null = null;
  private handingOver = false;
  private readonly waiting: Array<{ session: WriterSession; begins: boolean; grant: () => void }> = [];
  private statementJumpedQueue = false;
  private group: { openedAt: number; members: Array<{ resolve: () => void; reject: (error: unknown) => void }> } | null = null;
  sessions = 0;

  constructor(
    readonly database: BetterSqlite3.Database,
    private readonly walRestart: WalRestart | undefined,
    private readonly groupOpenMs: number,
  ) {
    this.preparingOnce = preparingOnce(database);
  }

  private walCheckpoint: BetterSqlite3.Statement | undefined;

  /** The connection as Knex's client sees it, with each SQL text prepared once. */
  readonly preparingOnce: Pick<BetterSqlite3.Database, 'prepare'>;

  ownedBy(session: WriterSession): boolean {
    return this.owner === session;
  }

  /**
   * Waits for the session's turn, for at most `limitMs`. A turn waits only for transactions ahead of
   * it, which take milliseconds, unless one of them waits for this session itself: a statement on
   * another session issued from inside an open transaction (the non-transaction Knex, or a nested
   * `knex.transaction()`) would otherwise wait for ever, and the writer with it. Like Knex's own
   * pool, the wait then ends in a `KnexTimeoutError` (503), the transaction fails, and the
   * connection goes on.
   */
  async acquire(session: WriterSession, begins: boolean, limitMs: number): Promise<void> {
    if (this.owner === null && !this.handingOver && this.waiting.length === 0) {
      this.owner = session;
      return;
    }
    await new Promise<void>((granted, refused) => {
      const timer = setTimeout(() => {
        this.waiting.splice(this.waiting.indexOf(entry), 1);
        refused(new knex.KnexTimeoutError(`Knex: Timeout waiting ${limitMs} ms for the SQLite writer's connection, held by another transaction`));
      }, limitMs);
      const entry = {
        session,
        begins,
        grant: () => {
          clearTimeout(timer);
          granted();
        },
      };
      this.waiting.push(entry);
    });
  }

  release(): void {
    this.owner = null;
    if (this.group === null && this.waiting.length === 0) return;
    this.handingOver = true;
    setImmediate(() => this.handOver());
  }

  private handOver(): void {
    this.handingOver = false;
    if (this.owner !== null) return;
    const next = this.nextInLine();
    if (this.group) {
      const full = this.group.members.length >= GROUP_COMMIT_LIMITS.members || Date.now() - this.group.openedAt >= this.groupOpenMs;
      if (!next || !next.begins || full) this.commitGroup();
    }
    if (next) {
      this.owner = next.session;
      next.grant();
    }
  }

  /**
   * Who gets the connection next: the longest waiting, except that a single statement waiting
   * behind transactions goes first, one at a time between two transactions. A statement holds the
   * connection for itself alone, a transaction for a dozen statements and a turn of the event loop
   * each; the delivery sender's claim of due deliveries is such a statement, and it waited behind
   * every queued creation (p50 111 ms under `bench:webhooks`) while the deliveries aged.
   */
  private nextInLine() {
    if (!this.statementJumpedQueue) {
      const statement = this.waiting.findIndex((entry) => !entry.begins);
      if (statement > 0) {
        this.statementJumpedQueue = true;
        return this.waiting.splice(statement, 1)[0];
      }
    }
    this.statementJumpedQueue = false;
    return this.waiting.shift();
  }

  /**
   * Opens the group if none is open, and the transaction's savepoint in it. The group takes the
   * write lock as it opens (`IMMEDIATE`): opened by a deferred `BEGIN`, a group whose first member
   * only read would keep that member's snapshot, and a later member's first write would fail with
   * SQLITE_BUSY_SNAPSHOT whenever another process (the operator's CLI) had committed in between.
   */
  beginMember(): void {
    // A group whose transaction has gone unnoticed (SQLite rolled it back as a member's rollback
    // failed): its members must fail, not resolve with the commit of a transaction that a SAVEPOINT
    // outside any transaction would start.
    if (this.group && !this.database.inTransaction) this.failGroup(new BetterSqlite3.SqliteError('the group commit was rolled back', 'SQLITE_ABORT'));
    if (!this.group) {
      this.discardOwnerlessTransaction();
      this.database.exec('BEGIN IMMEDIATE');
      this.group = { openedAt: Date.now(), members: [] };
    }
    this.database.exec(`SAVEPOINT ${MEMBER}`);
  }

  /** Whether the transaction the owning session began is still there: SQLite rolls it all back on some errors. */
  get memberAlive(): boolean {
    return this.database.inTransaction;
  }

  /** Releases the transaction's savepoint; the returned promise settles with the group's commit. */
  endMember(): Promise<void> {
    this.database.exec(`RELEASE SAVEPOINT ${MEMBER}`);
    return new Promise<void>((resolve, reject) => this.group!.members.push({ resolve, reject }));
  }

  rollbackMember(): void {
    // Some errors (a full disk, an I/O error) make SQLite roll back the whole transaction, which
    // `lostGroup` has then dealt with: nothing is left to roll back.
    if (!this.group || !this.database.inTransaction) return;
    try {
      this.database.exec(`ROLLBACK TO SAVEPOINT ${MEMBER}; RELEASE SAVEPOINT ${MEMBER}`);
    } catch (error) {
      // The member could not be undone alone: undo the group and fail its members, rather than
      // commit the member's work with theirs.
      this.rollBackGroup(error);
      throw error;
    }
  }

  /** A transaction open with no group (a failed ROLLBACK after a failed commit) has no owner: what it held is already reported lost. */
  private discardOwnerlessTransaction(): void {
    if (this.database.inTransaction) this.database.exec('ROLLBACK');
  }

  commitGroup(): void {
    if (!this.group) {
      this.discardOwnerlessTransaction();
      this.catchUpWal();
      return;
    }
    try {
      this.database.exec('COMMIT');
    } catch (error) {
      // Runs from the event loop (handOver), where a throw would end the process.
      this.rollBackGroup(error);
      return;
    }
    const { members } = this.group;
    this.group = null;
    for (const member of members) member.resolve();
    this.catchUpWal();
  }

  /**
   * When the checkpointer asks (wal-checkpointer.ts), at most once per its interval: copies the WAL's
   * pages committed since its last copy, a few on the event loop, so that every page is in the
   * database file and the next transaction can start the WAL again. Asked again if that does not
   * happen: the checkpointer's own copy was running, or a reader still read from the WAL.
   */
  private catchUpWal(): void {
    if (!this.walRestart?.due() || this.database.inTransaction) return;
    try {
      this.walCheckpoint ??= this.database.prepare('PRAGMA wal_checkpoint(PASSIVE)');
      const done = this.walCheckpoint.get() as { busy: number; log: number; checkpointed: number };
      if (done.busy === 0 && done.checkpointed === done.log) this.walRestart.wanted = false;
    } catch (error) {
      // Tried again after a later commit, as when it could not finish.
      this.walRestart.onError(error);
    }
  }

  /** Rolls back what is left of the group's transaction, and fails its members with `error`. */
  private rollBackGroup(error: unknown): void {
    try {
      if (this.database.inTransaction) this.database.exec('ROLLBACK');
    } catch {
      // SQLite has already rolled back what it could not keep; if not, a transaction with no group
      // is rolled back before the next one opens (`discardOwnerlessTransaction`).
    }
    this.failGroup(error);
  }

  /** After a failed statement: if SQLite rolled the whole transaction back, the group's released work is gone too. */
  lostGroup(error: unknown): void {
    if (!this.group || this.database.inTransaction) return;
    this.failGroup(error);
  }

  /** Closes the open group, failing every member with its own copy of `error`. */
  private failGroup(error: unknown): void {
    const members = this.group?.members ?? [];
    this.group = null;
    for (const member of members) member.reject(copyForMember(error));
  }
}

/**
 * The writer's Knex client on SQLite: better-sqlite3, whose statements run at once on the event
 * loop instead of each taking a round trip through node-sqlite3's thread pool (a creation's
 * transaction is a dozen statements on the single writer connection: docs/performance.md). Every
 * session the pool lends is the same connection, taken in turns, with transactions committed in
 * groups (`SharedConnection`); `pragmas` run once, when it opens.
 *
 * A synchronous driver must never wait for a lock on the event loop, or one wait would stall every
 * request of the process. So the connection's busy timeout is zero (`pragmas` set it first), and a
 * statement that finds the database locked is tried again after a pause off the event loop, for up
 * to `busyTimeoutMs`, which is what SQLite's own busy handler does in place; then it fails with
 * SQLITE_BUSY (503, as before).
 *
 * `groupOpenMs` is the service's cap unless a test needs a group closed only by an empty queue.
 */
export function waitingSqliteWriter(
  busyTimeoutMs: number,
  pragmas: string,
  walRestart?: WalRestart,
  groupOpenMs: number = GROUP_COMMIT_LIMITS.ms,
): ClientClass {
  let opening: Promise<SharedConnection> | null = null;

  return class WaitingBetterSqlite3 extends KnexBetterSqlite3 {
    override async acquireRawConnection(): Promise<WriterSession> {
      opening ??= (async () => {
        const database = (await super.acquireRawConnection()) as BetterSqlite3.Database;
        try {
          database.exec(pragmas);
        } catch (error) {
          database.close();
          throw error;
        }
        return new SharedConnection(database, walRestart, groupOpenMs);
      })();
      let shared: SharedConnection;
      try {
        shared = await opening;
      } catch (error) {
        opening = null;
        throw error;
      }
      shared.sessions++;
      return { shared };
    }

    override async destroyRawConnection(session: unknown): Promise<void> {
      const { shared } = session as WriterSession;
      if (--shared.sessions > 0) return;
      shared.commitGroup();
      opening = null;
      shared.database.close();
    }

    override async _query(lent: unknown, query: unknown): Promise<unknown> {
      const session = lent as WriterSession;
      const connection = session.shared;
      const statement = query as Query;
      // BEGIN, COMMIT and ROLLBACK become the group's statements: Knex only needs them answered.
      const answered = () => Object.assign(statement, { response: [] });
      if (statement.sql === 'BEGIN;') {
        await connection.acquire(session, true, busyTimeoutMs);
        try {
          await this.waitingForLocks(session, () => connection.beginMember());
        } catch (error) {
          connection.release();
          throw error;
        }
        return answered();
      }
      if (!connection.ownedBy(session)) {
        // A statement outside any transaction: after the open group, in its own transaction.
        await connection.acquire(session, false, busyTimeoutMs);
        try {
          connection.commitGroup();
          return await this.runWaitingForLocks(connection, session, statement);
        } finally {
          connection.release();
        }
      }
      if (statement.sql === 'COMMIT;') {
        let committed: Promise<void>;
        try {
          committed = connection.endMember();
        } catch (error) {
          connection.lostGroup(error);
          connection.rollbackMember();
          connection.release();
          throw error;
        }
        connection.release();
        await committed;
        return answered();
      }
      if (statement.sql === 'ROLLBACK') {
        try {
          connection.rollbackMember();
        } finally {
          connection.release();
        }
        return answered();
      }
      // The transaction caught an error with which SQLite rolled it all back, and went on: what it
      // writes now would commit on its own, outside any transaction.
      if (!connection.memberAlive) {
        throw new BetterSqlite3.SqliteError('this transaction was rolled back by an earlier error and cannot go on', 'SQLITE_ABORT');
      }
      const lost = (error: unknown): never => {
        connection.lostGroup(error);
        throw error;
      };
      // At once, and only a statement that finds the database locked waits off the event loop: the
      // retry's closures and loop cost every one of a creation's statements (docs/performance.md).
      const transactionAtStart = session.__knexTxId;
      return super._query(connection.preparingOnce, statement).catch((error: unknown) => {
        if (!isSqliteBusy(error)) return lost(error);
        return this.runWaitingForLocks(connection, session, statement, transactionAtStart, error).catch(lost);
      });
    }

    private runWaitingForLocks(
      connection: SharedConnection,
      session: WriterSession,
      query: Query,
      transactionAtStart?: string,
      lockedAlready?: unknown,
    ): Promise<unknown> {
      return this.waitingForLocks(session, () => super._query(connection.preparingOnce, query), transactionAtStart, lockedAlready);
    }

    /**
     * Runs `step`, and again after a pause off the event loop while it finds the database locked, for
     * up to `busyTimeoutMs`; after `lockedAlready`, the caller's own first try, it begins with the pause.
     */
    private waitingForLocks<T>(
      session: WriterSession,
      step: () => T | Promise<T>,
      transactionAtStart = session.__knexTxId,
      lockedAlready?: unknown,
    ): Promise<T> {
      // Knex marks the session with the transaction it is lent to. A statement must not be tried
      // again once that has changed during the pause: its transaction has ended (a sibling statement
      // failed and rolled it back), and the retry would run outside it or inside another one.
      return retryWhileBusy(busyTimeoutMs, step, () => session.__knexTxId === transactionAtStart, lockedAlready);
    }
  };
}
