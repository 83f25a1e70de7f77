/**
 * Webhook target guard (D16): a webhook URL may only lead to public addresses, so a lender cannot
 * aim our deliveries at our own network, loopback services or a cloud metadata endpoint (SSRF).
 *
 * Checked twice: `checkWebhookUrl` at registration (the lender gets a precise reason), and
 * `createGuardedDispatcher` at every connection a delivery opens, because DNS answers can change
 * after registration (rebinding). The dispatcher checks the addresses it is about to connect to,
 * so the address checked is the address connected to.
 *
 * `allowPrivateTargets` (WEBHOOK_ALLOW_PRIVATE_TARGETS, D22; tests and local sandboxes) admits
 * loopback, private (RFC 1918, ULA) and CGNAT addresses and local names such as `localhost`. It
 * never admits cloud metadata endpoints, link-local, multicast, unspecified or reserved addresses.
 */
import { promises as dns } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';
import { Agent, buildConnector } from 'undici';

export type Resolver = (host: string) => Promise<string[]>;

export type WebhookUrlCheck = { ok: true; url: URL } | { ok: false; reason: string };

export const MAX_WEBHOOK_URL_LENGTH = 2048;

/** Thrown (as the connection error) when a delivery would connect to a refused address. */
export class WebhookTargetRefusedError extends Error {
  readonly code = 'ERR_WEBHOOK_TARGET_REFUSED';
  override name = 'WebhookTargetRefusedError';
}

// `verbatim` keeps the resolver's order, which is the order Node's connect would try them in.
export const systemResolver: Resolver = async (host) => (await dns.lookup(host, { all: true, verbatim: true })).map((entry) => entry.address);

type Category = 'public' | 'metadata' | 'loopback' | 'private' | 'shared' | 'linkLocal' | 'multicast' | 'broadcast' | 'unspecified' | 'reserved';

const DESCRIPTION: Record<Exclude<Category, 'public'>, string> = {
  metadata: 'a cloud metadata address',
  loopback: 'a loopback address',
  private: 'a private address',
  shared: 'a shared (CGNAT) address',
  linkLocal: 'a link-local address',
  multicast: 'a multicast address',
  broadcast: 'a broadcast address',
  unspecified: 'an unspecified address',
  reserved: 'a reserved address',
};

const ALLOWED_WHEN_PRIVATE_TARGETS: ReadonlySet<Category> = new Set(['public', 'loopback', 'private', 'shared']);

// Most live in refused classes anyway; they are named so the reason says "metadata", and so that
// allowPrivateTargets never opens them. 168.63.129.16 (Azure WireServer) sits in public space.
const METADATA_ADDRESSES = new Set([
  '169.254.169.254', // AWS, GCP, Azure, OpenStack, DigitalOcean, ...
  '169.254.170.2', // AWS ECS task credentials
  '169.254.170.23', // AWS EKS pod identity
  '169.254.0.23', // Tencent Cloud
  '100.100.100.200', // Alibaba Cloud
  '192.0.0.192', // Oracle Cloud (legacy)
  '168.63.129.16', // Azure WireServer
  'fd00:ec2::254', // AWS IMDS over IPv6
  'fd00:ec2::23', // AWS EKS pod identity over IPv6
]);

// Every IPv4 class ipaddr.js names other than 'unicast' is special-purpose (its list matches the
// IANA IPv4 special-purpose registry, including as112 and amt, which we refuse too).
const IPV4_CATEGORY: Partial<Record<string, Category>> = {
  unicast: 'public',
  unspecified: 'unspecified',
  broadcast: 'broadcast',
  multicast: 'multicast',
  linkLocal: 'linkLocal',
  loopback: 'loopback',
  carrierGradeNat: 'shared',
  private: 'private',
};
const IPV6_CATEGORY: Partial<Record<string, Category>> = {
  unspecified: 'unspecified',
  loopback: 'loopback',
  linkLocal: 'linkLocal',
  multicast: 'multicast',
  uniqueLocal: 'private',
  rfc6052: 'private', // what remains of rfc6052 here is 64:ff9b:1::/48, local-use NAT64
};
// IANA has only allocated global unicast from 2000::/3; anything outside it is special or unassigned.
const GLOBAL_UNICAST = ipaddr.parseCIDR('2000::/3');
const NAT64_WELL_KNOWN = ipaddr.parseCIDR('64:ff9b::/96');

/** The IPv4 address an IPv6 address stands for, when traffic to it ends up at that IPv4 address. */
function embeddedIPv4(ip: ipaddr.IPv6): ipaddr.IPv4 | undefined {
  const bytes = ip.toByteArray();
  const last32 = () => new ipaddr.IPv4(bytes.slice(12));
  switch (ip.range()) {
    case 'ipv4Mapped': // ::ffff:a.b.c.d, which the kernel connects to over IPv4
    case 'rfc6145': // ::ffff:0:a.b.c.d, SIIT translated
      return last32();
    case 'rfc6052':
      return ip.match(NAT64_WELL_KNOWN) ? last32() : undefined;
    case '6to4': // 2002:AABB:CCDD::/48 is relayed to AA.BB.CC.DD
      return new ipaddr.IPv4(bytes.slice(2, 6));
    case 'unicast': // deprecated IPv4-compatible ::a.b.c.d; :: and ::1 have their own ranges
      return bytes.slice(0, 12).every((b) => b === 0) ? last32() : undefined;
    default:
      return undefined;
  }
}

