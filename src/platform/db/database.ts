import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import Database from 'better-sqlite3';
import knex, { type Knex } from 'knex';
import type { Logger } from '../logger.ts';
import { databaseQueryErrors } from '../metrics/metrics.ts';
import { DatabaseOutageLog } from './database-outage-log.ts';
import { GroupCommit } from './group-commit.ts';
import { migrations } from './migrations/index.ts';
import { knexHotStatements, postgresHotStatements, sqliteHotStatements, type HotStatements } from './hot-statements.ts';
import { sqliteConnectionPool } from './sqlite-connections.ts';
import { commitInGroups } from './unit-of-work.ts';
import { AUTOCHECKPOINT_BACKSTOP_PAGES, RESTART_AFTER_PAGES, WalRestart, catchUpWal, startWalCheckpointer } from './wal-checkpointer.ts';

export type { Knex };
export type Dialect = 'sqlite' | 'postgres';

export interface Database {
  knex: Knex;
  /**
   * For reads outside transactions. On SQLite a separate pool of read connections: WAL lets them
   * read in parallel with each other and with the single writer. On PostgreSQL the same pool.
   */
  reader: Knex;
  /** The reads on every request's path, prepared once on the driver (hot-statements.ts). */
  hot: HotStatements;
  dialect: Dialect;
  /**
   * Applies every pending migration; safe to run from several processes at once: they take turns
   * (`withMigrationLock`), so exactly one applies each migration and the others find nothing to do.
   */
  migrate(): Promise<void>;
  /** Connections of this process's pools (metrics). */
  poolStats(): { used: number; free: number; pendingAcquires: number; max: number };
  /** True when a trivial query succeeds: the readiness probe. */
  isReachable(): Promise<boolean>;
  /** Logs an outage once (null without a logger): background loops report their failed passes to it. */
  outage: DatabaseOutageLog | null;
  close(): Promise<void>;
}

/** The longest a request waits to connect to the database or for a pooled connection before it answers 503. */
export const DATABASE_TIMEOUT_MS = 5000;

/** The longest a statement may run on PostgreSQL, and the client's wait for its answer. */
export const STATEMENT_TIMEOUT_MS = 4000;

/**
 * The longest a request waits on an unreachable database before it answers 503: a wait for a pooled
 * connection, then one for its statement. With the server frozen every pooled connection hangs, so
 * a request can get one just as another request's statement times out and then wait for its own.
 * The two are budgeted so that, with the time to answer, the README's 10 s hold ("Timeouts"): two
 * waits of 5 s each had a frozen database answer a creation after 10.05 s.
 */
export const REQUEST_DATABASE_BOUND_MS = DATABASE_TIMEOUT_MS + STATEMENT_TIMEOUT_MS;

/** What the README promises a client: an answer, 503 at worst, within this while the database is down or frozen. */
export const DOCUMENTED_ANSWER_BOUND_MS = 10_000;

export function dialectOf(databaseUrl: string): Dialect {
  return databaseUrl.startsWith('sqlite:') ? 'sqlite' : 'postgres';
}

export function sqliteFilename(databaseUrl: string): string {
  const location = databaseUrl.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '');
  return location === ':memory:' ? ':memory:' : resolve(location);
}

/**
 * Every SQLite connection waits this long for another process's write lock before SQLITE_BUSY.
 * better-sqlite3 is synchronous, so the wait blocks the event loop: only another process (the
 * operator's CLI, a migration) ever holds the lock, for the length of its transaction
 * (docs/persistence.md, "A busy database").
 */
const SQLITE_BUSY_TIMEOUT_MS = 5000;

// secure_delete: erased rows are overwritten in the file, not just unlinked (data-protection erasure).
const SQLITE_PRAGMAS = ['foreign_keys = ON', 'secure_delete = ON', 'journal_mode = WAL', 'synchronous = NORMAL'];

/**
 * The writer's temporary storage in memory: each unit of a group commit runs in a savepoint
 * (group-commit.ts), and SQLite keeps the original of every page a savepoint changes in a
 * sub-journal, in memory only up to 64 KiB; a creation's outgrew it, so a temporary file was
 * created, written and unlinked for most creations. The cost: a transaction that rewrites many pages
 * (a large erasure, a migration that rebuilds a table) holds their originals in memory until it
 * ends. The read connections keep their temporary files.
 */
const SQLITE_WRITER_TEMP_STORE = 'temp_store = MEMORY';

