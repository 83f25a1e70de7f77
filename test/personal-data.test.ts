import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { ERASED_WITH_THE_CREATOR, KEPT_APART_AFTER_ERASURE, NO_CREATOR_DATA, POSTGRES_ONLY_TABLES } from '../src/gdpr/personal-data.ts';
import type { Database } from '../src/platform/db/database.ts';
import { migratedDatabase, testDatabases } from './support/test-databases.ts';

/** Every table of the migrated schema with its columns, from the database's own catalogue. */
async function catalogue(db: Database): Promise<Map<string, string[]>> {
  const tables = new Map<string, string[]>();
  if (db.dialect === 'sqlite') {
    // sqlite_sequence and the like are SQLite's own.
    const names = await db.knex.raw<Array<{ name: string }>>("select name from sqlite_master where type = 'table' and name not like 'sqlite_%'");
    for (const { name } of names) {
      const columns = await db.knex.raw<Array<{ name: string }>>('select name from pragma_table_info(?)', [name]);
      tables.set(
        name,
        columns.map((c) => c.name),
      );
    }
  } else {
    const { rows } = await db.knex.raw<{ rows: Array<{ table_name: string; column_name: string }> }>(
      'select table_name, column_name from information_schema.columns where table_schema = current_schema() order by table_name, ordinal_position',
    );
    for (const row of rows) tables.set(row.table_name, [...(tables.get(row.table_name) ?? []), row.column_name]);
  }
  return tables;
}

const classified = new Map<string, readonly string[]>([
  ...Object.entries(ERASED_WITH_THE_CREATOR).map(([table, { columns }]) => [table, columns] as const),
  ...Object.entries(KEPT_APART_AFTER_ERASURE).map(([table, { columns }]) => [table, columns] as const),
  ...Object.entries(NO_CREATOR_DATA),
]);

/** The tables named in backquotes in one `###` section of docs/data-protection.md. */
function tablesInDocSection(heading: string): string[] {
  const doc = readFileSync(new URL('../docs/data-protection.md', import.meta.url), 'utf8');
  const start = doc.indexOf(`### ${heading}`);
  assert.ok(start >= 0, `docs/data-protection.md has no section "### ${heading}"`);
  const end = doc.indexOf('\n#', start + 1);
  const section = doc.slice(start, end < 0 ? undefined : end);
  return [...section.matchAll(/^\| `([a-z_]+)` \|/gm)].map((m) => m[1]!).sort();
}

for (const factory of testDatabases()) {
  describe(`personal data: every table and column classified on ${factory.name}`, function () {
    this.timeout(30_000);
    const opened = migratedDatabase(factory);

    it('every table and column of the migrated schema is in src/gdpr/personal-data.ts, and nothing there is missing from the schema', async () => {
      const schema = await catalogue(opened.db);
      for (const [table, columns] of schema) {
        const known = classified.get(table);
        assert.ok(known, `table ${table} is in no list of src/gdpr/personal-data.ts: say whether it holds a creator's data and how the erasure covers it`);
        const unknown = columns.filter((c) => !known.includes(c));
        assert.deepEqual(unknown, [], `columns of ${table} in no list of src/gdpr/personal-data.ts`);
        assert.deepEqual(
          known.filter((c) => !columns.includes(c)),
          [],
          `columns of ${table} listed but not in the schema`,
        );
      }
      const absent = [...classified.keys()].filter((t) => !schema.has(t) && !(factory.name === 'sqlite' && POSTGRES_ONLY_TABLES.includes(t)));
      assert.deepEqual(absent, [], 'tables listed but not in the schema');
    });

    it('each table erased with the creator is tied to a verification by a column it has', async () => {
      const schema = await catalogue(opened.db);
      for (const [table, { tiedBy }] of Object.entries(ERASED_WITH_THE_CREATOR)) assert.ok(schema.get(table)?.includes(tiedBy), `${table}.${tiedBy}`);
    });
  });
}

describe('personal data: docs/data-protection.md', () => {
  it('lists exactly the tables that hold a creator’s data, as src/gdpr/personal-data.ts classifies them', () => {
    assert.deepEqual(tablesInDocSection('Tables erased with the creator'), Object.keys(ERASED_WITH_THE_CREATOR).sort());
    assert.deepEqual(tablesInDocSection('Tables kept apart after an erasure'), Object.keys(KEPT_APART_AFTER_ERASURE).sort());
  });
});
