import type { Command } from 'commander';
import * as admin from '../accounts/lender-admin.ts';
import { print, withJson, type OutputOptions, type RunCommand } from './cli-support.ts';

/**
 * Account commands beside those of lender-commands.ts: `lender deactivate | reactivate`, `policy show | clear`
 * and `deployment show`.
 */
export function addAccountCommands(program: Command, run: RunCommand): void {
  const lender = program.commands.find((command) => command.name() === 'lender') ?? program.command('lender').description('lender accounts');
  withJson(
    lender
      .command('deactivate')
      .description('stop every key (next request 401) and dashboard user (sign-in refused, sessions ended) of a lender account until reactivated'),
  )
    .requiredOption('--id <lenderId>', 'lender account id')
    .action(async (options: OutputOptions & { id: string }) => {
      const account = await run((ctx) => admin.deactivateLender(ctx, options.id));
      print(options, account, () => [
        `Deactivated lender ${account.id} (${account.name}) at ${account.deactivatedAt}: its keys and dashboard sign-ins are refused from now on, its dashboard sessions ended.`,
      ]);
    });
  withJson(
    lender.command('reactivate').description("let a deactivated lender's keys (those not revoked) and dashboard users sign in again (not their old sessions)"),
  )
    .requiredOption('--id <lenderId>', 'lender account id')
    .action(async (options: OutputOptions & { id: string }) => {
      const account = await run((ctx) => admin.reactivateLender(ctx, options.id));
      print(options, account, () => [`Reactivated lender ${account.id} (${account.name}).`]);
    });

  const policy = program.command('policy').description("a lender's eligibility threshold overrides (set them with `lender policy`)");
  withJson(policy.command('show').description('the overrides of a lender account, per product type'))
    .requiredOption('--lender <lenderId>', 'lender account id')
    .action(async (options: OutputOptions & { lender: string }) => {
      const policies = await run((ctx) => admin.showPolicies(ctx, options.lender));
      print(options, { lender_id: options.lender, policies }, () =>
        Object.keys(policies).length === 0
          ? [`Lender ${options.lender} has no overrides: the defaults of docs/scoring.md apply.`]
          : Object.entries(policies).map(([productType, overrides]) => `${productType.padEnd(20)} ${JSON.stringify(overrides)}`),
      );
    });
  withJson(
    policy.command('clear').description('remove overrides of one product type (all, or the named ones); the defaults apply to tapes computed from now on'),
  )
    .requiredOption('--lender <lenderId>', 'lender account id')
    .requiredOption('--product-type <type>', 'product type whose overrides go')
    .option('--keys <names>', 'comma-separated override names; all when left out', (v: string) => v.split(',').filter((k) => k.trim() !== ''))
    .action(async (options: OutputOptions & { lender: string; productType: string; keys?: string[] }) => {
      const remaining = await run((ctx) =>
        admin.clearPolicy(ctx, { id: options.lender, productType: options.productType, ...(options.keys ? { keys: options.keys } : {}) }),
      );
      print(options, { lender_id: options.lender, product_type: options.productType, overrides: remaining }, () => [
        Object.keys(remaining).length === 0
          ? `Cleared the ${options.productType} overrides of ${options.lender}: the defaults apply.`
          : `Overrides of ${options.lender} / ${options.productType} now: ${JSON.stringify(remaining)}`,
      ]);
    });

  const deployment = program.command('deployment').description('the deployment this database belongs to');
  withJson(deployment.command('show').description('the mode recorded in the database (sandbox or production) and the kind of keys it accepts')).action(
    async (options: OutputOptions) => {
      const mode = await run((ctx) => admin.deploymentModeOf(ctx.accounts, ctx.mode));
      const keyPrefix = mode === 'production' ? 'civ_live_' : 'civ_test_';
      print(options, { mode, keyPrefix }, () => [`This database belongs to a ${mode} deployment; it issues and accepts ${keyPrefix} keys.`]);
    },
  );
}
