import BetterSqlite3 from 'better-sqlite3';
import type { Knex } from 'knex';
import pg from 'pg';
import { databaseQueryErrors } from '../metrics/metrics.ts';

/**
 * A read that runs on every polling request (the key's principal, a verification's status, its
 * tape) or on every creation (the lender's scoring profile). Written with `?` placeholders and with
 * the columns it answers named, never `*` (docs/persistence.md, "Prepared reads"). Every one is made
 * with `hotStatement` and so listed in `hotStatementsMade`, which a test compares with the table in
 * docs/persistence.md.
 */
export interface HotStatement {
  /** Unique per SQL text: PostgreSQL keeps the prepared statement under this name. */
  readonly name: string;
  readonly sql: string;
  /** Written for PostgreSQL alone, with its own placeholders (`$1`), and sent as it is. */
  readonly postgresOnly: boolean;
}

/**
 * Runs hot reads on the driver itself, each prepared once per connection, instead of through Knex's
 * query runner, which costs more CPU per request than an indexed read of one row.
 */
export interface HotStatements {
  rows<Row>(statement: HotStatement, params: ReadonlyArray<string | number | null>): Promise<Row[]>;
  /** Connections of the hot reads' own pool (PostgreSQL), for the pool metrics. */
  poolStats(): { used: number; free: number; pendingAcquires: number; max: number };
  close(): Promise<void>;
}

/** Every hot statement the process has made, by name. */
export const hotStatementsMade = new Map<string, HotStatement>();

export function hotStatement(name: string, sql: string, options: { postgresOnly?: boolean } = {}): HotStatement {
  // PostgreSQL keeps it prepared under its name: one name for two texts would fail when run.
  const made = hotStatementsMade.get(name);
  if (made && made.sql !== sql) throw new Error(`two hot statements are named ${name}`);
  const statement = { name, sql, postgresOnly: options.postgresOnly ?? false };
  hotStatementsMade.set(name, statement);
  return statement;
}

/** Counted as Knex's `query-error` event counts the other statements (metrics). */
function countError(error: unknown, kindOf: (error: unknown) => string): never {
  databaseQueryErrors.labels(kindOf(error)).inc();
  throw error;
}

const NO_POOL = { used: 0, free: 0, pendingAcquires: 0, max: 0 };

/**
 * SQLite: one read-only connection of better-sqlite3 (the service's one SQLite library), each
 * statement prepared once. A read under WAL does not wait for the writer and costs a few
 * microseconds, less than a hop to a thread pool, so it runs at once on the event loop. SQLite's
 * busy timeout covers the rare read that must wait (another process recovering the WAL after a
 * crash): that read blocks the event loop while it waits (docs/persistence.md, "A busy database").
 */
export function sqliteHotStatements(filename: string, busyTimeoutMs: number, kindOf: (error: unknown) => string): HotStatements {
  let db: BetterSqlite3.Database | null = null;
  const prepared = new Map<string, { query: BetterSqlite3.Statement; toRow: (values: unknown[]) => unknown }>();
  let closed = false;
  const read = (statement: HotStatement, params: ReadonlyArray<string | number | null>): unknown[] => {
    if (closed) throw new Error('The database connection is closed.');
    db ??= new BetterSqlite3(filename, { readonly: true, fileMustExist: true, timeout: busyTimeoutMs });
    let found = prepared.get(statement.name);
    if (!found) {
      const query = db.prepare(statement.sql);
      found = { query, toRow: rowFactory(query.columns().map((column) => column.name)) };
      query.raw(true);
      prepared.set(statement.name, found);
    }
    const rows = found.query.all(...params) as unknown[][];
    for (let i = 0; i < rows.length; i++) (rows as unknown[])[i] = found.toRow(rows[i]!);
    return rows;
  };
  return {
    async rows<Row>(statement: HotStatement, params: ReadonlyArray<string | number | null>): Promise<Row[]> {
      try {
        return read(statement, params) as Row[];
      } catch (error) {
        return countError(error, kindOf);
      }
    },
    poolStats: () => NO_POOL,
    async close() {
      closed = true;
      prepared.clear();
      db?.close();
      db = null;
    },
  };
}

