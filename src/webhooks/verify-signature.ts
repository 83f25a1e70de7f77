import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * For webhook receivers (section 6.3, D15): true when `signatureHeader` is the HMAC-SHA256 of the
 * raw request body under the endpoint secret. Accepts `sha256=<hex>` and bare hex, compares in
 * constant time. Pass the body exactly as received (a Buffer or the unparsed string), never
 * re-serialised JSON. Answer 401 when it returns false.
 */
export function verifyWebhookSignature(rawBody: Buffer | string, signatureHeader: string | undefined | null, secret: string): boolean {
  if (!signatureHeader) return false;
  const hex = signatureHeader.trim().replace(/^sha256=/i, '');
  if (!/^[0-9a-fA-F]{64}$/.test(hex)) return false;
  const expected = createHmac('sha256', secret).update(rawBody).digest();
  return timingSafeEqual(expected, Buffer.from(hex, 'hex'));
}

/** The header value the service sends: `sha256=` and the lowercase hex HMAC of the body bytes. */
export function signWebhookBody(rawBody: Buffer | string, secret: string): string {
  return `sha256=${createHmac('sha256', secret).update(rawBody).digest('hex')}`;
}
