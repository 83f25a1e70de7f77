import BetterSqlite3 from 'better-sqlite3';
import type { Knex } from 'knex';
import { isSqliteBusy, retryWhileBusy } from './sqlite-writer.ts';
import { databaseQueryErrors } from '../metrics/metrics.ts';
import { assertNamesItsColumns, giveUpConnection, isStalePreparedStatement } from './prepared-sql.ts';

/**
 * A read that runs on every request (the key's principal, a verification's status, its tape). Written
 * with `?` placeholders; each dialect prepares it once per connection.
 */
export interface HotStatement {
  /** Unique per SQL text: PostgreSQL keeps the prepared statement under this name. */
  readonly name: string;
  readonly sql: string;
}

/**
 * Runs hot reads on the driver itself, with each statement prepared once, instead of through Knex's
 * query runner, which costs more CPU per request than the query: measured on `GET
 * /verifications/{id}`, about 200 µs of CPU per request per statement through `knex.raw` against
 * about 50 µs for a prepared one (docs/performance.md).
 */
export interface HotStatements {
  rows<Row>(statement: HotStatement, params: ReadonlyArray<string | number | null>): Promise<Row[]>;
  close(): Promise<void>;
}

/** Every hot statement the process has made, by name (a test runs each across a later migration). */
export const hotStatementsMade = new Map<string, HotStatement>();

export function hotStatement(name: string, sql: string): HotStatement {
  assertNamesItsColumns(sql);
  // PostgreSQL keeps it prepared under its name: one name for two texts would fail when run.
  const made = hotStatementsMade.get(name);
  if (made && made.sql !== sql) throw new Error(`two hot statements are named ${name}`);
  const statement = { name, sql };
  hotStatementsMade.set(name, statement);
  return statement;
}

/** Counted as Knex's `query-error` event counts the other statements (metrics). */
function countError(error: unknown, kindOf: (error: unknown) => string): never {
  databaseQueryErrors.labels(kindOf(error)).inc();
  throw error;
}

/**
 * SQLite: each read runs at once on the event loop, on a read-only connection of better-sqlite3
 * (synchronous; the writer's own library, never a second copy of SQLite: sqlite-reader.ts): a read
 * under WAL does not wait for the writer, and an indexed read of one row costs a few microseconds,
 * less than a round trip through a thread pool. A read that would have to wait (SQLITE_BUSY: another
 * process recovering the WAL after a crash) must not block the event loop: the connection's busy
 * timeout is zero, and the read is tried again after a pause off it, as the read pool does.
 */
export function sqliteHotStatements(filename: string, busyTimeoutMs: number, kindOf: (error: unknown) => string): HotStatements {
  let db: BetterSqlite3.Database | null = null;
  const prepared = new Map<string, { query: BetterSqlite3.Statement; toRow: (values: unknown[]) => unknown }>();
  let closed = false;
  const read = (statement: HotStatement, params: ReadonlyArray<string | number | null>): unknown[] => {
    if (closed) throw new Error('The database connection is closed.');
    db ??= new BetterSqlite3(filename, { readonly: true, fileMustExist: true, timeout: 0 });
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
        if (!isSqliteBusy(error)) return countError(error, kindOf);
        return (await retryWhileBusy(busyTimeoutMs, () => read(statement, params), undefined, error).catch((retried: unknown) =>
          countError(retried, kindOf),
        )) as Row[];
      }
    },
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
 * read of one row (docs/performance.md). A column name given twice keeps its last value, as the
 * driver's objects do.
 */
function rowFactory(columns: string[]): (values: unknown[]) => unknown {
  return (values) => {
    const row: Record<string, unknown> = {};
    for (let i = 0; i < columns.length; i++) row[columns[i]!] = values[i];
    return row;
  };
}

interface PgConnection {
  query(config: { name: string; text: string; values: unknown[] }): Promise<{ rows: unknown[] }>;
}

/** The part of Knex's client that lends its pool's connections (untyped in Knex's declarations). */
interface PoolLender {
  acquireConnection(): Promise<unknown>;
  releaseConnection(connection: unknown): Promise<unknown>;
}

/**
 * PostgreSQL: a connection of Knex's pool (its acquire timeout and the connection's statement and
 * query timeouts still bound the wait), with the statement sent as a named prepared statement, which
 * pg parses and plans once per connection.
 */

export function postgresHotStatements(knex: Knex, kindOf: (error: unknown) => string): HotStatements {
  const pool = knex.client as PoolLender;
  const texts = new Map<string, string>();
  const textOf = (statement: HotStatement): string => {
    let text = texts.get(statement.name);
    if (text === undefined) {
      let n = 0;
      text = statement.sql.replace(/\?/g, () => `$${++n}`);
      texts.set(statement.name, text);
    }
    return text;
  };
  const runOnce = async <Row>(statement: HotStatement, params: ReadonlyArray<string | number | null>): Promise<Row[]> => {
    let connection: PgConnection | undefined;
    try {
      connection = (await pool.acquireConnection()) as PgConnection;
      const result = await connection.query({ name: statement.name, text: textOf(statement), values: [...params] });
      return result.rows as Row[];
    } catch (error) {
      // The pool closes it instead of lending it again: its other prepared statements may be stale too.
      if (connection && isStalePreparedStatement(error)) giveUpConnection(connection, error);
      throw error;
    } finally {
      if (connection) await pool.releaseConnection(connection);
    }
  };
  return {
    async rows<Row>(statement: HotStatement, params: ReadonlyArray<string | number | null>): Promise<Row[]> {
      try {
        return await runOnce<Row>(statement, params);
      } catch (error) {
        // Refused before it ran (prepared-sql.ts): once more, on a connection made since, which
        // prepares it again (every older one was given up with this one).
        if (!isStalePreparedStatement(error)) return countError(error, kindOf);
        return runOnce<Row>(statement, params).catch((again: unknown) => countError(again, kindOf));
      }
    },
    async close() {
      // The connections belong to Knex's pool, which the database closes.
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
    async close() {},
  };
}