/**
 * The WAL is checkpointed off the event loop (`startWalCheckpointer`); SQLite's own checkpoint at a
 * commit stays as a backstop, far above its default of 1,000 pages, so the WAL never grows without
 * end. `journal_size_limit` cuts the WAL file back each time it starts again, so a WAL that grew (a
 * large transaction) does not keep its size and its old page images (docs/data-protection.md).
 */
const SQLITE_WRITER_CHECKPOINTS = [`wal_autocheckpoint = ${AUTOCHECKPOINT_BACKSTOP_PAGES}`, `journal_size_limit = ${RESTART_AFTER_PAGES * 4096}`];

function sqliteFile(databaseUrl: string): string {
  const filename = sqliteFilename(databaseUrl);
  if (filename !== ':memory:') mkdirSync(dirname(filename), { recursive: true });
  return filename;
}

/** The pools given to Knex (`connectionPool`), which Knex does not close: the database closes them after it. */
class ExternalPools {
  private readonly pools: Array<{ destroy(): Promise<unknown> }> = [];
  add<Pool extends { destroy(): Promise<unknown> }>(pool: Pool): Pool {
    this.pools.push(pool);
    return pool;
  }
  async destroy(): Promise<void> {
    for (const pool of this.pools) await pool.destroy();
  }
}

/**
 * The writer: Knex's own better-sqlite3 client on one connection (sqlite-connections.ts). SQLite
 * serialises writers anyway, and with a synchronous driver a second connection of the same process
 * waiting for the first one's lock would block the event loop that the first one needs to finish.
 */
function sqliteWriterConfig(databaseUrl: string, given: ExternalPools): Knex.Config {
  return {
    client: 'better-sqlite3',
    connectionPool: given.add(
      sqliteConnectionPool(sqliteFile(databaseUrl), {
        readonly: false,
        pragmas: [`busy_timeout = ${SQLITE_BUSY_TIMEOUT_MS}`, ...SQLITE_PRAGMAS, SQLITE_WRITER_TEMP_STORE, ...SQLITE_WRITER_CHECKPOINTS],
        max: 1,
        acquireTimeoutMs: DATABASE_TIMEOUT_MS,
      }),
    ),
    useNullAsDefault: true,
    acquireConnectionTimeout: DATABASE_TIMEOUT_MS,
  };
}

/**
 * Read connections: Knex's better-sqlite3 client, read-only (better-sqlite3's `readonly` option),
 * with SQLite's default page cache (2 MB) rather than better-sqlite3's 16 MB. WAL lets them read
 * while the writer writes. Never another SQLite library (docs/persistence.md).
 */
function sqliteReaderConfig(databaseUrl: string, connections: number, given: ExternalPools): Knex.Config {
  return {
    client: 'better-sqlite3',
    connectionPool: given.add(
      sqliteConnectionPool(sqliteFile(databaseUrl), {
        readonly: true,
        pragmas: [`busy_timeout = ${SQLITE_BUSY_TIMEOUT_MS}`, 'cache_size = -2000'],
        max: connections,
        acquireTimeoutMs: DATABASE_TIMEOUT_MS,
      }),
    ),
    useNullAsDefault: true,
    acquireConnectionTimeout: DATABASE_TIMEOUT_MS,
  };
}

/** Connections of Knex's pool on PostgreSQL, and of the hot reads' own pool (hot-statements.ts). */
const POSTGRES_CONNECTIONS = 10;

function postgresConfig(databaseUrl: string): Knex.Config {
  return {
    client: 'pg',
    // Every wait on the database is bounded (README, "Timeouts"): connecting, a
    // statement on the server, and the client's wait for an answer, which is what still ends when the
    // server is frozen rather than down. A request then gets 503 instead of hanging.
    connection: {
      connectionString: databaseUrl,
      connectionTimeoutMillis: DATABASE_TIMEOUT_MS,
      statement_timeout: STATEMENT_TIMEOUT_MS,
      query_timeout: STATEMENT_TIMEOUT_MS,
    },
    pool: { min: 0, max: POSTGRES_CONNECTIONS },
    acquireConnectionTimeout: DATABASE_TIMEOUT_MS,
  };
}

/**
 * Connections for migrations and maintenance (`admin gdpr compact`) on PostgreSQL, without the
 * statement and query timeouts of the service's pool: a migration that builds an index on a large
 * table, or a rewrite of one, runs for longer than any request may wait, and cut off at DATABASE_TIMEOUT_MS it would roll back every pending migration and the
 * process would not start.
 */
