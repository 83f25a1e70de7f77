import type { Command } from 'commander';
import { createSigningKey, KEY_REFRESH_MS, retireSigningKey } from '../signing/tape-signer.ts';
import { print, withJson, type OutputOptions, type RunCommand } from './cli-support.ts';

/**
 * `signing-key list | rotate | retire` (P26): the keys that sign Risk Tapes. A rotation publishes
 * the new key at once and lets it sign a refresh period later; old keys stay published, so tapes
 * they signed keep verifying, until the operator retires them.
 */
export function addSigningKeyCommands(program: Command, run: RunCommand): void {
  const group = program.command('signing-key').description('keys that sign Risk Tapes (published at /.well-known/jwks.json)');
  withJson(group.command('list').description('every tape signing key, newest first, with its state')).action(async (options: OutputOptions) => {
    const keys = await run((ctx) => ctx.signingKeys.listAll());
    const rows = keys.map((k) => ({ kid: k.kid, algorithm: k.algorithm, createdAt: k.createdAt, retiredAt: k.retiredAt }));
    print(options, rows, () =>
      rows.length === 0
        ? ['No tape signing keys (the service creates one at start-up).']
        : rows.map((k) => `${k.kid}  ${k.algorithm}  created ${k.createdAt}  ${k.retiredAt ? `retired ${k.retiredAt}` : 'published'}`),
    );
  });
  withJson(group.command('rotate').description('create a new signing key; it signs once every server publishes it')).action(async (options: OutputOptions) => {
    const key = await run(async (ctx) => createSigningKey(ctx.signingKeys, await ctx.encryptionKey(), ctx.now()));
    const signsFrom = new Date(Date.parse(key.createdAt) + KEY_REFRESH_MS).toISOString();
    print(options, { kid: key.kid, algorithm: key.algorithm, createdAt: key.createdAt, signsFrom }, () => [
      `Created tape signing key ${key.kid} (${key.algorithm}), published now, signing from ${signsFrom}.`,
      'Earlier keys stay published until you retire them (signing-key retire --kid ...).',
    ]);
  });
  withJson(group.command('retire').description('stop publishing a key; tapes it signed no longer verify against the JWK Set'))
    .requiredOption('--kid <kid>', 'key id')
    .action(async (options: OutputOptions & { kid: string }) => {
      const key = await run((ctx) => retireSigningKey(ctx.signingKeys, options.kid, ctx.now()));
      print(options, { kid: key.kid, retiredAt: key.retiredAt }, () => [`Retired tape signing key ${key.kid} at ${key.retiredAt}.`]);
    });
}
