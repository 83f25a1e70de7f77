import { createHmac, timingSafeEqual } from 'node:crypto';
import { compactVerify, createLocalJWKSet, createRemoteJWKSet, type JSONWebKeySet } from 'jose';

/** At most this many signatures in one header: the service sends two during a rotation's overlap. */
const MAX_SIGNATURES = 4;
const ENTRY = /^(?:sha256=)?([0-9a-fA-F]{64})$/;

/**
 * True when `X-Service-Signature` holds an HMAC-SHA256 of the raw request body under the endpoint
 * secret. Accepts `sha256=<hex>` and bare hex, and the comma-separated list sent while a rotated
 * secret overlaps the new one (`sha256=<new>, sha256=<old>`; any entry may match). Constant time.
 * Pass the body exactly as received (a Buffer or the unparsed string), never re-serialised JSON.
 */
export function verifyWebhookSignature(rawBody: Uint8Array | string, signatureHeader: string | null | undefined, secret: string): boolean {
  if (!signatureHeader) return false;
  const entries = signatureHeader.split(',').map((entry) => ENTRY.exec(entry.trim())?.[1]);
  if (entries.length > MAX_SIGNATURES || entries.some((hex) => hex === undefined)) return false;
  const expected = createHmac('sha256', secret).update(rawBody).digest();
  // Every entry is compared, so the time taken does not tell which one matched.
  let matched = false;
  for (const hex of entries) matched = timingSafeEqual(expected, Buffer.from(hex!, 'hex')) || matched;
  return matched;
}

/** The public keys: the JWK Set itself (offline), or the URL of `/.well-known/jwks.json` (fetched, cached, refetched on an unknown kid). */
export type TapeKeys = JSONWebKeySet | URL;

const remoteSets = new Map<string, ReturnType<typeof createRemoteJWKSet>>();

/**
 * Verifies `X-Tape-Signature` (a detached ES256 JWS, RFC 7515 Appendix F) over the exact bytes of a
 * tape response. Returns the signing key's id; throws when the signature does not hold.
 */
export async function verifyTapeSignature(body: Uint8Array, signature: string, keys: TapeKeys): Promise<{ kid: string }> {
  const [header, payload, sig] = signature.split('.');
  if (header === undefined || payload !== '' || sig === undefined) throw new Error('X-Tape-Signature is not a detached compact JWS');
  let keySet;
  if (keys instanceof URL) {
    keySet = remoteSets.get(keys.href);
    if (!keySet) remoteSets.set(keys.href, (keySet = createRemoteJWKSet(keys)));
  } else {
    keySet = createLocalJWKSet(keys);
  }
  const { protectedHeader } = await compactVerify(`${header}.${Buffer.from(body).toString('base64url')}.${sig}`, keySet, { algorithms: ['ES256'] });
  return { kid: protectedHeader.kid ?? '' };
}
