import assert from 'node:assert/strict';
import { migratedDatabase, testDatabases } from '../../../test/support/test-databases.ts';
import type { Database } from './database.ts';

/**
 * Foreign keys whose child columns no index starts with, and why that is fine: deleting a parent
 * row makes both databases look the children up by those columns (SQLite's foreign-key check,
 * PostgreSQL's cascade), which without an index reads the whole child table.
 */
const PARENTS_NEVER_DELETED: Record<string, string> = {
  // No code deletes a lender account: the operator deactivates it (P27).
  lender_accounts: 'deactivated, never deleted',
};

/** Each foreign key as `child(columns) -> parent`. */
async function foreignKeys(db: Database): Promise<Array<{ child: string; columns: string[]; parent: string }>> {
  if (db.dialect === 'sqlite') {
    const tables = await db.knex.raw<Array<{ name: string }>>("select name from sqlite_master where type = 'table' and name not like 'sqlite_%'");
    const keys: Array<{ child: string; columns: string[]; parent: string }> = [];
    for (const { name } of tables) {
      const rows = await db.knex.raw<Array<{ id: number; seq: number; table: string; from: string }>>(`pragma foreign_key_list(${name})`);
      for (const id of new Set(rows.map((r) => r.id))) {
        const columns = rows.filter((r) => r.id === id).sort((a, b) => a.seq - b.seq);
        keys.push({ child: name, columns: columns.map((c) => c.from), parent: columns[0]!.table });
      }
    }
    return keys;
  }
  const { rows } = await db.knex.raw<{ rows: Array<{ child: string; columns: string[]; parent: string }> }>(
    `select c.conrelid::regclass::text as child, c.confrelid::regclass::text as parent,
            array(select a.attname from unnest(c.conkey) with ordinality k(attnum, n)
                  join pg_attribute a on a.attrelid = c.conrelid and a.attnum = k.attnum order by k.n)::text[] as columns
     from pg_constraint c where c.contype = 'f' and c.connamespace = current_schema()::regnamespace`,
  );
  return rows;
}

/** The leading columns of each index of `table` (a primary key or unique constraint counts). */
async function indexPrefixes(db: Database, table: string): Promise<string[][]> {
  if (db.dialect === 'sqlite') {
    const indexes = await db.knex.raw<Array<{ name: string }>>(`pragma index_list(${table})`);
    const prefixes: string[][] = [];
    for (const { name } of indexes) {
      const columns = await db.knex.raw<Array<{ seqno: number; name: string }>>(`pragma index_info(${JSON.stringify(name)})`);
      prefixes.push(columns.sort((a, b) => a.seqno - b.seqno).map((c) => c.name));
    }
    // An integer primary key is the table's rowid, which is its own index.
    const pk = (await db.knex.raw<Array<{ name: string; pk: number; type: string }>>(`pragma table_info(${table})`)).filter((c) => c.pk > 0);
    if (pk.length === 1 && /int/i.test(pk[0]!.type)) prefixes.push([pk[0]!.name]);
    return prefixes;
  }
  const { rows } = await db.knex.raw<{ rows: Array<{ columns: string[] }> }>(
    `select array(select a.attname from unnest(i.indkey) with ordinality k(attnum, n)
                  join pg_attribute a on a.attrelid = i.indrelid and a.attnum = k.attnum order by k.n)::text[] as columns
     from pg_index i where i.indrelid = ?::regclass`,
    [table],
  );
  return rows.map((r) => r.columns);
}

for (const factory of testDatabases()) {
  describe(`foreign keys on ${factory.name}`, function () {
    this.timeout(60_000);
    const migrated = migratedDatabase(factory);

    it('every foreign key whose parent rows are deleted has an index starting with its columns, so a delete never reads a whole child table', async () => {
      const db = migrated.db;
      const keys = await foreignKeys(db);
      assert.ok(keys.length >= 10, `only ${keys.length} foreign keys found: the query does not see them`);
      const unindexed: string[] = [];
      for (const key of keys) {
        if (PARENTS_NEVER_DELETED[key.parent]) continue;
        const prefixes = await indexPrefixes(db, key.child);
        const covered = prefixes.some((prefix) => key.columns.every((column, i) => prefix[i] === column));
        if (!covered) unindexed.push(`${key.child}(${key.columns.join(', ')}) -> ${key.parent}`);
      }
      assert.deepEqual(unindexed, []);
    });
  });
}
