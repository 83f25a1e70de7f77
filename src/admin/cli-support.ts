import { InvalidArgumentError, type Command } from 'commander';
import type * as admin from '../accounts/lender-admin.ts';
import type { GdprRepository } from '../gdpr/gdpr-repository.ts';
import type { StorageRepository } from '../gdpr/storage-repository.ts';
import type { SigningKeysRepository } from '../signing/signing-keys-repository.ts';
import type { DashboardUserCliContext } from './dashboard-user-commands.ts';

/** JSON output speaks the API's snake_case, whatever the internal names are. */
export function snakeCase(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(snakeCase);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`), snakeCase(v)]));
}

/** `--json`, which every command takes. */
export interface OutputOptions {
  json?: boolean;
}

export function print(options: OutputOptions, data: unknown, lines: () => string[]): void {
  console.log(options.json ? JSON.stringify(snakeCase(data), null, 2) : lines().join('\n'));
}

export const withJson = (command: Command) => command.option('--json', 'machine-readable output');

export const integer = (name: string) => (value: string) => {
  if (!/^\d+$/.test(value)) throw new InvalidArgumentError(`${name} must be a whole number`);
  return Number(value);
};

/** What the commands work with: the accounts' use cases, the data-protection audit trail, the tape signing keys, the dashboard's users. */
export type CliContext = admin.AdminContext &
  DashboardUserCliContext & {
    gdprAudit: Pick<GdprRepository, 'list'>;
    /** On a connection without the service's statement timeout (a rewrite of a large table outlasts it). */
    storage: Pick<StorageRepository, 'rewrite'>;
    signingKeys: SigningKeysRepository;
    /** The service's encryption key (ENCRYPTION_KEY, or the sandbox's stored one). */
    encryptionKey: () => Promise<Buffer>;
  };

/** Runs one command's work against the database, opened for it and closed after. */
export type RunCommand = <T>(work: (ctx: CliContext) => Promise<T>) => Promise<T>;
