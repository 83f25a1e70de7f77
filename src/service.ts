import { randomBytes } from 'node:crypto';
import type { Express } from 'express';
import { AccountsRepository } from './accounts/accounts-repository.ts';
import { ensureDemoAccount, type AdminContext } from './accounts/lender-admin.ts';
import type { Config } from './platform/config.ts';
import { openDatabase, type Database } from './platform/db/database.ts';
import { loadApiDocument } from './platform/http/api-document.ts';
import { createHttpApp } from './platform/http/app.ts';
import type { Logger } from './platform/logger.ts';
import { createHandlers, PENDING_OPERATIONS } from './operations.ts';
import { validatePolicyOverrides } from './policy-overrides.ts';
import { VerificationsRepository } from './verifications/verifications-repository.ts';

export interface Service {
  app: Express;
  db: Database;
  encryptionKey: Buffer;
  close(): Promise<void>;
}

export interface ServiceOptions {
  now?: () => Date;
}

/**
 * Production refuses to start without ENCRYPTION_KEY (config); a sandbox generates one on first
 * start and keeps it in the database so every process and restart shares it (D22).
 */
async function resolveEncryptionKey(config: Config, accounts: AccountsRepository): Promise<Buffer> {
  if (config.encryptionKey) return config.encryptionKey;
  const stored = await accounts.initialiseSetting('sandbox_encryption_key', randomBytes(32).toString('base64'));
  return Buffer.from(stored, 'base64');
}

export function adminContext(config: Pick<Config, 'mode'>, accounts: AccountsRepository, now: () => Date = () => new Date()): AdminContext {
  return { accounts, mode: config.mode, now, validatePolicyOverrides };
}

/** Opens the database, applies migrations and builds the HTTP app; the caller decides where it listens. */
export async function startService(config: Config, logger: Logger, options: ServiceOptions = {}): Promise<Service> {
  const now = options.now ?? (() => new Date());
  const db = openDatabase(config.databaseUrl);
  try {
    await db.migrate();
    const accounts = new AccountsRepository(db.knex);
    const encryptionKey = await resolveEncryptionKey(config, accounts);
    if (config.mode === 'sandbox' && config.demoApiKey) {
      await ensureDemoAccount(adminContext(config, accounts, now), config.demoApiKey);
    }
    const handlers = createHandlers({
      verifications: new VerificationsRepository(db.knex),
      isDatabaseReachable: () => db.isReachable(),
    });
    const app = createHttpApp({ config, logger, accounts, apiDocument: loadApiDocument(), handlers, pendingOperations: PENDING_OPERATIONS });
    return { app, db, encryptionKey, close: () => db.close() };
  } catch (error) {
    await db.close();
    throw error;
  }
}
