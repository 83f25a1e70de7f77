import type { Command } from 'commander';
import * as admin from '../accounts/lender-admin.ts';
import { integer, print, withJson, type OutputOptions, type RunCommand } from './cli-support.ts';

/** `key create | list | limit | revoke`: a lender's API keys. */
export function addKeyCommands(program: Command, run: RunCommand): void {
  const key = program.command('key').description('API keys');
  withJson(key.command('create').description('issue an API key (shown once)'))
    .requiredOption('--lender <lenderId>', 'lender account id')
    .requiredOption('--role <role>', 'lender or gdpr_admin')
    .action(async (options: OutputOptions & { lender: string; role: string }) => {
      const { apiKey, record } = await run((ctx) => admin.createKey(ctx, { lenderId: options.lender, role: options.role }));
      print(options, { ...record, api_key: apiKey }, () => [
        `Created ${record.role} key ${record.id} for ${record.lenderId}.`,
        `API key (shown once, store it now): ${apiKey}`,
      ]);
    });
  withJson(key.command('list').description("list a lender's keys (never the keys themselves)"))
    .requiredOption('--lender <lenderId>', 'lender account id')
    .action(async (options: OutputOptions & { lender: string }) => {
      const keys = await run((ctx) => admin.listKeys(ctx, options.lender));
      print(options, keys, () =>
        keys.length === 0
          ? ['No keys.']
          : keys.map((k) => `${k.id}  ${k.role.padEnd(10)} ${k.keyPrefix}…  ${k.revokedAt ? `revoked ${k.revokedAt}` : 'active'}`),
      );
    });
  withJson(key.command('limit').description('give one key its own rate limit (D8)'))
    .requiredOption('--key-id <keyId>', 'key id (key_...)')
    .requiredOption('--rate-limit <perMinute>', 'requests per minute', integer('--rate-limit'))
    .requiredOption('--burst <perSecond>', 'requests per second', integer('--burst'))
    .action(async (options: OutputOptions & { keyId: string; rateLimit: number; burst: number }) => {
      const limit = await run((ctx) => admin.setKeyRateLimit(ctx, options));
      print(options, { key_id: options.keyId, ...limit }, () => [`Key ${options.keyId}: ${limit.perMinute} requests/min, burst ${limit.burst}/s.`]);
    });
  withJson(key.command('revoke').description('revoke a key; effective on its next request'))
    .requiredOption('--key-id <keyId>', 'key id (key_...)')
    .action(async (options: OutputOptions & { keyId: string }) => {
      const record = await run((ctx) => admin.revokeKey(ctx, options.keyId));
      print(options, record, () => [`Key ${record.id} revoked at ${record.revokedAt}.`]);
    });
}
