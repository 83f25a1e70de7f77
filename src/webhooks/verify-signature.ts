import { createHmac, timingSafeEqual } from 'node:crypto';

/** At most this many signatures in one header: the service sends two during a rotation's overlap. */
const MAX_SIGNATURES = 4;
const ENTRY = /^(?:sha256=)?([0-9a-fA-F]{64})$/i;

/**
 * For webhook receivers (section 6.3, D15, P25): true when `signatureHeader` holds an HMAC-SHA256 of
 * the raw request body under the endpoint secret. Accepts `sha256=<hex>` and bare hex, and the
 * comma-separated list of both secrets' signatures sent while a rotated secret overlaps the new one
 * (any entry may match, so either secret works). Compares in constant time. Pass the body exactly as
 * received (a Buffer or the unparsed string), never re-serialised JSON. Answer 401 when it returns false.
 */
export function verifyWebhookSignature(rawBody: Buffer | string, signatureHeader: string | undefined | null, secret: string): boolean {
  if (!signatureHeader) return false;
  const entries = signatureHeader.split(',').map((entry) => ENTRY.exec(entry.trim())?.[1]);
  if (entries.length > MAX_SIGNATURES || entries.some((hex) => hex === undefined)) return false;
  const expected = createHmac('sha256', secret).update(rawBody).digest();
  // Every entry is compared, so the time taken does not tell which one matched.
  let matched = false;
  for (const hex of entries) matched = timingSafeEqual(expected, Buffer.from(hex!, 'hex')) || matched;
  return matched;
}

/** The header value the service sends: `sha256=` and the lowercase hex HMAC of the body bytes. */
function signWebhookBody(rawBody: Buffer | string, secret: string): string {
  return `sha256=${createHmac('sha256', secret).update(rawBody).digest('hex')}`;
}

/** During a rotation's overlap: every secret's signature, the newest secret's first, as one comma-separated header value. */
export function signWebhookBodyWith(rawBody: Buffer | string, secrets: readonly string[]): string {
  return secrets.map((secret) => signWebhookBody(rawBody, secret)).join(', ');
}
