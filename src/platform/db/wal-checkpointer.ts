import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type { Knex } from 'knex';

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

/**
 * Run by the writer after each group commit (group-commit.ts): when the checkpointer asks, at most
 * once per its interval, copies the WAL's pages committed since its last copy, on the writer's own
 * connection, so that every page is in the database file and the next transaction can start the WAL
 * again. Asked again if that does not happen: the checkpointer's own copy was running, or a reader
 * still read from the WAL.
 */
export async function catchUpWal(writer: Knex, restart: WalRestart): Promise<void> {
  if (!restart.due()) return;
  try {
    const [done] = await writer.raw<Array<{ busy: number; log: number; checkpointed: number }>>('PRAGMA wal_checkpoint(PASSIVE)');
    if (done && done.busy === 0 && done.checkpointed === done.log) restart.wanted = false;
  } catch (error) {
    restart.onError(error);
  }
}

export interface WalCheckpointer {
  close(): Promise<void>;
}

/**
 * What a pass of the checkpointer's thread answers: SQLite's `wal_checkpoint` row, or its error
 * (`opening` when the connection could not be opened).
 */
type PassResult = { busy: number; log: number; checkpointed: number } | { error: { code?: string; message: string; opening?: boolean } };

/**
 * The checkpointer's thread: one connection of better-sqlite3, a passive checkpoint per message,
 * closed on `close`, when the thread ends itself (a preload's timer cannot keep it). It is the
 * writer's library, loaded once per process, so the same copy of SQLite (docs/persistence.md says why no
 * other may open the file). CommonJS, so it needs no file of its own in the bundle; the driver's path
 * comes from the main thread.
 */
const CHECKPOINT_THREAD = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
let db = null;
const failure = (error, opening) => ({ error: { code: error.code, message: String(error.message), opening } });
parentPort.on('message', (message) => {
  if (message === 'close') {
    if (db) db.close();
    process.exit(0);
  }
  if (!db) {
    try {
      db = new Database(workerData.filename, { fileMustExist: true, timeout: workerData.busyTimeoutMs });
    } catch (error) {
      parentPort.postMessage(failure(error, true));
      return;
    }
  }
  try {
    parentPort.postMessage(db.pragma('wal_checkpoint(PASSIVE)')[0]);
  } catch (error) {
    parentPort.postMessage(failure(error, false));
  }
});
`;

/** A checkpoint's failure as the thread reported it, with SQLite's code. */
class CheckpointError extends Error {
  constructor(
    readonly code: string | undefined,
    message: string,
    readonly opening = false,
  ) {
    super(message);
  }
}

/** The longest a closing thread is waited for (it waits at most a busy timeout for its pass) before it is stopped. */
const CLOSE_WAIT_MS = 10_000;

/**
 * Checkpoints the SQLite writer's WAL off the event loop. SQLite runs a checkpoint inside the commit
 * that takes the WAL past 1,000 pages: on the writer's connection, which is synchronous
 * (better-sqlite3), that copied the pages into the database file and waited for its `fsync` on the
 * event loop, about 10 ms every eight group commits under creation load, 8 % of the main thread's
 * time and a stall of every request in flight (docs/performance.md). The writer's own checkpoint now
 * waits for AUTOCHECKPOINT_BACKSTOP_PAGES, a backstop, and a connection on a thread of its own
 * checkpoints passively every `restart.intervalMs`: it waits for no reader or writer, and the writer
 * goes on committing while it copies. Once the WAL is `restartAfterPages` long it sets
 * `restart.wanted`, and the writer, between two transactions, copies the few pages committed since
 * (`catchUpWal`, after a group commit), so that its next transaction starts the WAL again if no reader is still on it
 * (else it is asked again). Committed transactions are as durable as before: the WAL holds them
 * until they are copied, and SQLite's recovery reads it after a crash.
 */
export function startWalCheckpointer(filename: string, busyTimeoutMs: number, restart: WalRestart, restartAfterPages = RESTART_AFTER_PAGES): WalCheckpointer {
  let thread: { worker: Worker; answer: ((result: PassResult) => void) | null } | null = null;
  let everOpened = false;
  let running: Promise<void> | null = null;
  let closing: Promise<void> | null = null;
  /** Threads lost in a row, and when the next may start: one that keeps dying is not started ten times a second. */
  let threadsLost = 0;
  let nextThreadAt = 0;

  const threadOf = () => {
    if (thread) return thread;
    if (performance.now() < nextThreadAt) return null;
    const worker = new Worker(CHECKPOINT_THREAD, {
      eval: true,
      // None of the server's command-line flags or preloads (its tracing, say): the thread only
      // checkpoints. NODE_OPTIONS still reaches it; its close ends it regardless.
      execArgv: [],
      workerData: { driver: createRequire(import.meta.url).resolve('better-sqlite3'), filename, busyTimeoutMs },
    });
    // A process with nothing else to do ends; the thread does not keep it.
    worker.unref();
    const started = { worker, answer: null as ((result: PassResult) => void) | null };
    const lost = (error: Error) => {
      if (thread !== started) return;
      thread = null;
      nextThreadAt = performance.now() + Math.min(60_000, restart.intervalMs * 2 ** ++threadsLost);
      if (started.answer) started.answer({ error: { message: error.message } });
      else if (!closing) restart.onError(error);
    };
    worker.on('message', (result: PassResult) => started.answer?.(result));
    worker.on('error', lost);
    worker.on('exit', (code) => lost(new Error(`the checkpointer thread exited with code ${code}`)));
    thread = started;
    return started;
  };
  const pass = async (): Promise<void> => {
    const current = threadOf();
    if (!current) return;
    const result = await new Promise<PassResult>((resolve) => {
      current.answer = resolve;
      current.worker.postMessage('pass');
    });
    current.answer = null;
    if ('error' in result) throw new CheckpointError(result.error.code, result.error.message, result.error.opening);
    everOpened = true;
    threadsLost = 0;
    if (result.log >= restartAfterPages) restart.wanted = true;
  };

  const timer = setInterval(() => {
    if (running || closing) return;
    running = pass()
      .catch((error: unknown) => {
        // Not yet made by the writer: nothing to checkpoint. Any later failure is counted; the
        // writer's own checkpoint at AUTOCHECKPOINT_BACKSTOP_PAGES bounds the WAL meanwhile.
        const notYetMade = error instanceof CheckpointError && error.opening && error.code === 'SQLITE_CANTOPEN' && !everOpened;
        if (!notYetMade) restart.onError(error);
      })
      .finally(() => {
        running = null;
      });
  }, restart.intervalMs);
  timer.unref();

  const close = async (): Promise<void> => {
    clearInterval(timer);
    await running;
    const current = thread;
    thread = null;
    if (!current) return;
    // Kept alive until the thread has closed its connection, even in a process with nothing else to do.
    current.worker.ref();
    const exited = new Promise((resolve) => current.worker.once('exit', resolve));
    current.worker.postMessage('close');
    const stopping = setTimeout(() => void current.worker.terminate(), CLOSE_WAIT_MS);
    await exited;
    clearTimeout(stopping);
  };
  return {
    close: () => (closing ??= close()),
  };
}
