import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import BetterSqlite3 from 'better-sqlite3';
import { lockOut, walFileWithOneRow } from '../../../test/support/sqlite-files.ts';
import { hotStatement, sqliteHotStatements, type HotStatements } from './hot-statements.ts';

describe('hot reads on SQLite', function () {
  this.timeout(20_000);
  let dir: string;
  let file: string;
  let hot: HotStatements;
  let errorsCounted: string[];
  const count = hotStatement('test_count_rows', 'select count(*) as n from t where a >= ?');

  const openHot = (busyTimeoutMs: number) =>
    sqliteHotStatements(file, busyTimeoutMs, (error) => {
      errorsCounted.push(String(error));
      return 'other';
    });

  beforeEach(() => {
    ({ dir, file } = walFileWithOneRow('civ-hot-'));
    errorsCounted = [];
    hot = openHot(5000);
  });
  afterEach(async () => {
    await hot.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('reads what the writer committed, with its parameters', async () => {
    assert.deepEqual(await hot.rows(count, [1]), [{ n: 1 }]);
    const writer = new BetterSqlite3(file);
    writer.exec('insert into t values (2)');
    writer.close();
    assert.deepEqual(await hot.rows(count, [2]), [{ n: 1 }]);
    assert.deepEqual(await hot.rows(count, [0]), [{ n: 2 }]);
  });

  it('answers the rows the driver would: every column by name, in order, a name given twice with its last value', async () => {
    const setup = new BetterSqlite3(file);
    setup.exec("create table u (a integer, b text); insert into u values (1, 'x'), (2, null), (3, 'z')");
    const sql = 'select t.a, u.b, u.a as a, u.a * 10 as ten, null as absent from t join u on u.a >= t.a where u.a >= ? order by u.a';
    const expected = setup.prepare(sql).all(2);
    setup.close();
    assert.equal(expected.length, 2);
    const rows = await hot.rows<Record<string, unknown>>(hotStatement('test_joined_rows', sql), [2]);
    assert.deepEqual(rows, expected);
    assert.deepEqual(
      rows.map((row) => Object.keys(row)),
      [
        ['a', 'b', 'ten', 'absent'],
        ['a', 'b', 'ten', 'absent'],
      ],
    );
    assert.deepEqual(rows[0], { a: 2, b: null, ten: 20, absent: null });
  });

  it('a read still locked out after the busy timeout fails with SQLITE_BUSY, counted', async () => {
    const impatient = openHot(200);
    const holder = lockOut(file);
    try {
      await assert.rejects(impatient.rows(count, [0]), (error: { code?: string }) => error.code === 'SQLITE_BUSY');
      assert.equal(errorsCounted.length, 1);
    } finally {
      holder.close();
      await impatient.close();
    }
  });

  it('after close, a read fails as a closed pool does', async () => {
    await hot.close();
    await assert.rejects(hot.rows(count, [0]), /closed/);
  });
});
