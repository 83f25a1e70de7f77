import { Command, CommanderError, InvalidArgumentError } from 'commander';
import { AccountsRepository } from '../accounts/accounts-repository.ts';
import * as admin from '../accounts/lender-admin.ts';
import { DashboardRepository } from '../dashboard/dashboard-repository.ts';
import { compactCreatorData } from '../gdpr/compaction.ts';
import { GdprRepository } from '../gdpr/gdpr-repository.ts';
import { StorageRepository } from '../gdpr/storage-repository.ts';
import { ConfigError, loadConfig } from '../platform/config.ts';
import { openDatabase, postgresMigrator, type Database } from '../platform/db/database.ts';
import { adminContext, resolveEncryptionKey } from './admin-context.ts';
import { SigningKeysRepository } from '../signing/signing-keys-repository.ts';
import { SigningKeyError } from '../signing/tape-signer.ts';
import { integer, print, withJson, type OutputOptions, type RunCommand } from './cli-support.ts';
import { addAccountCommands } from './account-commands.ts';
import { addSigningKeyCommands } from './signing-key-commands.ts';
import { addDashboardUserCommands } from './dashboard-user-commands.ts';

/**
 * The operator CLI of D23: `npm run admin -- <command>`. It uses the server's DATABASE_URL (and
 * SERVICE_MODE, which decides whether keys are sandbox `civ_test_` or production `civ_live_` keys)
 * and applies pending migrations first, so it works on a database the server never opened.
 */

function parseAssignments(pairs: string[]): Record<string, unknown> {
  return Object.fromEntries(
    pairs.map((pair) => {
      const at = pair.indexOf('=');
      if (at <= 0) throw new InvalidArgumentError(`"${pair}" is not key=value`);
      const raw = pair.slice(at + 1);
      // Numbers and booleans are read as such so thresholds keep their types; anything else stays text.
      const value = /^-?\d+(\.\d+)?$/.test(raw) ? Number(raw) : raw === 'true' ? true : raw === 'false' ? false : raw;
      return [pair.slice(0, at), value];
    }),
  );
}

export type { CliContext } from './cli-support.ts';

