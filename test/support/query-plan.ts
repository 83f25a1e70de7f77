import assert from 'node:assert/strict';
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

/**
 * Asserts that a plan reads `table` through an index whose name matches `index`, never the whole
 * table; `inOrder` also forbids a sort (a page read in the index's order).
 */
export function assertReadsIndex(plan: string, dialect: string, table: string, index: string, { inOrder }: { inOrder: boolean }): void {
  if (dialect === 'sqlite') {
    assert.match(plan, new RegExp(`SEARCH ${table} USING (COVERING )?INDEX ${index}`), plan);
    assert.doesNotMatch(plan, new RegExp(`SCAN ${table}\\b`), plan);
    if (inOrder) assert.doesNotMatch(plan, /TEMP B-TREE/, plan);
  } else {
    assert.match(plan, new RegExp(`Index (Only )?Scan( Backward)? using ${index}\\w* on ${table}\\b`), plan);
    assert.doesNotMatch(plan, /Seq Scan|Bitmap/, plan);
    if (inOrder) assert.doesNotMatch(plan, /Sort/, plan);
  }
}
