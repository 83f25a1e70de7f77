import BetterSqlite3 from 'better-sqlite3';
import knex from 'knex';
import { LRUCache } from 'lru-cache';

/** Distinct SQL texts kept prepared per connection (Knex's statements repeat; multi-row inserts vary by row count). */
const PREPARED_STATEMENTS_KEPT = 500;

/**
 * A connection of better-sqlite3 as Knex's better-sqlite3 client uses it (it calls `prepare`, then
 * runs the statement), with each SQL text prepared once. Knex's client prepares every statement it
 * runs: under creation load preparing took 7 % of the main thread, more than SQLite's own work on
 * the statements, and a statement's native memory is freed only when the garbage collector gets
 * to it. Statements of better-sqlite3 are meant to be run again with new values.
 */
export interface SqliteConnection {
  prepare(sql: string): BetterSqlite3.Statement;
  pragma(source: string): unknown;
  close(): void;
}

function preparingOnce(database: BetterSqlite3.Database): SqliteConnection {
  const statements = new LRUCache<string, BetterSqlite3.Statement>({ max: PREPARED_STATEMENTS_KEPT });
  return {
    prepare(sql) {
      let statement = statements.get(sql);
      if (!statement) {
        statement = database.prepare(sql);
        statements.set(sql, statement);
      }
      return statement;
    },
    pragma: (source) => database.pragma(source),
    close() {
      statements.clear();
      database.close();
    },
  };
}

/**
 * The connections of one Knex instance on SQLite: a `KnexPool` (Knex's documented `connectionPool`
 * option: "a KnexPool, tarn Pool, or a native driver pool"), whose connections are made here, with
 * their pragmas and the statement cache above. Knex does not close a pool it was given: the
 * database closes it after Knex (database.ts).
 */
export function sqliteConnectionPool(
  filename: string,
  options: { readonly: boolean; pragmas: readonly string[]; max: number; acquireTimeoutMs: number },
): InstanceType<typeof knex.KnexPool<SqliteConnection>> {
  return new knex.KnexPool<SqliteConnection>({
    min: 1,
    max: options.max,
    acquireTimeoutMillis: options.acquireTimeoutMs,
    propagateCreateError: true,
    create: () => {
      const database = new BetterSqlite3(filename, { readonly: options.readonly });
      try {
        for (const pragma of options.pragmas) database.pragma(pragma);
      } catch (error) {
        database.close();
        throw error;
      }
      return preparingOnce(database);
    },
    destroy: (connection) => connection.close(),
  });
}
