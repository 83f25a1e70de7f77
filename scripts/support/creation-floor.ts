// A creation's floor on this stack: bare Express 5 and the raw driver (better-sqlite3 or pg), with
// no validation, no idempotency, no scoring, writing in one transaction the rows a creation of the
// synthetic creator writes, with the same schema and indexes. The rows are those of one creation the
// service made (`SAMPLE_VERIFICATION` in `DATABASE_URL`): every row of every table with a
// `verification_id` column, and the verification's own row, each written again per request under a
// new verification id (and new ids where a column must be unique). `npm run bench:api` loads it
// beside the service's creation and prints the service's creations as a share of it.
import { randomBytes, randomUUID } from 'node:crypto';
import BetterSqlite3 from 'better-sqlite3';
import express from 'express';
import pg from 'pg';

type Row = Record<string, unknown>;
interface TableRows {
  table: string;
  columns: string[];
  rows: Row[];
}

const databaseUrl = process.env.DATABASE_URL!;
const sample = process.env.SAMPLE_VERIFICATION!;
const sqlite = databaseUrl.startsWith('sqlite:');

/** Columns whose values must differ per creation: ids of the rows themselves and unique hashes. */
const FRESH_COLUMNS = new Set(['id', 'event_id', 'consent_token_hash', 'idempotency_key']);

async function sampleRows(
  query: (sql: string, values: unknown[]) => Promise<Row[]>,
  tables: string[],
  columnsOf: (table: string) => Promise<string[]>,
): Promise<TableRows[]> {
  const found: TableRows[] = [];
  for (const table of tables) {
    const columns = await columnsOf(table);
    const key = table === 'verifications' ? 'id' : columns.includes('verification_id') ? 'verification_id' : null;
    if (!key) continue;
    const rows = await query(`select * from "${table}" where "${key}" = ${sqlite ? '?' : '$1'}`, [sample]);
    // Identity columns the database numbers itself are left to it.
    const written = columns.filter((column) => !(typeof rows[0]?.[column] === 'number' && (column === 'id' || column === 'sequence')));
    if (rows.length > 0) found.push({ table, columns: written, rows });
  }
  // The verification first: the other rows refer to it.
  return found.sort((a, b) => (a.table === 'verifications' ? -1 : b.table === 'verifications' ? 1 : 0));
}

/** The sample's rows as a new creation's: its verification id, and fresh values where they must be unique. */
function rowsFor(sampled: TableRows[], verificationId: string): Array<{ table: string; columns: string[]; values: unknown[] }> {
  return sampled.flatMap(({ table, columns, rows }) =>
    rows.map((row) => ({
      table,
      columns,
      values: columns.map((column) => {
        const value = row[column];
        if (value === sample) return verificationId;
        // Fresh, and as long as the sampled value (the columns' types bound their length).
        if (FRESH_COLUMNS.has(column) && typeof value === 'string') return randomBytes(value.length).toString('hex').slice(0, value.length);
        return value;
      }),
    })),
  );
}

const insertSql = (table: string, columns: string[], numbered: boolean) =>
  `insert into "${table}" (${columns.map((c) => `"${c}"`).join(', ')}) values (${columns.map((_, i) => (numbered ? `$${i + 1}` : '?')).join(', ')})`;

async function main(): Promise<void> {
  let write: (verificationId: string) => Promise<void>;
  if (sqlite) {
    const db = new BetterSqlite3(databaseUrl.slice('sqlite:'.length));
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.pragma('foreign_keys = ON');
    db.pragma('busy_timeout = 5000');
    const tables = (db.prepare("select name from sqlite_master where type = 'table' and name not like 'sqlite_%'").all() as Array<{ name: string }>).map(
      (r) => r.name,
    );
    const sampled = await sampleRows(
      async (sql, values) => db.prepare(sql).all(...values) as Row[],
      tables,
      async (table) => (db.pragma(`table_info("${table}")`) as Array<{ name: string }>).map((c) => c.name),
    );
    const statements = new Map(sampled.map(({ table, columns }) => [table, db.prepare(insertSql(table, columns, false))]));
    const creation = db.transaction((verificationId: string) => {
      for (const { table, values } of rowsFor(sampled, verificationId)) statements.get(table)!.run(...values);
    });
    write = async (verificationId) => creation(verificationId);
  } else {
    const pool = new pg.Pool({ connectionString: databaseUrl, max: 10 });
    const tables = (
      await pool.query("select table_name as name from information_schema.tables where table_schema = current_schema() and table_type = 'BASE TABLE'")
    ).rows.map((r: { name: string }) => r.name);
    const sampled = await sampleRows(
      async (sql, values) => (await pool.query(sql, values)).rows as Row[],
      tables,
      async (table) =>
        (
          await pool.query('select column_name as name from information_schema.columns where table_schema = current_schema() and table_name = $1', [table])
        ).rows.map((r: { name: string }) => r.name),
    );
    write = async (verificationId) => {
      const client = await pool.connect();
      try {
        await client.query('begin');
        for (const { table, columns, values } of rowsFor(sampled, verificationId)) {
          await client.query({ name: `floor_${table}_${columns.length}`, text: insertSql(table, columns, true), values });
        }
        await client.query('commit');
      } catch (error) {
        await client.query('rollback');
        throw error;
      } finally {
        client.release();
      }
    };
  }
  const app = express();
  app.use(express.json());
  app.get('/hello', (_req, res) => void res.json({ hello: 'world' }));
  app.post('/verifications', async (req, res) => {
    const id = `vrf_${randomUUID().replaceAll('-', '').slice(0, 22)}`;
    await write(id);
    res
      .status(201)
      .location(`/verifications/${id}`)
      .json({ verification_id: id, obligor_reference: (req.body as { obligor_reference?: string }).obligor_reference });
  });
  app.listen(Number(process.env.PORT), '127.0.0.1');
}

await main();
