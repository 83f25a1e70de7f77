import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase, type Database } from './database.ts';

/** SQLite's temporary files this process holds open (unlinked at once, so only its descriptors show them). */
function openSqliteTempFiles(): string[] {
  const targets: string[] = [];
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      targets.push(readlinkSync(`/proc/self/fd/${fd}`));
    } catch {
      // Closed while listed.
    }
  }
  return targets.filter((target) => target.includes('etilqs_'));
}

describe('the SQLite writer’s temporary storage', function () {
  this.timeout(20_000);
  let dir: string;
  let database: Database;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'civ-temp-store-'));
    database = openDatabase(`sqlite:${join(dir, 'db.sqlite')}`);
    await database.knex.schema.createTable('t', (table) => {
      table.integer('id').primary();
      table.text('v');
    });
    await database.knex('t').insert(Array.from({ length: 200 }, (_, id) => ({ id, v: 'a'.repeat(1000) })));
  });
  afterEach(async () => {
    await database.close();
    rmSync(dir, { recursive: true, force: true });
  });

  (process.platform === 'linux' ? it : it.skip)('keeps a transaction’s savepoint journal in memory, past 64 KiB of changed pages', async () => {
    const during = await database.knex.transaction(async (trx) => {
      // About 50 pages changed in the transaction's savepoint, 200 KiB of originals to keep.
      await trx('t').update({ v: 'b'.repeat(1000) });
      return openSqliteTempFiles();
    });
    assert.deepEqual(during, []);
    assert.equal(
      Number(
        (
          await database
            .knex('t')
            .where({ v: 'b'.repeat(1000) })
            .count({ n: '*' })
            .first()
        )?.n,
      ),
      200,
    );
  });
});