function classifyParsed(ip: ipaddr.IPv4 | ipaddr.IPv6): Category {
  if (METADATA_ADDRESSES.has(ip.toString())) return 'metadata';
  if (ip.kind() === 'ipv4') return IPV4_CATEGORY[ip.range()] ?? 'reserved';
  const v6 = ip as ipaddr.IPv6;
  const v4 = embeddedIPv4(v6);
  if (v4) return classifyParsed(v4);
  const range = v6.range();
  // Teredo, documentation, benchmarking, ORCHID, ... (2001::/23, 2001:db8::/32, 3fff::/20) are
  // ranges other than 'unicast', so they end up 'reserved'.
  if (range === 'unicast' && v6.match(GLOBAL_UNICAST)) return 'public';
  return IPV6_CATEGORY[range] ?? 'reserved';
}

function classify(address: string): Category {
  // net.isIP first: ipaddr.js also accepts legacy spellings (0x7f.1, 0177.0.0.1) we never want to
  // interpret differently from the URL parser. Zone ids only make sense on link-local addresses.
  if (!isIP(address) || address.includes('%')) return 'reserved';
  return classifyParsed(ipaddr.parse(address));
}

function addressRefusal(address: string, allowPrivateTargets: boolean): string | undefined {
  const category = classify(address);
  if (category === 'public' || (allowPrivateTargets && ALLOWED_WHEN_PRIVATE_TARGETS.has(category))) return undefined;
  return `${DESCRIPTION[category]} (${address})`;
}

// Names that only ever mean something inside a network: refused without asking DNS, whose answer
// for them depends on the machine we run on (hosts file, search domains, cloud resolvers).
const METADATA_NAMES = new Set([
  'metadata',
  'metadata.google.internal',
  'metadata.goog',
  'instance-data',
  'instance-data.ec2.internal',
  'metadata.tencentyun.com',
]);
const LOCAL_SUFFIXES = ['localhost', 'local', 'localdomain', 'internal', 'intranet', 'lan', 'home', 'corp', 'home.arpa', 'test', 'invalid', 'onion'];

function nameRefusal(name: string, allowPrivateTargets: boolean): string | undefined {
  if (METADATA_NAMES.has(name)) return `host is a cloud metadata endpoint (${name})`;
  if (allowPrivateTargets) return undefined;
  if (LOCAL_SUFFIXES.some((suffix) => name === suffix || name.endsWith(`.${suffix}`))) {
    return `host is a local or internal name (${name})`;
  }
  // Single labels go through the resolver's search domains, i.e. into our own network.
  if (!name.includes('.')) return `host must be a fully qualified domain name (${name})`;
  return undefined;
}

type Vetted = { ok: true; addresses: string[] } | { ok: false; reason: string };

/**
 * Resolves `host` (a URL hostname without brackets) and checks every address. Resolution errors
 * propagate as they are: at delivery time a DNS failure is a retryable failure, not a refusal.
 */
async function vetHost(host: string, allowPrivateTargets: boolean, resolve: Resolver): Promise<Vetted> {
  if (isIP(host)) {
    const refusal = addressRefusal(host, allowPrivateTargets);
    return refusal ? { ok: false, reason: `host is ${refusal}` } : { ok: true, addresses: [host] };
  }
  const name = host.toLowerCase().replace(/\.$/, '');
  const refusal = nameRefusal(name, allowPrivateTargets);
  if (refusal) return { ok: false, reason: refusal };
  const addresses = await resolve(host);
  if (addresses.length === 0) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
  // Every address, not just the first: a client may fall back to any of them.
  for (const address of addresses) {
    const addressRefused = addressRefusal(address, allowPrivateTargets);
    if (addressRefused) return { ok: false, reason: `host resolves to ${addressRefused}` };
  }
  return { ok: true, addresses };
}

const unbracket = (hostname: string) => (hostname.startsWith('[') ? hostname.slice(1, -1) : hostname);

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(Object.assign(new Error('lookup timed out'), { code: 'ETIMEOUT' })), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

export interface CheckWebhookUrlOptions {
  allowPrivateTargets: boolean;
  /** Name resolution; defaults to the system resolver. Tests inject one. */
  resolve?: Resolver;
  /** Registration answers the lender synchronously, so a hanging resolver must not hold it (default 5000). */
  resolveTimeoutMs?: number;
}

