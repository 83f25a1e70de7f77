import { Command, CommanderError, InvalidArgumentError } from 'commander';
import { AccountsRepository } from '../accounts/accounts-repository.ts';
import * as admin from '../accounts/lender-admin.ts';
import { DashboardRepository } from '../dashboard/dashboard-repository.ts';
import { GdprRepository } from '../gdpr/gdpr-repository.ts';
import { StorageRepository } from '../gdpr/storage-repository.ts';
import { ConfigError, loadConfig } from '../platform/config.ts';
import { openDatabase, postgresMigrator, type Database } from '../platform/db/database.ts';
import { adminContext, resolveEncryptionKey } from './admin-context.ts';
import { SigningKeysRepository } from '../signing/signing-keys-repository.ts';
import { SigningKeyError } from '../signing/tape-signer.ts';
import { print, type RunCommand } from './cli-support.ts';
import { addAccountCommands } from './account-commands.ts';
import { addGdprCommands } from './gdpr-commands.ts';
import { addKeyCommands } from './key-commands.ts';
import { addLenderCommands } from './lender-commands.ts';
import { addSigningKeyCommands } from './signing-key-commands.ts';
import { addDashboardUserCommands } from './dashboard-user-commands.ts';

/**
 * The operator CLI of D23: `npm run admin -- <command>`. It uses the server's DATABASE_URL (and
 * SERVICE_MODE, which decides whether keys are sandbox `civ_test_` or production `civ_live_` keys)
 * and applies pending migrations first, so it works on a database the server never opened.
 */

function buildCli(run: RunCommand): Command {
  const program = new Command('admin')
    .description('Operator commands for lender accounts, API keys, plans, policies and IP allowlists.')
    .exitOverride()
    .showHelpAfterError();
  // Added in the order `admin --help` lists them.
  addLenderCommands(program, run);
  addKeyCommands(program, run);
  addGdprCommands(program, run);
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
