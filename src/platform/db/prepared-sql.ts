/**
 * Rules for SQL kept prepared per connection: on PostgreSQL the hot reads (hot-statements.ts) and
 * the fixed statements (fixed-statements.ts), parsed and planned once per connection.
 *
 * PostgreSQL fails a prepared statement on every later run once what it answers no longer has the
 * type it was prepared with ("cached plan must not change result type"): a `select *` (or `t.*`, or
 * `returning *`) after a migration adds a column, and any statement after one changes the type of a
 * column it answers (a longer varchar). In a rolling deploy the processes still running would fail
 * every such statement. So a prepared statement names the columns it answers (checked when it is
 * made, conservatively: a `*` inside `exists (...)` is refused too), and a connection whose prepared
 * statement has gone stale is given up (`isStalePreparedStatement`), so that the next statement
 * prepares it again on a new one.
 */

/** Refuses SQL that answers `*`: unqualified after a space or comma, or qualified (`t.*`, `"t".*`). */
const ANSWERS_STAR = /(?:(?:^|[\s,])\*|(?:^|[\s,(])(?:\w+|"[^"]+")\.\*)\s*(?:,|\bfrom\b|\)|$)/i;

export function assertNamesItsColumns(sql: string): void {
  if (ANSWERS_STAR.test(sql)) throw new Error(`a prepared statement names the columns it reads, not *: ${sql}`);
}

/** Lists `columns` of the table known as `alias`, for a statement that names the columns it reads. */
export function columnsOf(alias: string, columns: readonly string[]): string {
  return columns.map((column) => `${alias}.${column}`).join(', ');
}

/**
 * Whether PostgreSQL refused a prepared statement that the connection holds: its plan no longer
 * answers the types it was prepared with (0A000, that message), or the statement is gone (26000: pg
 * still thinks it prepared, as after a failed bind).
 */
export function isStalePreparedStatement(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  return code === '26000' || (code === '0A000' && typeof message === 'string' && message.includes('cached plan must not change result type'));
}

/** Marks a pg connection for Knex's pool to close instead of lending it again (its prepared statements with it). */
export function giveUpConnection(connection: unknown, error: unknown): void {
  (connection as { __knex__disposed?: unknown }).__knex__disposed = error;
}
