import type { Knex } from 'knex';

/**
 * EXPLAIN of a query. PostgreSQL would rightly read a table of a few rows whole; with sequential
 * scans and sorts priced out, the plan shows whether an index can serve the query in its order.
 */
export async function planOf(knex: Knex, dialect: string, sql: string, bindings: readonly unknown[]): Promise<string> {
  if (dialect === 'sqlite') {
    const rows = await knex.raw<Array<{ detail: string }>>(`explain query plan ${sql}`, bindings as Knex.RawBinding[]);
    return rows.map((r) => r.detail).join('\n');
  }
  return knex.transaction(async (trx) => {
    await trx.raw('set local enable_seqscan = off');
    await trx.raw('set local enable_sort = off');
    await trx.raw('set local enable_bitmapscan = off');
    const result = await trx.raw<{ rows: Array<{ 'QUERY PLAN': string }> }>(`explain ${sql}`, bindings as Knex.RawBinding[]);
    return result.rows.map((r) => r['QUERY PLAN']).join('\n');
  });
}
