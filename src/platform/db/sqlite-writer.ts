import { createRequire } from 'node:module';
import type BetterSqlite3 from 'better-sqlite3';
import type { Knex } from 'knex';
import { LRUCache } from 'lru-cache';

/** Distinct SQL texts kept prepared per writer connection (Knex's statements repeat; multi-row inserts vary by row count). */
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

/** Knex's own client for better-sqlite3: the one method overridden below. */
interface BetterSqlite3Client {
  _query(connection: unknown, query: unknown): Promise<unknown>;
}
/** What Knex writes on a connection it lends to a transaction. */
interface KnexConnection {
  __knexTxId?: string;
}
type ClientClass = new (config: Knex.Config) => BetterSqlite3Client;

// Knex exports its dialect clients only by path, untyped.
const KnexBetterSqlite3 = createRequire(import.meta.url)('knex/lib/dialects/better-sqlite3/index.js') as ClientClass;

/**
 * The writer's Knex client on SQLite: better-sqlite3, whose statements run at once on the event
 * loop instead of each taking a round trip through node-sqlite3's thread pool (a creation's
 * transaction is a dozen statements on the single writer connection: docs/performance.md).
 *
 * A synchronous driver must never wait for a lock on the event loop, or one wait would stall every
 * request of the process. So the connection's busy timeout is zero (`WRITER_PRAGMAS`), and a
 * statement that finds the database locked is tried again after a pause off the event loop, for up
 * to `busyTimeoutMs`, which is what SQLite's own busy handler does in place; then it fails with
 * SQLITE_BUSY (503, as before).
 */
export function waitingSqliteWriter(busyTimeoutMs: number): ClientClass {
  const statementCaches = new WeakMap<BetterSqlite3.Database, Pick<BetterSqlite3.Database, 'prepare'>>();
  /**
   * The connection as Knex's client sees it, with each SQL text prepared once: Knex prepares every
   * statement it runs, and a statement's native memory is freed only when the garbage collector
   * gets to it, which under a few thousand statements a second let the process grow.
   */
  const preparingOnce = (connection: BetterSqlite3.Database) => {
    let cached = statementCaches.get(connection);
    if (!cached) {
      const statements = new LRUCache<string, BetterSqlite3.Statement>({ max: PREPARED_STATEMENTS_KEPT });
      cached = {
        prepare(sql: string) {
          let statement = statements.get(sql);
          if (!statement) {
            statement = connection.prepare(sql);
            statements.set(sql, statement);
          }
          return statement;
        },
      } as Pick<BetterSqlite3.Database, 'prepare'>;
      statementCaches.set(connection, cached);
    }
    return cached;
  };
  return class WaitingBetterSqlite3 extends KnexBetterSqlite3 {
    override async _query(connection: unknown, query: unknown): Promise<unknown> {
      // The writer's statements are synchronous, and a transaction that ends hands the connection to
      // the next one in a promise callback: without a pause, every queued transaction would run in
      // one turn of the event loop, holding every other request (and timer) for all of them. A turn
      // before each transaction lets the rest of the process in between.
      if ((query as { sql?: string }).sql === 'BEGIN;') await new Promise((resolve) => setImmediate(resolve));
      const deadline = Date.now() + busyTimeoutMs;
      // Knex marks the connection with the transaction it is lent to. A statement must not be tried
      // again once that has changed during the pause: its transaction has ended (a sibling statement
      // failed and rolled it back), and the retry would run outside it or inside another one.
      const transactionAtStart = (connection as KnexConnection).__knexTxId;
      for (let pauseMs = 1; ; pauseMs = Math.min(pauseMs * 2, 50)) {
        try {
          return await super._query(preparingOnce(connection as BetterSqlite3.Database), query);
        } catch (error) {
          if (!isSqliteBusy(error) || Date.now() + pauseMs > deadline) throw error;
          await new Promise((resolve) => setTimeout(resolve, pauseMs));
          if ((connection as KnexConnection).__knexTxId !== transactionAtStart) throw error;
        }
      }
    }
  };
}
