import sqlite3 from 'sqlite3';

/** How often the WAL's new pages are copied into the database file. */
export const CHECKPOINT_INTERVAL_MS = 100;

/**
 * A WAL this many pages long (4 KiB each, 16 MiB) is to be started again from its beginning. The
 * writer does that by itself when it begins a transaction, every page of the WAL has been copied and
 * no reader still reads from it; under steady writes the background's copy never quite catches up
 * with the commits, and the file would grow for as long as they go on. Each restart costs the writer
 * a copy of the pages committed since the checkpointer's last pass, on the event loop (a few
 * milliseconds under creation load), so it is not asked for at SQLite's own 1,000.
 */
export const RESTART_AFTER_PAGES = 4096;

/** SQLite's own checkpoint at a commit, kept only in case this one cannot run (database.ts). */
export const AUTOCHECKPOINT_BACKSTOP_PAGES = 5 * RESTART_AFTER_PAGES;

/**
 * Shared by the checkpointer and the writer: `wanted` is set when the WAL is long, and the writer
 * then copies its last pages itself, at most once per `intervalMs`, the checkpointer's own interval
 * (a reader still on the WAL can keep the copy from finishing, and it would otherwise be tried after
 * every commit).
 */
export class WalRestart {
  wanted = false;
  private triedAt = -Infinity;

  constructor(
    readonly onError: (error: unknown) => void,
    readonly intervalMs = CHECKPOINT_INTERVAL_MS,
  ) {}

  /** Whether the writer should try now; counts the try. */
  due(): boolean {
    const now = performance.now();
    if (!this.wanted || now - this.triedAt < this.intervalMs) return false;
    this.triedAt = now;
    return true;
  }
}

export interface WalCheckpointer {
  close(): Promise<void>;
}

interface CheckpointRow {
  busy: number;
  log: number;
  checkpointed: number;
}

/**
 * Checkpoints the SQLite writer's WAL off the event loop. SQLite runs a checkpoint inside the commit
 * that takes the WAL past 1,000 pages: on the writer's connection, which is synchronous
 * (better-sqlite3), that copied the pages into the database file and waited for its `fsync` on the
 * event loop, about 10 ms every eight group commits under creation load, 8 % of the main thread's
 * time and a stall of every request in flight (docs/performance.md). The writer's own checkpoint now
 * waits for AUTOCHECKPOINT_BACKSTOP_PAGES, a backstop, and this connection of node-sqlite3, whose
 * statements run on libuv's thread pool, checkpoints passively every `restart.intervalMs`: it waits
 * for no reader or writer, and the writer goes on committing while it copies. Once the WAL is
 * `restartAfterPages` long it sets `restart.wanted`, and the writer, between two transactions, copies
 * the few pages committed since (sqlite-writer.ts), so that its next transaction starts the WAL
 * again if no reader is still on it (else it is asked again). Committed transactions are as durable
 * as before: the WAL holds them until they are copied, and SQLite's recovery reads it after a crash.
 */
export function startWalCheckpointer(filename: string, busyTimeoutMs: number, restart: WalRestart, restartAfterPages = RESTART_AFTER_PAGES): WalCheckpointer {
  let opened: Promise<sqlite3.Database> | null = null;
  let everOpened = false;
  let running: Promise<void> | null = null;
  let closed = false;

  // Opened once the writer has made the file: this connection never creates it.
  const open = (): Promise<sqlite3.Database> =>
    (opened ??= new Promise((resolve, reject) => {
      const db = new sqlite3.Database(filename, sqlite3.OPEN_READWRITE, (error) => {
        if (error) {
          opened = null;
          reject(error);
          return;
        }
        db.configure('busyTimeout', busyTimeoutMs);
        everOpened = true;
        resolve(db);
      });
    }));
  const pass = async (): Promise<void> => {
    const db = await open();
    const { log } = await new Promise<CheckpointRow>((resolve, reject) =>
      db.get<CheckpointRow>('PRAGMA wal_checkpoint(PASSIVE)', (error, row) => (error ? reject(error) : resolve(row))),
    );
    if (log >= restartAfterPages) restart.wanted = true;
  };

  const timer = setInterval(() => {
    if (running || closed) return;
    running = pass()
      .catch((error: unknown) => {
        // Not yet made by the writer: nothing to checkpoint. Any later failure is counted; the
        // writer's own checkpoint at AUTOCHECKPOINT_BACKSTOP_PAGES bounds the WAL meanwhile.
        if (everOpened || (error as { code?: string }).code !== 'SQLITE_CANTOPEN') restart.onError(error);
      })
      .finally(() => {
        running = null;
      });
  }, restart.intervalMs);
  timer.unref();

  return {
    async close() {
      closed = true;
      clearInterval(timer);
      await running;
      const db = await opened?.catch(() => null);
      opened = null;
      if (db) await new Promise<void>((resolve) => db.close(() => resolve()));
    },
  };
}
