import { hash } from 'node:crypto';
import { calculateJwkThumbprint, CompactSign, exportJWK, generateKeyPair, importJWK, type CryptoKey } from 'jose';
import { decryptSecret, encryptSecret } from '../platform/crypto.ts';
import type { SigningKeyRow, SigningKeysRepository } from './signing-keys-repository.ts';

/**
 * Signed Risk Tapes (P26): every tape response carries a detached JWS (RFC 7515, Appendix F) over
 * its exact bytes, so a lender, a trustee or an auditor can prove offline, with the public keys of
 * /.well-known/jwks.json, that a tape came from this service unchanged. ES256 because every JOSE
 * library and every platform's crypto verifies it (EdDSA is still missing from some).
 */
export const TAPE_SIGNING_ALGORITHM = 'ES256';

/** A published key, as in the JWK Set (components.schemas.TapeSigningKey). */
export interface PublicSigningKey {
  kty: 'EC';
  crv: 'P-256';
  x: string;
  y: string;
  kid: string;
  alg: 'ES256';
  use: 'sig';
}

/** A refused key operation; its message says what to do instead. */
export class SigningKeyError extends Error {
  override name = 'SigningKeyError';
}

type KeyStore = Pick<SigningKeysRepository, 'listActive' | 'insert' | 'retire' | 'find'>;

/** A new key pair; its kid is the RFC 7638 thumbprint, so a key names itself and cannot collide. */
export async function createSigningKey(store: Pick<KeyStore, 'insert'>, encryptionKey: Buffer, now: Date): Promise<SigningKeyRow> {
  const { publicKey, privateKey } = await generateKeyPair(TAPE_SIGNING_ALGORITHM, { extractable: true });
  const publicJwk = await exportJWK(publicKey);
  const kid = await calculateJwkThumbprint(publicJwk, 'sha256');
  const published: PublicSigningKey = {
    kty: 'EC',
    crv: 'P-256',
    x: publicJwk.x!,
    y: publicJwk.y!,
    kid,
    alg: TAPE_SIGNING_ALGORITHM,
    use: 'sig',
  };
  const row: SigningKeyRow = {
    kid,
    algorithm: TAPE_SIGNING_ALGORITHM,
    publicJwk: JSON.stringify(published),
    privateJwkCiphertext: encryptSecret(encryptionKey, JSON.stringify(await exportJWK(privateKey))),
    createdAt: now.toISOString(),
    retiredAt: null,
  };
  await store.insert(row);
  return row;
}

/**
 * Start-up: a database without a key gets one. Processes starting together on an empty database may
 * each create one; both are published and the newest signs, so that is harmless.
 */
export async function ensureSigningKey(store: Pick<KeyStore, 'listActive' | 'insert'>, encryptionKey: Buffer, now: Date): Promise<void> {
  if ((await store.listActive()).length === 0) await createSigningKey(store, encryptionKey, now);
}

/** How long every process takes at most to read the key set again, and so to publish a new key. */
export const KEY_REFRESH_MS = 60_000;

/**
 * The key that signs: the newest key published for at least `publicationMs`, so that every process
 * serves a new key in its JWK Set before any process signs with it. When none is that old (a new
 * deployment), the oldest, published longest.
 */
export function signingKeyOf<K extends Pick<SigningKeyRow, 'createdAt'>>(activeNewestFirst: K[], now: Date, publicationMs: number): K | undefined {
  const published = activeNewestFirst.find((key) => Date.parse(key.createdAt) <= now.getTime() - publicationMs);
  return published ?? activeNewestFirst.at(-1);
}

/**
 * Takes a key out of the JWK Set; tapes it signed no longer verify against the published set. The
 * newest key and the key signing now cannot be retired, so a deployment always has a signing key.
 */
export async function retireSigningKey(store: KeyStore, kid: string, now: Date, publicationMs = KEY_REFRESH_MS): Promise<SigningKeyRow> {
  const key = await store.find(kid);
  if (!key) throw new SigningKeyError(`No tape signing key ${kid}`);
  if (key.retiredAt) throw new SigningKeyError(`Key ${kid} was retired at ${key.retiredAt}`);
  const active = await store.listActive();
  if (active[0]?.kid === kid) throw new SigningKeyError(`Key ${kid} is the newest key; rotate first, then retire it`);
  if (signingKeyOf(active, now, publicationMs)?.kid === kid) {
    throw new SigningKeyError(`Key ${kid} still signs until the newest key has been published for ${publicationMs / 1000} s; retire it after that`);
  }
  await store.retire(kid, now.toISOString());
  return { ...key, retiredAt: now.toISOString() };
}

