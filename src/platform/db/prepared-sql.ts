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

/**
 * Refuses SQL that answers `*`: unqualified after a space or comma, or qualified (`t.*`, `"t".*`),
 * before a comma, `from`, a parenthesis or the end. Written for the service's own SQL: it also
 * refuses `count( * )`, and does not look for a schema-qualified `s.t.*` or `(t).*`.
 */
const ANSWERS_STAR = /(?:(?:^|[\s,])\*|(?:^|[\s,(])(?:\w+|"[^"]+")\.\*)\s*(?:,|\bfrom\b|\)|$)/i;

export function assertNamesItsColumns(sql: string): void {
  if (ANSWERS_STAR.test(sql)) throw new Error(`a prepared statement names the columns it reads, not *: ${sql}`);
}

/**
 * Every column of `Row`, as a statement names them: `everyColumnOf<Row>()('a', 'b')` does not
 * compile when `Row` has a column the list leaves out, or the list one `Row` lacks.
 */
export function everyColumnOf<Row>() {
  return <const Columns extends ReadonlyArray<keyof Row & string>>(
    ...columns: Columns & ([Exclude<keyof Row, Columns[number]>] extends [never] ? unknown : { missing: Exclude<keyof Row, Columns[number]> })
  ): Columns => columns;
}

/** Lists `columns` of the table known as `alias`, for a statement that names the columns it reads. */
export function columnsOf(alias: string, columns: readonly string[]): string {
  return columns.map((column) => `${alias}.${column}`).join(', ');
}

/**
 * Whether PostgreSQL refused a prepared statement that the connection holds: its plan no longer
 * answers the types it was prepared with (0A000 from RevalidateCachedQuery; its message, in case the
 * routine is not reported, in English only), or the statement is gone (26000: pg still thinks it
 * prepared, as after a failed bind).
 */
export function isStalePreparedStatement(error: unknown): boolean {
  const { code, routine, message } = (error ?? {}) as { code?: unknown; routine?: unknown; message?: unknown };
  if (code === '26000') return true;
  return (
    code === '0A000' && (routine === 'RevalidateCachedQuery' || (typeof message === 'string' && message.includes('cached plan must not change result type')))
  );
}

/**
 * Connections are counted in generations: a stale prepared statement means a migration changed the
 * tables under every connection made before it, so every one of them is given up, not only the one
 * that found out (each would otherwise fail a request of its own first).
 */
let generation = 0;
const generationOf = new WeakMap<object, number>();

/** Notes a connection as made now: it prepares its statements against the tables as they are. */
export function noteConnectionMade(connection: object): void {
  generationOf.set(connection, generation);
}

/** Whether the pool may lend the connection again: made since the last stale statement seen. */
export function madeSinceLastStale(connection: object): boolean {
  return (generationOf.get(connection) ?? generation) === generation;
}

/**
 * Gives up the connection, for Knex's pool to close instead of lending it again (its prepared
 * statements with it), and every connection made before it, at their next loan.
 */
export function giveUpConnection(connection: unknown, error: unknown): void {
  (connection as { __knex__disposed?: unknown }).__knex__disposed = error;
  generation++;
}

/** How many stale prepared statements were seen (tests): each began a generation, however many connections it gave up. */
export function staleStatementsSeen(): number {
  return generation;
}