export function buildCli(run: RunCommand): Command {
  const program = new Command('admin')
    .description('Operator commands for lender accounts, API keys, plans, policies and IP allowlists.')
    .exitOverride()
    .showHelpAfterError();
  const json = withJson;

  const lender = program.command('lender').description('lender accounts');
  json(lender.command('create').description('create a lender account'))
    .requiredOption('--name <name>', 'account name, shown to creators by default')
    .option('--plan <plan>', 'pilot or production', 'pilot')
    .option('--jurisdiction <jurisdiction>', 'eu_gdpr, uk_gdpr, difc or other', 'eu_gdpr')
    .action(async (options: OutputOptions & { name: string; plan: string; jurisdiction: string }) => {
      const account = await run((ctx) => admin.createLender(ctx, options));
      print(options, account, () => [`Created lender ${account.id} (${account.name}, plan ${account.plan}, ${account.jurisdiction})`]);
    });
  json(lender.command('list').description('list lender accounts')).action(async (options: OutputOptions) => {
    const accounts = await run((ctx) => ctx.accounts.listLenders());
    print(options, accounts, () =>
      accounts.length === 0
        ? ['No lender accounts.']
        : accounts.map(
            (a) => `${a.id}  ${a.plan.padEnd(10)} ${a.jurisdiction.padEnd(8)} ${a.name}${a.deactivatedAt ? `  (deactivated ${a.deactivatedAt})` : ''}`,
          ),
    );
  });
  json(lender.command('set').description('change plan, jurisdiction, rate limit, IP allowlist or return origins'))
    .requiredOption('--id <lenderId>', 'lender account id')
    .option('--plan <plan>', 'pilot or production')
    .option('--jurisdiction <jurisdiction>', 'eu_gdpr, uk_gdpr, difc or other')
    .option('--rate-limit <perMinute>', "requests per minute for the account's keys", integer('--rate-limit'))
    .option('--burst <perSecond>', 'requests per second', integer('--burst'))
    .option('--allowlist <cidrs>', 'comma-separated CIDR ranges; empty string allows all', (v: string) => v.split(','))
    .option(
      '--return-origins <origins>',
      "comma-separated origins (https://app.example) a verification's return_url may lead to; empty string allows none",
      (v: string) => v.split(','),
    )
    .action(
      async (
        options: OutputOptions & {
          id: string;
          plan?: string;
          jurisdiction?: string;
          rateLimit?: number;
          burst?: number;
          allowlist?: string[];
          returnOrigins?: string[];
        },
      ) => {
        const account = await run((ctx) => admin.updateLender(ctx, options));
        print(options, account, () => [
          `Updated lender ${account.id}: plan ${account.plan}, jurisdiction ${account.jurisdiction}, rate limit ${account.rateLimitPerMinute ?? 'plan default'}/min burst ${account.rateLimitBurst ?? 'plan default'}/s, allowlist ${account.ipAllowlist.join(',') || '(all addresses)'}, return origins ${account.returnOrigins.join(',') || '(none)'}`,
        ]);
      },
    );
  json(lender.command('policy').description('set eligibility threshold overrides for one product type'))
    .requiredOption('--id <lenderId>', 'lender account id')
    .requiredOption('--product-type <type>', 'rbf, term_loan, securitization_pool, revenue_loan, venture_debt, murabaha or hpp')
    .requiredOption('--set <assignments...>', 'key=value pairs')
    .action(async (options: OutputOptions & { id: string; productType: string; set: string[] }) => {
      const policy = await run((ctx) => admin.setPolicy(ctx, { id: options.id, productType: options.productType, overrides: parseAssignments(options.set) }));
      print(options, { lender_id: options.id, product_type: options.productType, overrides: policy }, () => [
        `Policy for ${options.id} / ${options.productType}: ${JSON.stringify(policy)}`,
      ]);
    });

  const key = program.command('key').description('API keys');
  json(key.command('create').description('issue an API key (shown once)'))
    .requiredOption('--lender <lenderId>', 'lender account id')
    .requiredOption('--role <role>', 'lender or gdpr_admin')
    .action(async (options: OutputOptions & { lender: string; role: string }) => {
      const { apiKey, record } = await run((ctx) => admin.createKey(ctx, { lenderId: options.lender, role: options.role }));
      print(options, { ...record, api_key: apiKey }, () => [
        `Created ${record.role} key ${record.id} for ${record.lenderId}.`,
        `API key (shown once, store it now): ${apiKey}`,
      ]);
    });
  json(key.command('list').description("list a lender's keys (never the keys themselves)"))
    .requiredOption('--lender <lenderId>', 'lender account id')
    .action(async (options: OutputOptions & { lender: string }) => {
      const keys = await run((ctx) => admin.listKeys(ctx, options.lender));
      print(options, keys, () =>
        keys.length === 0
          ? ['No keys.']
          : keys.map((k) => `${k.id}  ${k.role.padEnd(10)} ${k.keyPrefix}…  ${k.revokedAt ? `revoked ${k.revokedAt}` : 'active'}`),
      );
    });
  json(key.command('limit').description('give one key its own rate limit (D8)'))
    .requiredOption('--key-id <keyId>', 'key id (key_...)')
    .requiredOption('--rate-limit <perMinute>', 'requests per minute', integer('--rate-limit'))
    .requiredOption('--burst <perSecond>', 'requests per second', integer('--burst'))
    .action(async (options: OutputOptions & { keyId: string; rateLimit: number; burst: number }) => {
      const limit = await run((ctx) => admin.setKeyRateLimit(ctx, options));
      print(options, { key_id: options.keyId, ...limit }, () => [`Key ${options.keyId}: ${limit.perMinute} requests/min, burst ${limit.burst}/s.`]);
    });
  json(key.command('revoke').description('revoke a key; effective on its next request'))
    .requiredOption('--key-id <keyId>', 'key id (key_...)')
    .action(async (options: OutputOptions & { keyId: string }) => {
      const record = await run((ctx) => admin.revokeKey(ctx, options.keyId));
      print(options, record, () => [`Key ${record.id} revoked at ${record.revokedAt}.`]);
    });
  const gdpr = program.command('gdpr').description('data-protection requests');
  json(gdpr.command('audit').description('list data-protection requests (access, export, erasure): who, when, counts, receipt; never the creator'))
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
  json(
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
  addSigningKeyCommands(program, run);
  addAccountCommands(program, run);
  addDashboardUserCommands(program, run, print);
  return program;
}

async function main(argv: string[]): Promise<number> {
  let db: Database | undefined;
  let unbounded: ReturnType<typeof postgresMigrator> | undefined;
  const run: RunCommand = async (work) => {
    const config = loadConfig();
    db = openDatabase(config.databaseUrl);
    await db.migrate();
    const opened = db;
    const accounts = new AccountsRepository(db.knex);
    return work({
      ...adminContext(config, accounts),
      gdprAudit: new GdprRepository(db.knex),
      get storage() {
        unbounded ??= opened.dialect === 'postgres' ? postgresMigrator(config.databaseUrl) : undefined;
        return new StorageRepository(unbounded ?? opened.knex, opened.dialect);
      },
      signingKeys: new SigningKeysRepository(db.knex),
      encryptionKey: () => resolveEncryptionKey(config, accounts),
      dashboardUsers: { users: new DashboardRepository(db.knex), accounts, now: () => new Date() },
    });
  };
  try {
    await buildCli(run).parseAsync(argv, { from: 'user' });
    return 0;
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : 2;
    if (error instanceof admin.AdminError || error instanceof SigningKeyError || error instanceof ConfigError || error instanceof InvalidArgumentError) {
      console.error(`error: ${error.message}`);
      return 2;
    }
    throw error;
  } finally {
    await unbounded?.destroy();
    await db?.close();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error) => {
    console.error(`error: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  },
);
