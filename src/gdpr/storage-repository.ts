import type { Knex } from 'knex';
import { DATABASE_TIMEOUT_MS, type Dialect } from '../platform/db/database.ts';

/** SQLite's answer to `PRAGMA wal_checkpoint`: busy is 1 when the checkpoint could not finish. */
interface CheckpointRow {
  busy: number;
  log: number;
  checkpointed: number;
}

/** One table rewritten, and for how long it was locked (ACCESS EXCLUSIVE on PostgreSQL; on SQLite the whole file, once). */
export interface Rewritten {
  table: string;
  ms: number;
}

/**
 * What the database keeps of erased rows outside its tables: SQLite's write-ahead log, and on both
 * databases the space erased rows leave in the tables' files (docs/data-protection.md).
 */
export class StorageRepository {
  constructor(
    private readonly knex: Knex,
    private readonly dialect: Dialect,
  ) {}

  /**
   * SQLite: copies every page of the write-ahead log into the database file and cuts the log to zero
   * bytes. Until then the log holds the pages an erasure changed in their new state only, and the
   * database file still the old ones, the erased rows included: a crash (kill -9) there left both on
   * disk. Readers in this process never hold a snapshot between statements, so it waits only for
   * another process's reader or writer, off the event loop and for at most `timeoutMs`; then the log
   * is cut at the checkpointer's next restart instead. True when it was cut. PostgreSQL: nothing to do.
   */
  async truncateWriteAheadLog(timeoutMs = DATABASE_TIMEOUT_MS): Promise<boolean> {
    if (this.dialect !== 'sqlite') return true;
    const deadline = Date.now() + timeoutMs;
    for (let pauseMs = 1; ; pauseMs = Math.min(pauseMs * 2, 50)) {
      const [row] = await this.knex.raw<CheckpointRow[]>('PRAGMA wal_checkpoint(TRUNCATE)');
      if (row?.busy === 0) return true;
      if (Date.now() + pauseMs > deadline) return false;
      await new Promise((resolve) => setTimeout(resolve, pauseMs));
    }
  }

  /**
   * Rewrites the tables into new files so that deleted rows' bytes leave them. PostgreSQL: `VACUUM
   * FULL` of each table, which writes the live rows and the table's indexes and TOAST into new files
   * and drops the old ones, holding an ACCESS EXCLUSIVE lock on that table (no read or write of it)
   * while it runs, and the statistics gathered again, then the statistics' own table rewritten when
   * this role may (it is left out of the answer otherwise). SQLite: `VACUUM` of the whole file (it takes the write lock; readers go on), then
   * the write-ahead log cut to zero bytes. Run with a connection without the service's statement
   * timeout: a rewrite of a large table outlasts it.
   */
  async rewrite(tables: readonly string[]): Promise<Rewritten[]> {
    const timed = async (table: string, sql: string, bindings: string[] = []): Promise<Rewritten> => {
      const started = performance.now();
      await this.knex.raw(sql, bindings);
      return { table, ms: Math.round(performance.now() - started) };
    };
    if (this.dialect === 'sqlite') {
      const file = await timed('*', 'VACUUM');
      if (!(await this.truncateWriteAheadLog())) throw new Error('the write-ahead log could not be cut: another process kept reading from it');
      return [file];
    }
    const rewritten: Rewritten[] = [];
    // ANALYZE too: the statistics of a column (pg_statistic) hold sampled values of it, an erased
    // creator's reference among them, until they are gathered again from the rows left.
    for (const table of tables) rewritten.push(await timed(table, 'VACUUM (FULL, ANALYZE) ??', [table]));
    // The statistics' old rows are dead rows of pg_statistic now. Its owner, a superuser or the
    // database's owner may rewrite it; anyone else is skipped by PostgreSQL with a warning.
    const { rows } = await this.knex.raw<{ rows: Array<{ allowed: boolean }> }>(
      `select coalesce((select rolsuper from pg_roles where rolname = current_user), false)
           or pg_has_role(current_user, (select datdba from pg_database where datname = current_database()), 'MEMBER') as allowed`,
    );
    if (rows[0]?.allowed) rewritten.push(await timed('pg_statistic', 'VACUUM FULL pg_catalog.pg_statistic'));
    return rewritten;
  }
}
