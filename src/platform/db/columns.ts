/**
 * Every column of `Row`, as a statement names them: `everyColumnOf<Row>()('a', 'b')` does not
 * compile when `Row` has a column the list leaves out, or the list one `Row` lacks. Prepared
 * statements name the columns they answer instead of `*` (docs/persistence.md, "Prepared reads").
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
