import type { Knex } from 'knex';
import { DATABASE_TIMEOUT_MS, type Dialect } from '../platform/db/database.ts';

/** SQLite's answer to `PRAGMA wal_checkpoint`: busy is 1 when the checkpoint could not finish. */
interface CheckpointRow {
  busy: number;
  log: number;
  checkpointed: number;
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
}