/**
 * Builds a statement's row objects from its rows as arrays (better-sqlite3's raw mode): the driver's
 * own row objects are built a property at a time in native code, which costs a third of an indexed
 * read of one row. A column name given twice keeps its last value, as the driver's objects do.
 */
function rowFactory(columns: string[]): (values: unknown[]) => unknown {
  return (values) => {
    const row: Record<string, unknown> = {};
    for (let i = 0; i < columns.length; i++) row[columns[i]!] = values[i];
    return row;
  };
}

/**
 * Whether PostgreSQL refused a prepared statement the connection holds: what it answers no longer
 * has the types it was prepared with (0A000, "cached plan must not change result type", after a
 * migration changed a column it names), or the statement is gone (26000).
 */
function isStalePreparedStatement(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === '26000' || code === '0A000';
}

/** How the hot reads' pool connects: the same bounds as Knex's pool (database.ts). */
export interface PostgresHotPoolOptions {
  connectionString: string;
  max: number;
  connectionTimeoutMillis: number;
  statementTimeoutMs: number;
  onUnavailable(error: unknown): void;
}

/**
 * PostgreSQL: a pool of pg's own (`pg.Pool`) whose connections keep each hot read as a named
 * prepared statement, parsed and planned once per connection. Its `query` hands a connection that
 * failed back with the error, and pg's pool then closes it: a connection whose prepared statement
 * went stale is never lent again, and the read is tried again on another connection, until one
 * prepares it anew. The text PostgreSQL gets (`$1` placeholders) is Knex's own rendering of the
 * statement (`toSQL().toNative()`).
 */
export function postgresHotStatements(knex: Knex, options: PostgresHotPoolOptions, kindOf: (error: unknown) => string): HotStatements {
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.max,
    connectionTimeoutMillis: options.connectionTimeoutMillis,
    statement_timeout: options.statementTimeoutMs,
    query_timeout: options.statementTimeoutMs,
  });
  // An idle connection that breaks (the server restarted) is reported here; unheard, it would end the process.
  pool.on('error', (error) => options.onUnavailable(error));
  const texts = new Map<string, string>();
  const textOf = (statement: HotStatement, params: ReadonlyArray<string | number | null>): string => {
    let text = texts.get(statement.name);
    if (text === undefined) {
      text = statement.postgresOnly
        ? statement.sql
        : knex
            .raw(statement.sql, [...params])
            .toSQL()
            .toNative().sql;
      texts.set(statement.name, text);
    }
    return text;
  };
  let closed = false;
  const runOnce = async <Row>(statement: HotStatement, params: ReadonlyArray<string | number | null>): Promise<Row[]> => {
    // As Knex's pool answers once destroyed: an error that answers 503 (isDatabaseUnavailable).
    if (closed) throw new Error('The database connection is closed.');
    const result = await pool.query({ name: statement.name, text: textOf(statement, params), values: [...params] });
    return result.rows as Row[];
  };
  const fail = (error: unknown): never => {
    if (kindOf(error) === 'unavailable') options.onUnavailable(error);
    return countError(error, kindOf);
  };
  return {
    async rows<Row>(statement: HotStatement, params: ReadonlyArray<string | number | null>): Promise<Row[]> {
      // Every connection that prepared the read before the migration is stale: each refuses it once
      // and is closed, so at most one try per connection of the pool, then one on a new connection.
      for (let tries = 0; ; tries++) {
        try {
          return await runOnce<Row>(statement, params);
        } catch (error) {
          if (!isStalePreparedStatement(error) || tries >= options.max) return fail(error);
        }
      }
    },
    poolStats: () => ({ used: pool.totalCount - pool.idleCount, free: pool.idleCount, pendingAcquires: pool.waitingCount, max: options.max }),
    async close() {
      closed = true;
      await pool.end();
    },
  };
}

/** Where no driver connection of its own is possible (an in-memory SQLite database): through Knex, as any statement. */
export function knexHotStatements(knex: Knex): HotStatements {
  return {
    async rows<Row>(statement: HotStatement, params: ReadonlyArray<string | number | null>): Promise<Row[]> {
      const result = (await knex.raw(statement.sql, [...params])) as Row[] | { rows: Row[] };
      return Array.isArray(result) ? result : result.rows;
    },
    poolStats: () => NO_POOL,
    async close() {},
  };
}