/**
 * Registration check (D16). Returns the URL as the WHATWG parser normalised it, which is what
 * should be stored. A fragment is refused rather than stripped: it is never sent to the receiver,
 * so a URL carrying one is a mistake the lender should see, and what we store stays what they sent.
 */
export async function checkWebhookUrl(raw: string, options: CheckWebhookUrlOptions): Promise<WebhookUrlCheck> {
  const refuse = (reason: string): WebhookUrlCheck => ({ ok: false, reason });
  const tooLong = `url is longer than ${MAX_WEBHOOK_URL_LENGTH} characters`;
  if (raw.length > MAX_WEBHOOK_URL_LENGTH) return refuse(tooLong);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return refuse('url is not a valid absolute URL');
  }
  if (url.protocol !== 'https:') return refuse('url must use https');
  if (url.username !== '' || url.password !== '') return refuse('url must not contain a username or password');
  // An empty fragment ("...#") leaves url.hash empty but still shows in href.
  if (url.href.includes('#')) return refuse('url must not contain a fragment');
  if (url.href.length > MAX_WEBHOOK_URL_LENGTH) return refuse(tooLong);
  // The parser has already turned 2130706433, 0177.0.0.1, 0x7f.1 and 127.1 into 127.0.0.1 and
  // compressed IPv6 literals, so only canonical forms reach the classifier.
  const host = unbracket(url.hostname);
  if (host === '') return refuse('url must have a host');
  let vetted: Vetted;
  try {
    vetted = await withTimeout(vetHost(host, options.allowPrivateTargets, options.resolve ?? systemResolver), options.resolveTimeoutMs ?? 5000);
  } catch (error) {
    const code = (error as { code?: string }).code;
    return refuse(code === 'ETIMEOUT' ? `host lookup timed out (${host})` : `host does not resolve (${host})`);
  }
  return vetted.ok ? { ok: true, url } : refuse(vetted.reason);
}

export interface GuardedDispatcherOptions {
  allowPrivateTargets: boolean;
  /** Covers name resolution, TCP connect and TLS handshake. */
  connectTimeoutMs: number;
  /** Name resolution; defaults to the system resolver. Tests inject one. */
  lookup?: Resolver;
  /**
   * Trust anchors replacing the system's, for tests against a local server only. Production
   * leaves this unset (end-to-end tests use NODE_EXTRA_CA_CERTS, D16). Verification stays on.
   */
  tls?: { ca?: string | Buffer };
}

/**
 * The dispatcher for deliveries: an undici Agent whose connections only go to vetted addresses.
 *
 *   const dispatcher = createGuardedDispatcher({ allowPrivateTargets, connectTimeoutMs: 10_000 });
 *   await undici.request(url, { method: 'POST', body, dispatcher });      // does not follow redirects
 *   await undici.fetch(url, { method: 'POST', body, dispatcher, redirect: 'error' });
 *
 * A refused target fails the request with WebhookTargetRefusedError (code
 * ERR_WEBHOOK_TARGET_REFUSED; fetch wraps it as the `cause` of its TypeError). Redirects, if a
 * caller follows them, go through the same check. TLS is verified as usual, against the URL host
 * (SNI and certificate name), not against the address we pinned.
 */
export function createGuardedDispatcher(options: GuardedDispatcherOptions): Agent {
  const { allowPrivateTargets } = options;
  const resolve = options.lookup ?? systemResolver;

  // Node's net.connect calls this instead of dns.lookup and connects to what it returns, so the
  // vetted addresses are the only candidates, including for happy-eyeballs fallback.
  const lookup: LookupFunction = (hostname, lookupOptions, callback) => {
    vetHost(hostname, allowPrivateTargets, resolve).then(
      (vetted) => {
        if (!vetted.ok) return callback(new WebhookTargetRefusedError(vetted.reason), '', 0);
        const family = lookupOptions.family === 'IPv4' ? 4 : lookupOptions.family === 'IPv6' ? 6 : lookupOptions.family;
        const entries = vetted.addresses.map((address) => ({ address, family: isIP(address) })).filter((entry) => !family || entry.family === family);
        const first = entries[0];
        if (!first) return callback(Object.assign(new Error(`no IPv${family} address for ${hostname}`), { code: 'ENOTFOUND' }), '', 0);
        if (lookupOptions.all) callback(null, entries);
        else callback(null, first.address, first.family);
      },
      (error: NodeJS.ErrnoException) => callback(error, '', 0),
    );
  };

  const connector = buildConnector({
    timeout: options.connectTimeoutMs,
    lookup,
    ...(options.tls?.ca !== undefined ? { ca: options.tls.ca } : {}),
  });

  return new Agent({
    connect(connectOptions, callback) {
      // Node skips `lookup` for IP literals, so literal hosts are checked here.
      const host = unbracket(connectOptions.hostname);
      if (isIP(host)) {
        const refusal = addressRefusal(host, allowPrivateTargets);
        if (refusal) return callback(new WebhookTargetRefusedError(`host is ${refusal}`), null);
      }
      connector(connectOptions, callback);
    },
  });
}
