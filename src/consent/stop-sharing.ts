import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { sha256Hex } from '../platform/crypto.ts';
import type { VerificationRecord } from '../verifications/verifications-repository.ts';
import type { ConsentDeps } from './consent-flow.ts';

// The creator stops ongoing monitoring (P33) from the consent link. Stopping cannot be undone, so
// its form carries, besides the link's token in the path, a token of the browser that opened the
// confirmation page (an HMAC under a cookie's secret, like the dashboard's forms): a post that did
// not come from that page in that browser, such as another site's form in a browser that sends no
// Sec-Fetch-Site, stops nothing.

/** Only running monitoring is stopped here: before the first tape the consent page offers to decline, and ended monitoring has nothing left. */
export const canStopSharing = (verification: Pick<VerificationRecord, 'status' | 'monitoring'>): boolean =>
  verification.status === 'completed' && verification.monitoring?.state === 'active';

/** The browser's secret, kept in its cookie; the forms' tokens are derived from it. */
export const newBrowserSecret = (): string => randomBytes(32).toString('base64url');

/**
 * The stop form's token: an HMAC of the link under the browser's secret, so it needs no storage,
 * cannot be made by a page that cannot read the cookie, and serves one link only (two links open
 * in one browser share the secret, not their tokens).
 */
export function stopFormToken(browserSecret: string, consentToken: string): string {
  return createHmac('sha256', browserSecret)
    .update(`consent-stop:${sha256Hex(consentToken)}`)
    .digest('base64url');
}

/** Whether a posted form carries the token of this browser and this link (compared in constant time). */
export function isStopFormValid(browserSecret: string | undefined, consentToken: string, submitted: unknown): boolean {
  if (!browserSecret || typeof submitted !== 'string') return false;
  const expected = Buffer.from(stopFormToken(browserSecret, consentToken));
  const given = Buffer.from(submitted);
  return expected.length === given.length && timingSafeEqual(expected, given);
}

/**
 * Ends the verification's monitoring as the creator's choice. False when there was nothing to stop
 * (already ended, never started, a one-time verification): a second post changes nothing.
 */
export async function stopSharing(
  deps: Pick<ConsentDeps, 'lifecycle'>,
  verification: Pick<VerificationRecord, 'id' | 'status' | 'monitoring'>,
): Promise<boolean> {
  if (!canStopSharing(verification)) return false;
  return deps.lifecycle.stopByCreator(verification.id);
}
