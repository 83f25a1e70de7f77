import type { Knex } from 'knex';

/**
 * A statement of the creation path, written out once with `?` placeholders and double-quoted
 * identifiers (both dialects read them), and run through Knex's `raw`. On PostgreSQL it goes with
 * pg's public `name` option (Knex's `.options()`), so each connection parses and plans it once
 * instead of on every creation. It names the columns it answers, never `*`, so that a migration
 * adding a column cannot make it stale (docs/persistence.md, "Named statements"). Every one is
 * made with `namedStatement` and so listed in `namedStatementsMade`, which a test compares with
 * the table in docs/persistence.md.
 */
export interface NamedStatement {
  readonly name: string;
  readonly sql: string;
}

export const namedStatementsMade = new Map<string, NamedStatement>();

export function namedStatement(name: string, sql: string): NamedStatement {
  const made = namedStatementsMade.get(name);
  if (made && made.sql !== sql) throw new Error(`two named statements are called ${name}`);
  const statement = { name, sql };
  namedStatementsMade.set(name, statement);
  return statement;
}

/** A bound value; an array only in a PostgreSQL statement (pg sends it as an array). */
export type Binding = string | number | null | string[] | number[];

/**
 * Runs the statement in `trx` and answers its rows (a `select`, or a write's `returning`; none for
 * a write without it). Its error is Knex's, raised here, at this statement: it names the statement,
 * and on PostgreSQL the table and constraint (`error.table`, `error.constraint`).
 */
export async function runNamed<Row>(trx: Knex | Knex.Transaction, statement: NamedStatement, bindings: readonly Binding[]): Promise<Row[]> {
  const raw = trx.raw(statement.sql, [...bindings]);
  const result: unknown = await ((trx.client as Knex.Client).config.client === 'pg' ? raw.options({ name: statement.name }) : raw);
  if (Array.isArray(result)) return result as Row[];
  const rows = (result as { rows?: unknown } | undefined)?.rows;
  return Array.isArray(rows) ? (rows as Row[]) : [];
}
