import type { RiskTape200 } from '../../generated/tape.ts';
import { sha256Hex } from '../platform/crypto.ts';
import type { UnitOfWork } from '../platform/db/unit-of-work.ts';
import type { TapeReason } from '../verifications/verifications-repository.ts';
import { protectEmail, type Platform } from './consent-flow.ts';
import type { ConsentRepository } from './consent-repository.ts';
import { GOOGLE_SCOPES } from './providers.ts';

/** The reserved domain (RFC 2606) of every sandbox creator's synthetic address. */
const SANDBOX_EMAIL_DOMAIN = 'sandbox.example';

/**
 * A sandbox creator's synthetic account email (P35), the same for every verification of one
 * obligor reference and so found by a data-protection request as a real creator's would be: the
 * reference in lower case with every run of other characters than letters and digits made a hyphen
 * (at most 40 characters), a hyphen, the first 8 hex digits of the reference's SHA-256, at
 * `sandbox.example`. `demo-yt-mid` is `demo-yt-mid-<8 hex>@sandbox.example`.
 */
export function sandboxAccountEmail(obligorReference: string): string {
  const slug = obligorReference
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .slice(0, 40)
    .replace(/^-+|-+$/g, '');
  return `${slug || 'creator'}-${sha256Hex(obligorReference).slice(0, 8)}@${SANDBOX_EMAIL_DOMAIN}`;
}

/**
 * What production keeps of each platform's grant besides its address, made up for the sandbox: the
 * scopes granted, and Stripe's connected account id (`acct_` and 16 hex digits). Google names no account
 * id, as in production.
 */
function sandboxAccount(obligorReference: string, platform: Platform): { scopes: string[]; externalAccountId: string | null } {
  if (platform === 'youtube') return { scopes: [...GOOGLE_SCOPES], externalAccountId: null };
  return { scopes: ['read_only'], externalAccountId: `acct_${sha256Hex(`stripe:${obligorReference}`).slice(0, 16)}` };
}

/**
 * The verifications store's tape listener in the sandbox (P35): each platform the tape shows
 * connected gets its synthetic account, connected when the tape says, in the same unit of work.
 * The address, the same for every platform of the creator, is encrypted with its blind index as a
 * grant's is, once for all of them.
 */
export function recordSandboxAccounts(consent: Pick<ConsentRepository, 'saveSandboxAccounts'>, encryptionKey: Buffer) {
  return async (unit: UnitOfWork, verification: { id: string }, tape: RiskTape200, reason: TapeReason): Promise<void> => {
    // A platform connects only before its verification completes, so the completion's tape names
    // every connection there will be; a refresh's or an overlay's would seal the address again
    // only for the repository to keep the first.
    if (reason !== 'completion') return;
    const accounts = tape.platform_connections.flatMap((connection) => {
      if (connection.status !== 'connected' || !connection.connected_at) return [];
      const account = sandboxAccount(tape.obligor.reference, connection.platform);
      return [{ platform: connection.platform, scopes: account.scopes, externalAccountId: account.externalAccountId, connectedAt: connection.connected_at }];
    });
    if (accounts.length === 0) return;
    await consent.saveSandboxAccounts(unit, verification.id, protectEmail(encryptionKey, sandboxAccountEmail(tape.obligor.reference)), accounts);
  };
}
