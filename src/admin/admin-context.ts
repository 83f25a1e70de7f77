import { randomBytes } from 'node:crypto';
import type { AccountsRepository } from '../accounts/accounts-repository.ts';
import type { AdminContext } from '../accounts/lender-admin.ts';
import { systemClock, type Clock } from '../platform/clock.ts';
import type { Config } from '../platform/config.ts';
import { validatePolicyOverrides } from '../tape/index.ts';

// What the operator's commands need besides the database, apart from service.ts: the CLI imports
// this and not the service, whose module graph (Express, the validator, every feature) it loaded
// and transpiled on every command (1.5-1.9 s a command before, 0.8-1.1 s after).

/**
 * Production refuses to start without ENCRYPTION_KEY (config); a sandbox generates one on first
 * start and keeps it in the database so every process and restart shares it (D22).
 */
export async function resolveEncryptionKey(config: Pick<Config, 'encryptionKey'>, accounts: AccountsRepository): Promise<Buffer> {
  if (config.encryptionKey) return config.encryptionKey;
  const stored = await accounts.initialiseSetting('sandbox_encryption_key', randomBytes(32).toString('base64'));
  return Buffer.from(stored, 'base64');
}

export function adminContext(config: Pick<Config, 'mode'>, accounts: AccountsRepository, clock: Clock = systemClock): AdminContext {
  return {
    accounts,
    mode: config.mode,
    now: () => clock.now(),
    validatePolicyOverrides: (productType, overrides) => {
      const result = validatePolicyOverrides(productType, overrides);
      if (!result.ok) throw result.error;
    },
  };
}