interface LoadedKeys {
  signer: { kid: string; key: CryptoKey };
  published: PublicSigningKey[];
}

export interface TapeSignerOptions {
  keys: Pick<SigningKeysRepository, 'listActive'>;
  encryptionKey: Buffer;
  now: () => Date;
  /**
   * How long a process keeps its key set before reading it again (KEY_REFRESH_MS): a key rotated in
   * by the CLI is published by every process within this, and signs only after it.
   */
  refreshMs?: number;
  /** Signatures remembered per (key, body hash); 0 turns the cache off. */
  cacheEntries?: number;
}

/**
 * Signs tape bodies with the newest active key. A tape's bytes change only when it is scored again
 * (an overlay), so most requests ask for bytes already signed: the signature is remembered by the
 * SHA-256 of the bytes, which costs a fraction of an ECDSA signature (scripts/bench-tape-signing.ts).
 */
export class TapeSigner {
  private loaded: Promise<LoadedKeys> | undefined;
  private loadedAt = 0;
  private readonly refreshMs: number;
  private readonly cacheEntries: number;
  private readonly signatures = new Map<string, string>();

  constructor(private readonly options: TapeSignerOptions) {
    this.refreshMs = options.refreshMs ?? KEY_REFRESH_MS;
    this.cacheEntries = options.cacheEntries ?? 10_000;
  }

  /** The detached compact JWS `<protected header>..<signature>` over `bytes`. */
  async sign(bytes: Uint8Array): Promise<string> {
    const { signer } = await this.keys();
    const cacheKey = this.cacheEntries > 0 ? `${signer.kid}:${hash('sha256', bytes, 'base64url')}` : '';
    const cached = cacheKey ? this.signatures.get(cacheKey) : undefined;
    if (cached !== undefined) {
      // Most recently used last, so the oldest entry is the first one evicted.
      this.signatures.delete(cacheKey);
      this.signatures.set(cacheKey, cached);
      return cached;
    }
    const jws = await new CompactSign(bytes).setProtectedHeader({ alg: TAPE_SIGNING_ALGORITHM, kid: signer.kid }).sign(signer.key);
    const [header, , signature] = jws.split('.');
    const detached = `${header}..${signature}`;
    if (cacheKey) {
      this.signatures.set(cacheKey, detached);
      if (this.signatures.size > this.cacheEntries) this.signatures.delete(this.signatures.keys().next().value!);
    }
    return detached;
  }

  /** The JWK Set's keys: every key not retired, the signing key first. */
  async publicKeys(): Promise<PublicSigningKey[]> {
    return (await this.keys()).published;
  }

  /** Reads the key set again on next use (after a rotation in this process). */
  refresh(): void {
    this.loaded = undefined;
  }

  private keys(): Promise<LoadedKeys> {
    const now = this.options.now().getTime();
    if (!this.loaded || now - this.loadedAt >= this.refreshMs) {
      this.loadedAt = now;
      const loading = this.load();
      this.loaded = loading;
      // A failed read is not kept: the next request tries again.
      loading.catch(() => {
        if (this.loaded === loading) this.loaded = undefined;
      });
    }
    return this.loaded;
  }

  private async load(): Promise<LoadedKeys> {
    const rows = await this.options.keys.listActive();
    const signing = signingKeyOf(rows, this.options.now(), this.refreshMs);
    if (!signing) throw new Error('no tape signing key: the service creates one at start-up');
    const privateJwk = JSON.parse(decryptSecret(this.options.encryptionKey, signing.privateJwkCiphertext)) as Record<string, unknown>;
    const key = (await importJWK(privateJwk, signing.algorithm)) as CryptoKey;
    const published = rows.map((row) => JSON.parse(row.publicJwk) as PublicSigningKey);
    // The signing key first, as the JWK Set's description says; the others newest first.
    return {
      signer: { kid: signing.kid, key },
      published: [...published.filter((k) => k.kid === signing.kid), ...published.filter((k) => k.kid !== signing.kid)],
    };
  }
}