export function postgresMigrator(databaseUrl: string): Knex {
  return knex({ client: 'pg', connection: { connectionString: databaseUrl, connectionTimeoutMillis: DATABASE_TIMEOUT_MS }, pool: { min: 0, max: 2 } });
}

/** What poolStats reads of Knex's tarn pool. */
interface TarnPool {
  numUsed(): number;
  numFree(): number;
  numPendingAcquires(): number;
  max: number;
}

/** unavailable: the database could not answer; constraint: a unique or foreign key refused a write; other: anything else. */
function queryErrorKind(error: unknown): 'unavailable' | 'constraint' | 'other' {
  if (isDatabaseUnavailable(error)) return 'unavailable';
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return 'other';
  return code.startsWith('23') || code.startsWith('SQLITE_CONSTRAINT') ? 'constraint' : 'other';
}

/** Read connections of a SQLite database; a file-less (`:memory:`) database has only its writer. */
const SQLITE_READERS = 4;

export interface OpenOptions {
  /** Where Knex's own messages and database outages are logged; without it Knex writes to the console. */
  logger?: Logger;
  /** SQLite: units of work commit in groups (group-commit.ts); on unless `DATABASE_GROUP_COMMIT=off`. */
  groupCommit?: boolean;
}

export function openDatabase(databaseUrl: string, options: OpenOptions = {}): Database {
  const dialect = dialectOf(databaseUrl);
  const outage = options.logger ? new DatabaseOutageLog(options.logger, isDatabaseUnavailable) : null;
  const logged = (config: Knex.Config): Knex.Config => (outage ? { ...config, log: outage.knexLog() } : config);
  const walRestart = new WalRestart((error) => databaseQueryErrors.labels(queryErrorKind(error)).inc());
  const given = new ExternalPools();
  const instance = knex(logged(dialect === 'sqlite' ? sqliteWriterConfig(databaseUrl, given) : postgresConfig(databaseUrl)));
  const fileBacked = dialect === 'sqlite' && sqliteFilename(databaseUrl) !== ':memory:';
  const reader = fileBacked ? knex(logged(sqliteReaderConfig(databaseUrl, SQLITE_READERS, given))) : instance;
  const pools = [...new Set([instance, reader])];
  outage?.watch(pools);
  for (const pool of pools)
    pool.on('query-error', (error: unknown) => {
      const kind = queryErrorKind(error);
      databaseQueryErrors.labels(kind).inc();
      if (kind === 'unavailable') outage?.failed(error);
    });
  const hot =
    dialect === 'postgres'
      ? postgresHotStatements(
          instance,
          {
            connectionString: databaseUrl,
            max: POSTGRES_CONNECTIONS,
            connectionTimeoutMillis: DATABASE_TIMEOUT_MS,
            statementTimeoutMs: STATEMENT_TIMEOUT_MS,
            onUnavailable: (error) => outage?.failed(error),
          },
          queryErrorKind,
        )
      : fileBacked
        ? sqliteHotStatements(sqliteFilename(databaseUrl), SQLITE_BUSY_TIMEOUT_MS, queryErrorKind)
        : knexHotStatements(instance);
  const checkpointer = fileBacked ? startWalCheckpointer(sqliteFilename(databaseUrl), SQLITE_BUSY_TIMEOUT_MS, walRestart) : null;
  if (dialect === 'sqlite' && options.groupCommit !== false) {
    commitInGroups(instance, new GroupCommit(instance, DATABASE_TIMEOUT_MS, () => catchUpWal(instance, walRestart)));
  }
  return {
    knex: instance,
    reader,
    hot,
    dialect,
    async migrate() {
      const migrator = dialect === 'postgres' ? postgresMigrator(databaseUrl) : instance;
      try {
        await withMigrationLock(dialect, instance, databaseUrl, () => migrator.migrate.latest({ migrationSource: migrations }));
      } finally {
        if (migrator !== instance) await migrator.destroy();
      }
    },
    poolStats() {
      const stats = hot.poolStats();
      for (const pool of pools) {
        // Knex's pool (tarn) exists once the client is initialised; absent after destroy().
        const tarn = (pool.client as { pool?: TarnPool }).pool;
        if (!tarn) continue;
        stats.used += tarn.numUsed();
        stats.free += tarn.numFree();
        stats.pendingAcquires += tarn.numPendingAcquires();
        stats.max += tarn.max;
      }
      return stats;
    },
    outage,
    async isReachable() {
      try {
        await instance.raw('select 1');
        return true;
      } catch {
        return false;
      }
    },
    async close() {
      // Each closed even if one before it fails; the first failure is reported.
      let failure: Error | undefined;
      for (const closeOne of [
        () => checkpointer?.close(),
        () => hot.close(),
        () => reader !== instance && reader.destroy(),
        () => instance.destroy(),
        () => given.destroy(),
      ]) {
        try {
          await closeOne();
        } catch (error) {
          failure ??= error instanceof Error ? error : new Error(String(error));
        }
      }
      if (failure) throw failure;
    },
  };
}

