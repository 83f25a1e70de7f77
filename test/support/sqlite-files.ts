import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';

/** A SQLite file in a new temporary directory, in WAL mode, whose table `t (a integer)` holds one row (1). */
export function walFileWithOneRow(prefix: string): { dir: string; file: string } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const file = join(dir, 'test.sqlite');
  const setup = new BetterSqlite3(file);
  setup.exec('PRAGMA journal_mode = WAL; create table t (a integer); insert into t values (1)');
  setup.close();
  return { dir, file };
}

/**
 * A connection of the service's own SQLite library holding `file` in exclusive locking mode, with a
 * row written and not committed: readers get SQLITE_BUSY even under WAL, as while another process
 * recovers the WAL. `ROLLBACK` and close it to let them in.
 */
export function lockOut(file: string): BetterSqlite3.Database {
  const holder = new BetterSqlite3(file);
  holder.exec('PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE; insert into t values (2)');
  return holder;
}
