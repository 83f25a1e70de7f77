import { InvalidArgumentError, type Command } from 'commander';
import * as admin from '../accounts/lender-admin.ts';
import { integer, print, withJson, type OutputOptions, type RunCommand } from './cli-support.ts';

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

/** `lender create | list | set | policy`: lender accounts, their plans, limits, allowlists and policies. */
export function addLenderCommands(program: Command, run: RunCommand): void {
  const lender = program.command('lender').description('lender accounts');
  withJson(lender.command('create').description('create a lender account'))
    .requiredOption('--name <name>', 'account name, shown to creators by default')
    .option('--plan <plan>', 'pilot or production', 'pilot')
    .option('--jurisdiction <jurisdiction>', 'eu_gdpr, uk_gdpr, difc or other', 'eu_gdpr')
    .action(async (options: OutputOptions & { name: string; plan: string; jurisdiction: string }) => {
      const account = await run((ctx) => admin.createLender(ctx, options));
      print(options, account, () => [`Created lender ${account.id} (${account.name}, plan ${account.plan}, ${account.jurisdiction})`]);
    });
  withJson(lender.command('list').description('list lender accounts')).action(async (options: OutputOptions) => {
    const accounts = await run((ctx) => ctx.accounts.listLenders());
    print(options, accounts, () =>
      accounts.length === 0
        ? ['No lender accounts.']
        : accounts.map(
            (a) => `${a.id}  ${a.plan.padEnd(10)} ${a.jurisdiction.padEnd(8)} ${a.name}${a.deactivatedAt ? `  (deactivated ${a.deactivatedAt})` : ''}`,
          ),
    );
  });
  withJson(lender.command('set').description('change plan, jurisdiction, rate limit, IP allowlist or return origins'))
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
  withJson(lender.command('policy').description('set eligibility threshold overrides for one product type'))
    .requiredOption('--id <lenderId>', 'lender account id')
    .requiredOption('--product-type <type>', 'rbf, term_loan, securitization_pool, revenue_loan, venture_debt, murabaha or hpp')
    .requiredOption('--set <assignments...>', 'key=value pairs')
    .action(async (options: OutputOptions & { id: string; productType: string; set: string[] }) => {
      const policy = await run((ctx) => admin.setPolicy(ctx, { id: options.id, productType: options.productType, overrides: parseAssignments(options.set) }));
      print(options, { lender_id: options.id, product_type: options.productType, overrides: policy }, () => [
        `Policy for ${options.id} / ${options.productType}: ${JSON.stringify(policy)}`,
      ]);
    });
}
