import type { Knex } from 'knex';
import { createHash } from 'node:crypto';
import { assertNamesItsColumns } from './prepared-sql.ts';

/**
 * A statement that every creation runs in its transaction, its SQL written out once, with `?`
 * placeholders and identifiers in double quotes (both dialects read them). Knex's query builder
 * compiled each of a creation's dozen statements again on every request: under creation load its
 * compiler took about a tenth of the main thread's busy time, and its builders added to the garbage
 * collector's (docs/performance.md). A fixed statement still runs through the transaction's Knex
 * client, so everything a statement gets there it keeps: the transaction's own connection and its
 * check that the transaction has not ended, the SQLite writer's turns, group commit and waits for
 * locks, the PostgreSQL writes kept for the next statement, the `query` and `query-error` events
 * (metrics) and errors that name the statement. What Knex's runner adds around the client it does
 * not get, and the service uses none of it: the `query-response` event, `postProcessResponse` and
 * `wrapIdentifier` (a fixed statement's SQL is final), and a per-query `.timeout()` (PostgreSQL's
 * statement and query timeouts are the connection's, and still apply).
 *
 * The SQL carries no literal text: every value is a binding (its whitespace is folded to one line).
 */
export interface FixedStatement {
  readonly sql: string;
  /** The table a write without `returning` changes: such a write may be kept for the next statement (writes-with-next-statement.ts). */
  readonly writes: string | null;
}

/** The table a write names first, quoted as Knex's builder and fixed statements write it; undefined for anything else. */
export function writtenTable(sql: string): string | undefined {
  return /^(?:insert into|update|delete from) "([^"]+)"/.exec(sql)?.[1];
}

/**
 * The names PostgreSQL keeps fixed texts prepared under. On PostgreSQL a fixed statement is sent as a
 * named prepared statement (writes-with-next-statement.ts), which each connection parses and plans
 * once, instead of on every creation: under creation load PostgreSQL's own CPU per creation fell
 * from 1.71-1.82 to 1.17-1.28 ms (docs/performance.md, "Fixed statements prepared on PostgreSQL"). A text
 * made only of fixed statements (kept writes, in front of the statement that carries them or sent
 * alone) is named too. A name is made from the text's hash, so it means the same SQL in every
 * process and release (it names the statement's spans in traces, too).
 *
 * A connection keeps every statement it prepared until it closes, so what is named is bounded: a
 * text of more than MOST_VALUES values (a bulk insert, rare, each as large as its rows) is sent
 * unnamed, and names stop at `most` texts; after that, later texts are sent unnamed, as before.
 */
export class PreparedNames {
  private readonly names = new Map<string, string>();

  constructor(private readonly most: number) {}

  /** Every named text, in the order named. */
  texts(): string[] {
    return [...this.names.keys()];
  }

  /** The name `sql` is prepared under; undefined if it was never named. */
  of(sql: string): string | undefined {
    return this.names.get(sql);
  }

  /** Names `sql` (once: the same text keeps its name); undefined for a bulk write, or once `most` texts have names. */
  name(sql: string): string | undefined {
    let name = this.names.get(sql);
    if (name === undefined && this.names.size < this.most && valuesIn(sql) <= MOST_VALUES) {
      name = `civ_${createHash('sha256').update(sql).digest('hex').slice(0, 24)}`;
      this.names.set(sql, name);
    }
    return name;
  }
}

/** The most values a named text binds: a creation's largest statement binds about 60. */
const MOST_VALUES = 100;

const valuesIn = (sql: string): number => sql.split('?').length - 1;

/** The process's prepared names: fixed statements number a few dozen, their carried combinations more. */
export const preparedNames = new PreparedNames(500);

export function fixedStatement(sql: string): FixedStatement {
  const text = sql.replace(/\s+/g, ' ').trim();
  assertNamesItsColumns(text);
  preparedNames.name(text);
  return { sql: text, writes: /\breturning\b/i.test(text) ? null : (writtenTable(text) ?? null) };
}

/** Knex's client of a transaction, as fixed statements use it (untyped in Knex's declarations). */
interface TransactionClient {
  acquireConnection(): Promise<object>;
  query(connection: object, query: { sql: string; bindings: unknown[]; method: 'raw' }): Promise<{ response?: unknown }>;
}

export type Binding = string | number | null;

/**
 * Runs the statement in the transaction, and answers its rows (a `select`, or a write's `returning`;
 * none for a write without it). The rows are each driver's own: better-sqlite3's and node-sqlite3's
 * arrays, pg's `rows`.
 */
export async function runFixed<Row>(trx: Knex.Transaction, statement: FixedStatement, bindings: Binding[]): Promise<Row[]> {
  // Outside a transaction the connection would be taken from the pool and never given back.
  if (!trx.isTransaction) throw new Error('a fixed statement runs in a transaction');
  const client = trx.client as unknown as TransactionClient;
  const { response } = await client.query(await client.acquireConnection(), { sql: statement.sql, bindings, method: 'raw' });
  if (Array.isArray(response)) return response as Row[];
  const rows = (response as { rows?: unknown } | undefined)?.rows;
  return Array.isArray(rows) ? (rows as Row[]) : [];
}

/**
 * An insert of `count` rows of `columns` (`values (?, ?), (?, ?)`, its bindings row after row)
 * followed by `rest` (an `on conflict` clause, `returning`), for writes whose number of rows varies:
 * one statement per number of rows, made once.
 */
export function fixedInsertOf(table: string, columns: readonly string[], rest = ''): (count: number) => FixedStatement {
  const made: FixedStatement[] = [];
  const row = `(${columns.map(() => '?').join(', ')})`;
  const head = `insert into "${table}" (${columns.map((column) => `"${column}"`).join(', ')}) values`;
  return (count) => {
    if (!(count >= 1)) throw new Error(`an insert into ${table} takes at least one row, not ${count}`);
    return (made[count] ??= fixedStatement(`${head} ${new Array<string>(count).fill(row).join(', ')} ${rest}`));
  };
}
