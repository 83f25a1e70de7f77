import { createRequire } from 'node:module';
import type { Knex } from 'knex';
import { giveUpConnection, isStalePreparedStatement, madeSinceLastStale, noteConnectionMade } from './prepared-sql.ts';
import { preparedNames, runFixed, writtenTable, type PreparedNames, type Binding, type FixedStatement } from './fixed-statements.ts';

/**
 * Writes nothing waits for, sent on PostgreSQL with the transaction's next statement. A creation
 * makes about a dozen statements in its transaction, and on PostgreSQL each is a round trip: the
 * server's time per creation went more to receiving, parsing and answering statements than to
 * running them, and the event loop's to writing them to the socket (docs/performance.md). A write
 * that returns nothing the caller reads (an insert without `returning`, an update whose count is not
 * checked) is kept until the transaction's next statement, and then sent in front of it, in the same
 * statement, as a data-modifying `WITH` query: PostgreSQL runs every such query once and to the
 * end, whatever the main statement reads, and checks foreign keys at the end of the whole statement.
 *
 * A `WITH` query's changes are not visible to the rest of its statement, so kept writes travel in
 * front of a statement only when that statement names none of their tables; otherwise, and in front
 * of a transaction's own statements (`SAVEPOINT`, `COMMIT`), they are sent alone first. Two kept
 * writes on one table are never sent together either (a row changed twice in one statement is an
 * error). A `ROLLBACK` drops them: they would have been undone. An error in a kept write fails the
 * statement it travels with, and so the transaction, as it would have failed it on its own.
 *
 * On SQLite (a synchronous library in the process, no round trip to save), or outside a
 * transaction, the write runs at once.
 */
export async function writeWithNextStatement(trx: Knex, write: Knex.QueryBuilder | FixedWrite): Promise<void> {
  const client = trx.client as Partial<WriteKeeper> & { acquireConnection(): Promise<object> };
  const open = client.keepWrite && trx.isTransaction && !(trx as Knex.Transaction).isCompleted();
  if ('fixed' in write) {
    const { fixed: statement, bindings } = write;
    if (open && statement.writes !== null) await client.keepWrite!(await client.acquireConnection(), { sql: statement.sql, bindings, table: statement.writes });
    else if (trx.isTransaction) await runFixed(trx as Knex.Transaction, statement, bindings);
    else await trx.raw(statement.sql, bindings);
    return;
  }
  // Compiled only where it can be kept: Knex compiles the write again when it runs. A write on a
  // transaction that has ended runs, so that Knex refuses it as it refuses any statement there: the
  // connection may already be another transaction's.
  const compiled = open ? write.toSQL() : null;
  const table = compiled && !Array.isArray(compiled) ? writtenTable(compiled.sql) : undefined;
  if (!client.keepWrite || !compiled || table === undefined) {
    await write;
    return;
  }
  await client.keepWrite(await client.acquireConnection(), { sql: compiled.sql, bindings: compiled.bindings, table });
}

/** A fixed statement (fixed-statements.ts) with its bindings. */
export interface FixedWrite {
  fixed: FixedStatement;
  bindings: Binding[];
}

interface KeptWrite {
  sql: string;
  bindings: readonly unknown[];
  table: string;
}

interface WriteKeeper {
  keepWrite(connection: object, write: KeptWrite): Promise<void>;
}

/** What Knex passes its client's `query`: a statement it built, or a transaction's own SQL text. */
type QueryObject = { sql: string; bindings?: readonly unknown[]; method?: string; options?: object; [key: string]: unknown };

interface PostgresClient {
  query(connection: object, query: string | QueryObject): Promise<unknown>;
  acquireRawConnection(): Promise<object>;
  validateConnection(connection: object): boolean;
}
type ClientClass = new (config: Knex.Config) => PostgresClient;

// Knex exports its dialect clients only by path, untyped.
const KnexPostgres = createRequire(import.meta.url)('knex/lib/dialects/postgres/index.js') as ClientClass;

/** Statements a kept write may travel in front of: one plain statement, without a `WITH` of its own. */
const CARRIER = /^\s*(?:select|insert|update|delete)\b/i;
const ROLLBACK = /^\s*rollback\b/i;
const COMMIT = /^\s*commit\b/i;

/**
 * The writes kept per connection. Not a field of the client: a transaction's client is a new object
 * made from the client's prototype (Knex's makeTxClient), without the fields of the one it came from.
 */
const keptWrites = new WeakMap<object, KeptWrite[]>();

/**
 * Knex's PostgreSQL client, keeping writes per connection until its next statement. Knex runs every
 * statement of a connection, a transaction's own included, through `query` (streams aside, which
 * the service does not use in a transaction), and a transaction's client is made from this class's
 * prototype, so no statement on the connection goes past it.
 */
export class PostgresKeepingWrites extends KnexPostgres implements WriteKeeper {
  constructor(config: Knex.Config) {
    // Knex picks the dialect from `client`; the rest of the service reads it as 'pg'.
    super({ ...config, client: 'pg' });
  }

