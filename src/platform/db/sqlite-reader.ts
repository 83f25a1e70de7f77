import type BetterSqlite3 from 'better-sqlite3';
import { KnexBetterSqlite3, preparingOnce, retryWhileBusy, type ClientClass } from './sqlite-writer.ts';

/** A read connection as Knex's client uses it: statements prepared once, and closed with the pool. */
interface ReadConnection extends Pick<BetterSqlite3.Database, 'prepare'> {
  close(): void;
  /** Runs the connection's settings that read the schema, before its first statement. */
  configure(): void;
}

/**
 * The read connections' Knex client on SQLite: read-only connections of better-sqlite3, the same
 * library, and so the same copy of SQLite, as the writer, the hot statements and the checkpointer.
 * Two copies of SQLite in one process (node-sqlite3 bundles its own) do not see each other's locks:
 * POSIX locks never conflict within a process, and each copy's own table of the locks its
 * connections hold does not know the other's. A checkpoint of one then copied pages into the database
 * file past what a reader of the other still read, and started the WAL again under it: reads failed
 * with SQLITE_CORRUPT and SQLITE_IOERR, and the writer acted on stale rows (docs/operations.md).
 *
 * Statements run at once on the event loop; a read under WAL does not wait for the writer. A read
 * that would wait (SQLITE_BUSY: another process recovering the WAL, say) is tried again after a pause
 * off the event loop, for up to `busyTimeoutMs`, since the connection's busy timeout is zero.
 */
export function waitingSqliteReader(busyTimeoutMs: number): ClientClass {
  return class WaitingSqliteReader extends KnexBetterSqlite3 {
    override async acquireRawConnection(): Promise<ReadConnection> {
      const database = (await super.acquireRawConnection()) as BetterSqlite3.Database;
      try {
        database.exec('PRAGMA busy_timeout = 0');
      } catch (error) {
        database.close();
        throw error;
      }
      let configured = false;
      return {
        ...preparingOnce(database),
        close: () => database.close(),
        configure() {
          if (configured) return;
          // SQLite's default page cache (2 MB) per connection, not better-sqlite3's 16 MB. It reads
          // the schema, so it may find the file locked, as a statement may.
          database.exec('PRAGMA cache_size = -2000');
          configured = true;
        },
      };
    }

    override _query(connection: unknown, query: unknown): Promise<unknown> {
      return retryWhileBusy(busyTimeoutMs, () => {
        (connection as ReadConnection).configure();
        return super._query(connection, query);
      });
    }
  };
}
