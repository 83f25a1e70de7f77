import type { Command } from 'commander';
import { compactCreatorData } from '../gdpr/compaction.ts';
import { integer, print, withJson, type OutputOptions, type RunCommand } from './cli-support.ts';

/** `gdpr audit | compact`: the data-protection requests' audit trail, and erased rows' bytes removed from the files. */
export function addGdprCommands(program: Command, run: RunCommand): void {
  const gdpr = program.command('gdpr').description('data-protection requests');
  withJson(gdpr.command('audit').description('list data-protection requests (access, export, erasure): who, when, counts, receipt; never the creator'))
    .option('--lender <lenderId>', 'only this lender account')
    .option('--limit <n>', 'newest first, at most this many', integer('--limit'), 100)
    .action(async (options: OutputOptions & { lender?: string; limit: number }) => {
      const entries = await run((ctx) => ctx.gdprAudit.list(options.lender, options.limit));
      print(options, entries, () =>
        entries.length === 0
          ? ['No data-protection requests.']
          : entries.map(
              (e) =>
                `${e.at}  ${e.operation.padEnd(7)} ${e.lenderId}  key ${e.keyId}  by ${e.identifierKinds.join('+')}  ${Object.entries(e.counts)
                  .map(([k, v]) => `${k}=${v}`)
                  .join(' ')}${e.receiptId ? `  receipt ${e.receiptId}` : ''}`,
            ),
      );
    });
  withJson(
    gdpr
      .command('compact')
      .description(
        "rewrite the tables that hold creators' data, so that erased rows' bytes leave the database files (PostgreSQL: VACUUM FULL, each table locked while it is rewritten; SQLite: VACUUM and the WAL cut)",
      ),
  ).action(async (options: OutputOptions) => {
    const done = await run((ctx) => compactCreatorData(ctx.storage));
    print(options, done, () => [
      ...done.tables.map((t) => `${t.table === '*' ? 'database file' : t.table}: rewritten, locked ${t.ms} ms`),
      `Compacted in ${done.totalMs} ms; the longest lock was ${done.longestLockMs} ms.`,
    ]);
  });
}