/** How long a process waits for another one's migrations before it gives up starting. */
export const MIGRATION_LOCK_WAIT_MS = 5 * 60 * 1000;

/** Any fixed number: the advisory lock migrating processes of this service take turns on. */
const POSTGRES_MIGRATION_LOCK = 4_206_071_117;

/**
 * Runs `migrate` while no other process migrates the same database. Knex's own lock does not cover
 * its start: a process that finds no `knex_migrations` table creates it unguarded, so processes
 * starting together on a new database fail with "already exists", and two of them can each insert a
 * row into `knex_migrations_lock`, which then refuses every later migration as "already locked".
 *
 * PostgreSQL: an advisory lock held by a transaction on one of the pool's connections while the
 * migrations run on others; polled, because a blocking wait would meet the statement timeout. A
 * process that dies releases it with its connection.
 * SQLite: an exclusive transaction on a lock file beside the database (`<file>.migration-lock`);
 * the operating system releases it when a process dies. Not for `:memory:`, which no other process
 * can open.
 */
async function withMigrationLock(dialect: Dialect, knex: Knex, databaseUrl: string, migrate: () => Promise<unknown>): Promise<void> {
  if (dialect === 'postgres') {
    await knex.transaction(async (trx) => {
      const deadline = Date.now() + MIGRATION_LOCK_WAIT_MS;
      for (;;) {
        const { rows } = await trx.raw<{ rows: Array<{ locked: boolean }> }>('select pg_try_advisory_xact_lock(?) as locked', [POSTGRES_MIGRATION_LOCK]);
        if (rows[0]!.locked) break;
        if (Date.now() > deadline) throw new Error(`another process has been migrating the database for ${MIGRATION_LOCK_WAIT_MS / 1000} s`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      await migrate();
    });
    return;
  }
  const filename = sqliteFilename(databaseUrl);
  if (filename === ':memory:') {
    await migrate();
    return;
  }
  // better-sqlite3, the service's one copy of SQLite: a second copy in the process would not see
  // this lock (POSIX locks are per process), and would drop it when it closed the file.
  const lock = new Database(`${filename}.migration-lock`);
  try {
    // Polled rather than waited for in busy_timeout, which would block the event loop.
    lock.pragma('busy_timeout = 0');
    const deadline = Date.now() + MIGRATION_LOCK_WAIT_MS;
    for (;;) {
      try {
        lock.exec('BEGIN EXCLUSIVE');
        break;
      } catch (error) {
        if ((error as { code?: string }).code !== 'SQLITE_BUSY') throw error;
        if (Date.now() > deadline) throw new Error(`another process has been migrating the database for ${MIGRATION_LOCK_WAIT_MS / 1000} s`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
    await migrate();
    lock.exec('COMMIT');
  } finally {
    lock.close();
  }
}

/** Errors that mean "the database cannot be reached right now" rather than a bug: 503, not 500 (D7). */
export function isDatabaseUnavailable(error: unknown): boolean {
  const e = error as { code?: string; name?: string; message?: string } | null;
  if (!e) return false;
  const codes = [
    'ECONNREFUSED',
    'ECONNRESET',
    'ETIMEDOUT',
    'ENOTFOUND',
    'EHOSTUNREACH',
    '57P01',
    '57P02',
    '57P03',
    '53300',
    '08000',
    '08001',
    '08003',
    '08006',
  ];
  if (e.code && codes.includes(e.code)) return true;
  // better-sqlite3 names the extended codes (SQLITE_BUSY_RECOVERY, SQLITE_IOERR_WRITE, ...), node-sqlite3 the primary ones.
  if (e.code && /^SQLITE_(BUSY|CANTOPEN|IOERR)(_|$)/.test(e.code)) return true;
  if (e.name === 'KnexTimeoutError') return true;
  // pg's own wordings: "timeout expired" (connecting), "Query read timeout" (no answer in time),
  // "canceling statement due to statement timeout" (57014 on the server).
  if (e.code === '57014') return true;
  return /Unable to acquire a connection|Connection terminated|connection is closed|pool is probably full|timeout expired|Query read timeout/i.test(
    e.message ?? '',
  );
}