  override async acquireRawConnection(): Promise<object> {
    const connection = await super.acquireRawConnection();
    noteConnectionMade(connection);
    return connection;
  }

  /** Knex's pool asks before each loan: a connection made before a stale prepared statement was seen is closed (prepared-sql.ts). */
  override validateConnection(connection: object): boolean {
    return super.validateConnection(connection) && madeSinceLastStale(connection);
  }

  async keepWrite(connection: object, write: KeptWrite): Promise<void> {
    // Read again after each send: another write of the transaction may have been kept meanwhile.
    for (;;) {
      const kept = keptWrites.get(connection) ?? [];
      if (!kept.some((earlier) => earlier.table === write.table)) {
        keptWrites.set(connection, [...kept, write]);
        return;
      }
      keptWrites.delete(connection);
      await this.sendAlone(connection, kept, null);
    }
  }

  override async query(connection: object, query: string | QueryObject): Promise<unknown> {
    const kept = keptWrites.get(connection);
    if (!kept) return this.send(connection, asPrepared(query));
    keptWrites.delete(connection);
    const statement: QueryObject = typeof query === 'string' ? { sql: query } : query;
    if (ROLLBACK.test(statement.sql)) return super.query(connection, query);
    if (CARRIER.test(statement.sql) && !kept.some((write) => names(statement.sql, write.table))) {
      return this.send(connection, asPrepared({ ...statement, ...withQueries(kept, statement.sql, statement.bindings ?? []) }, [statement, ...kept]));
    }
    await this.sendAlone(connection, kept, statement.sql);
    return this.send(connection, asPrepared(query));
  }

  /** Sends through Knex's client; a connection one of whose prepared statements went stale is given up (prepared-sql.ts). */
  private async send(connection: object, query: string | QueryObject): Promise<unknown> {
    try {
      return await super.query(connection, query);
    } catch (error) {
      if (isStalePreparedStatement(error)) giveUpConnection(connection, error);
      throw error;
    }
  }

  /**
   * Sends the kept writes on their own, before `next`. If they fail before a `COMMIT`, the
   * transaction is rolled back here: Knex, its `COMMIT` failed, would end the transaction without a
   * `ROLLBACK` and put the connection back in its pool still inside it (aborted, or, after a
   * client-side timeout, open with the writes done). A connection that cannot be rolled back is
   * closed and marked for Knex's pool to destroy instead of lending it again.
   */
  private async sendAlone(connection: object, kept: KeptWrite[], next: string | null): Promise<void> {
    try {
      // Named when every kept write is fixed: the carrier is always the same.
      await this.send(connection, asPrepared({ ...withQueries(kept, 'select 1'), method: 'raw', options: {} }, kept));
    } catch (error) {
      if (next !== null && COMMIT.test(next)) {
        await super.query(connection, 'ROLLBACK').catch((rollbackError: unknown) => {
          // Ended now, so the server undoes the transaction and frees its locks at once, rather than
          // when the pool next looks at the connection.
          const pg = connection as { __knex__disposed?: unknown; end?: () => Promise<void> };
          pg.__knex__disposed = rollbackError;
          pg.end?.().catch(() => undefined);
        });
      }
      throw error;
    }
  }
}

/**
 * The statement as pg sends it: under its prepared name if its text is a fixed statement's, or is
 * made of `parts` that all are (fixed-statements.ts). Knex's PostgreSQL client hands its query
 * object's `options` to pg.
 */
export function asPrepared(
  query: string | QueryObject,
  parts: ReadonlyArray<{ sql: string }> = [],
  names: PreparedNames = preparedNames,
): string | QueryObject {
  if (typeof query === 'string') return query;
  const name = names.of(query.sql) ?? (parts.length > 0 && parts.every((part) => names.of(part.sql) !== undefined) ? names.name(query.sql) : undefined);
  return name === undefined ? query : { ...query, options: { ...query.options, name } };
}

/** `statement` with the kept writes in front of it as `WITH` queries, their bindings first. */
function withQueries(kept: KeptWrite[], statement: string, bindings: readonly unknown[] = []): { sql: string; bindings: unknown[] } {
  return {
    sql: `with ${kept.map((write, i) => `kept_write_${i} as (${write.sql})`).join(', ')} ${statement}`,
    bindings: [...kept.flatMap((write) => write.bindings), ...bindings],
  };
}

/** A pattern per table name, compiled once: checked against every statement a kept write could travel with. */
const tableNamePatterns = new Map<string, RegExp>();

/** Whether the SQL text names the table (quoted as Knex writes it, or bare as hand-written SQL does). */
function names(sql: string, table: string): boolean {
  let pattern = tableNamePatterns.get(table);
  if (!pattern) {
    pattern = new RegExp(`(^|[^\\w$])"?${table}"?($|[^\\w$])`, 'i');
    tableNamePatterns.set(table, pattern);
  }
  return pattern.test(sql);
}
