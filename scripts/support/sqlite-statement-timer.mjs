// Preloaded into the server by `npm run profile:api -- <endpoint> --sqlite-statements` (node --import):
// times every statement better-sqlite3 runs, on the thread that runs it, by SQL text, and writes the
// table as JSON to SQLITE_STATEMENT_TIMES when the process exits. The driver is synchronous, so
// this is the time each statement holds the event loop: SQLite's own work, reading and writing
// pages, and any fsync it waits for (wall time, where a CPU profile counts samples). Statements
// from start-up (migrations) are counted too: a few milliseconds.
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const Database = createRequire(new URL('../../package.json', import.meta.url))('better-sqlite3');
const out = process.env.SQLITE_STATEMENT_TIMES;
if (!out) throw new Error('SQLITE_STATEMENT_TIMES names the file the times are written to');

/** SQL text (one line) → [runs, nanoseconds]. */
const times = new Map();
const note = (sql, spent) => {
  const text = sql.replace(/\s+/g, ' ').trim();
  const entry = times.get(text);
  if (entry) {
    entry[0]++;
    entry[1] += spent;
  } else times.set(text, [1, spent]);
};

const scratch = new Database(':memory:');
const Statement = Object.getPrototypeOf(scratch.prepare('select 1'));
scratch.close();
for (const method of ['run', 'get', 'all', 'iterate']) {
  const original = Statement[method];
  Statement[method] = function timed(...args) {
    const started = process.hrtime.bigint();
    try {
      return original.apply(this, args);
    } finally {
      // The clock first: reading the SQL text makes a string, which is no part of the statement.
      const spent = process.hrtime.bigint() - started;
      note(this.source, spent);
    }
  };
}
const exec = Database.prototype.exec;
Database.prototype.exec = function timedExec(sql) {
  const started = process.hrtime.bigint();
  try {
    return exec.call(this, sql);
  } finally {
    note(sql, process.hrtime.bigint() - started);
  }
};

process.on('exit', () => {
  writeFileSync(out, JSON.stringify([...times].map(([sql, [runs, ns]]) => ({ sql, runs, ns: Number(ns) }))));
});
