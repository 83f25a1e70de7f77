import { bool, cleanEnv, makeValidator, num, port, str, url, type CleanedEnv } from 'envalid';
import ipaddr from 'ipaddr.js';

/** The public demo key of the sandbox (D22): documented, so it must never be accepted in production. */
export const PUBLIC_DEMO_API_KEY = 'civ_test_PublicSandboxDemoKey0000000000';

export type ServiceMode = 'sandbox' | 'production';

export interface Config {
  port: number;
  host: string;
  databaseUrl: string;
  /** SQLite: units of work commit in groups (docs/persistence.md, "Group commit"). */
  databaseGroupCommit: boolean;
  mode: ServiceMode;
  /** Sandbox only; null in production. */
  demoApiKey: string | null;
  publicBaseUrl: string;
  logLevel: string;
  webhookAllowPrivateTargets: boolean;
  /** Seconds after the first attempt at which each delivery attempt happens (D14). */
  webhookRetryScheduleSeconds: number[];
  sandboxCompleteDelayMs: number;
  /**
   * The sandbox's stand-in for a month of ongoing monitoring (P33), so an integrator sees scheduled
   * refreshes and a window's end in seconds; null: calendar months, as production always has.
   */
  sandboxRefreshIntervalMs: number | null;
  /** OAuth clients and API endpoints of the platforms; a platform without credentials cannot be connected. */
  providers: {
    google?: {
      clientId: string;
      clientSecret: string;
      authorizationUrl: string;
      tokenUrl: string;
      /** RFC 7009 token revocation endpoint (GOOGLE_REVOKE_URL). */
      revokeUrl: string;
      userinfoUrl: string;
      apiRootUrl: string;
    };
    stripe?: {
      clientId: string;
      secretKey: string;
      /** Origin of Stripe Connect (STRIPE_CONNECT_URL): the stripe package reaches oauth/deauthorize there by host and port. */
      connectUrl: string;
      authorizationUrl: string;
      tokenUrl: string;
      apiUrl: string;
    };
    /** Plain-http provider URLs are refused unless allowed (tests with local simulators). */
    allowInsecureRequests: boolean;
  };
  /** D18: how long collection may take after consent before the verification fails with `timeout`. */
  processingWindowMs: number;
  /** How long a webhook receiver has to answer (section 6.2: 10 seconds). */
  webhookTimeoutMs: number;
  /** How long a claimed job stays reserved for its worker; a crashed worker's jobs run again after it. */
  jobLeaseMs: number;
  /** 32-byte key for encryption at rest; null lets the sandbox generate and keep one (D22). */
  encryptionKey: Buffer | null;
  /** Express `trust proxy` setting, so the IP allowlist sees the client address behind a proxy. */
  /** Express's `trust proxy`: false, true, a number of hops, or a list of addresses, CIDR ranges and Express's names. */
  trustProxy: TrustProxy;
  shutdownGraceMs: number;
  /** Server processes (Node's cluster module) sharing the port; above 1 only on PostgreSQL. */
  webConcurrency: number;
  /** Validate every response against the spec (tests): a mismatch is a 500 there, never in production. */
  validateResponses: boolean;
  /**
   * The Prometheus endpoint (METRICS_PORT, METRICS_HOST, METRICS_TOKEN): its own listener, never the
   * public API port; null (the default) measures no requests and serves no metrics.
   */
  metrics: { port: number; host: string; token: string | null } | null;
}

const retrySchedule = makeValidator<number[]>((input) => {
  const seconds = input.split(',').map((part) => Number(part.trim()));
  const ascending = seconds.every((s, i) => i === 0 || s > seconds[i - 1]!);
  if (seconds.length === 0 || seconds.some((s) => !Number.isInteger(s) || s < 0) || seconds[0] !== 0 || !ascending) {
    throw new Error('must be ascending whole seconds starting at 0, e.g. "0,60,300,1800,7200"');
  }
  return seconds;
});

export type TrustProxy = boolean | number | string[];

const PROXY_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);

/** An address in its usual written form: four-part dotted IPv4 or IPv6, never ipaddr.js's lenient forms ("1" as 0.0.0.1). */
function isWrittenAddress(address: string): boolean {
  return ipaddr.IPv4.isValidFourPartDecimal(address) || (address.includes(':') && ipaddr.IPv6.isValid(address));
}

function isProxyEntry(entry: string): boolean {
  if (PROXY_NAMES.has(entry)) return true;
  const [address, prefix, ...rest] = entry.split('/');
  if (rest.length > 0 || !address || !isWrittenAddress(address)) return false;
  if (prefix === undefined) return true;
  const bits = address.includes(':') ? 128 : 32;
  return /^\d{1,3}$/.test(prefix) && Number(prefix) <= bits;
}

export const TRUST_PROXY_TRUE_REFUSED =
  'TRUST_PROXY=true (or a /0 range) is refused in production mode: it trusts the leftmost X-Forwarded-For address, which any client can set. ' +
  'Give the number of proxies in front of the service (TRUST_PROXY=1 for one) or their addresses or CIDR ranges (TRUST_PROXY=10.0.0.0/8)';

/**
 * TRUST_PROXY as Express needs it: `false`/empty, `true` (every hop), a number of hops, or a comma
 * list of addresses, CIDR ranges and the names loopback, linklocal, uniquelocal. Anything else is
 * refused at start-up: Express would otherwise read "1" as the address 0.0.0.1 and trust no proxy.
 */
export const trustProxy = makeValidator<TrustProxy>((input) => {
  const value = input.trim();
  if (value === '' || value === 'false') return false;
  if (value === 'true') return true;
  if (/^\d+$/.test(value)) return Number(value);
  const entries = value.split(',').map((entry) => entry.trim());
  const bad = entries.filter((entry) => !isProxyEntry(entry));
  if (bad.length > 0) {
    throw new Error(
      `must be true, false, a number of hops, or addresses, CIDR ranges and loopback/linklocal/uniquelocal; not ${bad.map((b) => JSON.stringify(b)).join(', ')}`,
    );
  }
  return entries;
});

const encryptionKey = makeValidator<string>((input) => {
  if (input === '') return '';
  const key = /^[0-9a-fA-F]{64}$/.test(input) ? Buffer.from(input, 'hex') : Buffer.from(input, 'base64');
  if (key.length !== 32) throw new Error('must be 32 bytes, as 64 hex characters or base64');
  return input;
});

const decodeKey = (input: string): Buffer | null =>
  input === '' ? null : /^[0-9a-fA-F]{64}$/.test(input) ? Buffer.from(input, 'hex') : Buffer.from(input, 'base64');

const isOrigin = (input: string): boolean => {
  try {
    const url = new URL(input);
    return (url.protocol === 'https:' || url.protocol === 'http:') && url.pathname.replace(/\/+$/, '') === '' && !url.search && !url.hash;
  } catch {
    return false;
  }
};

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/**
 * Every variable of D22 in one schema, so that envalid reports all the unusable ones of an
 * environment at once, in this order; the checks after it, across variables, stop at the first.
 */
const VARIABLES = {
  PORT: port({ default: 8080 }),
  HOST: str({ default: '127.0.0.1' }),
  DATABASE_URL: str({ default: 'sqlite:./data/service.sqlite' }),
  DATABASE_GROUP_COMMIT: str({ choices: ['on', 'off'], default: 'on' }),
  SERVICE_MODE: str({ choices: ['sandbox', 'production'], default: 'sandbox' }),
  DEMO_API_KEY: str({ default: '' }),
  PUBLIC_BASE_URL: url({ default: '' }),
  LOG_LEVEL: str({ choices: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], default: 'info' }),
  WEBHOOK_ALLOW_PRIVATE_TARGETS: bool({ default: false }),
  WEBHOOK_RETRY_SCHEDULE: retrySchedule({ default: [0, 60, 300, 1800, 7200] }),
  SANDBOX_COMPLETE_DELAY_MS: num({ default: 5000 }),
  SANDBOX_REFRESH_INTERVAL_MS: str({ default: '' }),
  WEBHOOK_TIMEOUT_MS: num({ default: 10000 }),
  JOB_LEASE_MS: num({ default: 60000 }),
  PROCESSING_WINDOW_SECONDS: num({ default: 900 }),
  GOOGLE_CLIENT_ID: str({ default: '' }),
  GOOGLE_CLIENT_SECRET: str({ default: '' }),
  GOOGLE_AUTHORIZATION_URL: str({ default: 'https://accounts.google.com/o/oauth2/v2/auth' }),
  GOOGLE_TOKEN_URL: str({ default: 'https://oauth2.googleapis.com/token' }),
  GOOGLE_REVOKE_URL: str({ default: 'https://oauth2.googleapis.com/revoke' }),
  GOOGLE_USERINFO_URL: str({ default: 'https://openidconnect.googleapis.com/v1/userinfo' }),
  YOUTUBE_ANALYTICS_URL: str({ default: 'https://youtubeanalytics.googleapis.com' }),
  STRIPE_CLIENT_ID: str({ default: '' }),
  STRIPE_SECRET_KEY: str({ default: '' }),
  STRIPE_CONNECT_URL: str({ default: 'https://connect.stripe.com' }),
  STRIPE_API_URL: str({ default: 'https://api.stripe.com' }),
  PROVIDERS_ALLOW_HTTP: bool({ default: false }),
  ENCRYPTION_KEY: encryptionKey({ default: '' }),
  TRUST_PROXY: trustProxy({ default: false }),
  SHUTDOWN_GRACE_MS: num({ default: 10000 }),
  WEB_CONCURRENCY: num({ default: 1 }),
  VALIDATE_RESPONSES: bool({ default: false }),
  METRICS_PORT: str({ default: '' }),
  METRICS_HOST: str({ default: '127.0.0.1' }),
  METRICS_TOKEN: str({ default: '' }),
};

type Variables = CleanedEnv<typeof VARIABLES>;

/** Reads the configuration of D22 from an environment; throws ConfigError on anything unusable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const reporter = ({ errors }: { errors: Partial<Record<string, Error>> }) => {
    const problems = Object.entries(errors).map(([name, error]) => `${name}: ${error?.message}`);
    if (problems.length > 0) throw new ConfigError(`Invalid configuration: ${problems.join('; ')}`);
  };
  const e = cleanEnv(env, VARIABLES, { reporter });
  const mode = e.SERVICE_MODE;
  const database = databaseSettings(e);
  if (mode === 'production') refuseWhatProductionForbids(e);
  const webhooks = webhookSettings(e);
  const jobs = jobSettings(e);
  const http = httpSettings(e);
  const timings = verificationTimings(e, mode);
  const providers = providerSettings(e);
  const metrics = metricsSettings(e);
  return {
    ...http,
    ...database,
    mode,
    demoApiKey: mode === 'sandbox' ? e.DEMO_API_KEY || PUBLIC_DEMO_API_KEY : null,
    logLevel: e.LOG_LEVEL,
    ...webhooks,
    ...timings,
    ...jobs,
    providers,
    encryptionKey: decodeKey(e.ENCRYPTION_KEY),
    metrics,
  };
}

function databaseSettings(e: Variables): Pick<Config, 'databaseUrl' | 'databaseGroupCommit'> {
  if (!/^(sqlite:|postgres:|postgresql:)/.test(e.DATABASE_URL)) {
    throw new ConfigError('Invalid configuration: DATABASE_URL must start with sqlite:, postgres: or postgresql:');
  }
  return { databaseUrl: e.DATABASE_URL, databaseGroupCommit: e.DATABASE_GROUP_COMMIT === 'on' };
}

function refuseWhatProductionForbids(e: Variables): void {
  if (e.WEBHOOK_ALLOW_PRIVATE_TARGETS) {
    throw new ConfigError('Invalid configuration: WEBHOOK_ALLOW_PRIVATE_TARGETS is refused in production mode');
  }
  if (e.DEMO_API_KEY !== '') throw new ConfigError('Invalid configuration: DEMO_API_KEY exists only in sandbox mode');
  if (e.ENCRYPTION_KEY === '') {
    throw new ConfigError('Invalid configuration: production mode needs ENCRYPTION_KEY (32 bytes, hex or base64)');
  }
  // `true` takes the leftmost X-Forwarded-For entry as the client, and any client writes that
  // entry itself: IP allowlists and per-address limits would then be whatever the caller says.
  // A range of every address (/0) trusts every hop too, as `true` does.
  const everyHop = e.TRUST_PROXY === true || (Array.isArray(e.TRUST_PROXY) && e.TRUST_PROXY.some((entry) => entry.endsWith('/0')));
  if (everyHop) throw new ConfigError(`Invalid configuration: ${TRUST_PROXY_TRUE_REFUSED}`);
}

function webhookSettings(e: Variables): Pick<Config, 'webhookAllowPrivateTargets' | 'webhookRetryScheduleSeconds' | 'webhookTimeoutMs'> {
  if (e.WEBHOOK_TIMEOUT_MS < 100 || e.WEBHOOK_TIMEOUT_MS > 30000) throw new ConfigError('Invalid configuration: WEBHOOK_TIMEOUT_MS must be 100 to 30000');
  return {
    webhookAllowPrivateTargets: e.WEBHOOK_ALLOW_PRIVATE_TARGETS,
    webhookRetryScheduleSeconds: e.WEBHOOK_RETRY_SCHEDULE,
    webhookTimeoutMs: e.WEBHOOK_TIMEOUT_MS,
  };
}

function jobSettings(e: Variables): Pick<Config, 'jobLeaseMs'> {
  if (!Number.isInteger(e.JOB_LEASE_MS) || e.JOB_LEASE_MS < 1000 || e.JOB_LEASE_MS > 3_600_000) {
    throw new ConfigError('Invalid configuration: JOB_LEASE_MS must be a whole number from 1000 to 3600000');
  }
  return { jobLeaseMs: e.JOB_LEASE_MS };
}

function httpSettings(
  e: Variables,
): Pick<Config, 'port' | 'host' | 'publicBaseUrl' | 'trustProxy' | 'shutdownGraceMs' | 'webConcurrency' | 'validateResponses'> {
  if (!Number.isInteger(e.WEB_CONCURRENCY) || e.WEB_CONCURRENCY < 1 || e.WEB_CONCURRENCY > 64) {
    throw new ConfigError('Invalid configuration: WEB_CONCURRENCY must be a whole number from 1 to 64');
  }
  // Server processes share limits, idempotency and jobs through PostgreSQL; SQLite's rate limits live
  // in each process's memory, and a SQLite deployment is one process.
  if (e.WEB_CONCURRENCY > 1 && e.DATABASE_URL.startsWith('sqlite:')) {
    throw new ConfigError('Invalid configuration: WEB_CONCURRENCY above 1 needs PostgreSQL (DATABASE_URL postgres:); a SQLite deployment is one process');
  }
  return {
    port: e.PORT,
    host: e.HOST,
    publicBaseUrl: (e.PUBLIC_BASE_URL || `http://${e.HOST}:${e.PORT}`).replace(/\/+$/, ''),
    trustProxy: e.TRUST_PROXY,
    shutdownGraceMs: e.SHUTDOWN_GRACE_MS,
    webConcurrency: e.WEB_CONCURRENCY,
    validateResponses: e.VALIDATE_RESPONSES,
  };
}

/** How long a verification may take to collect, and how fast the sandbox plays one out. */
function verificationTimings(e: Variables, mode: ServiceMode): Pick<Config, 'processingWindowMs' | 'sandboxCompleteDelayMs' | 'sandboxRefreshIntervalMs'> {
  if (e.PROCESSING_WINDOW_SECONDS < 1) throw new ConfigError('Invalid configuration: PROCESSING_WINDOW_SECONDS must be at least 1');
  if (e.SANDBOX_COMPLETE_DELAY_MS < 0) throw new ConfigError('Invalid configuration: SANDBOX_COMPLETE_DELAY_MS must be >= 0');
  const refreshInterval = e.SANDBOX_REFRESH_INTERVAL_MS === '' ? null : Number(e.SANDBOX_REFRESH_INTERVAL_MS);
  if (refreshInterval !== null && (!/^\d+$/.test(e.SANDBOX_REFRESH_INTERVAL_MS) || refreshInterval < 1000)) {
    throw new ConfigError('Invalid configuration: SANDBOX_REFRESH_INTERVAL_MS must be a whole number of milliseconds, at least 1000');
  }
  // A month is a month for a real creator's grant: a shorter one would read their income more often than they agreed to.
  if (refreshInterval !== null && mode !== 'sandbox') throw new ConfigError('Invalid configuration: SANDBOX_REFRESH_INTERVAL_MS is for the sandbox only');
  return {
    processingWindowMs: e.PROCESSING_WINDOW_SECONDS * 1000,
    sandboxCompleteDelayMs: e.SANDBOX_COMPLETE_DELAY_MS,
    sandboxRefreshIntervalMs: refreshInterval,
  };
}

function providerSettings(e: Variables): Config['providers'] {
  // The stripe package reaches Connect (deauthorize) by host, port and protocol with fixed paths, so
  // a path here would silently be dropped for that call while authorize and token kept it.
  if (e.STRIPE_CLIENT_ID && e.STRIPE_SECRET_KEY && !isOrigin(e.STRIPE_CONNECT_URL)) {
    throw new ConfigError('Invalid configuration: STRIPE_CONNECT_URL must be an http(s) origin without a path, e.g. https://connect.stripe.com');
  }
  return {
    ...(e.GOOGLE_CLIENT_ID && e.GOOGLE_CLIENT_SECRET
      ? {
          google: {
            clientId: e.GOOGLE_CLIENT_ID,
            clientSecret: e.GOOGLE_CLIENT_SECRET,
            authorizationUrl: e.GOOGLE_AUTHORIZATION_URL,
            tokenUrl: e.GOOGLE_TOKEN_URL,
            revokeUrl: e.GOOGLE_REVOKE_URL,
            userinfoUrl: e.GOOGLE_USERINFO_URL,
            apiRootUrl: e.YOUTUBE_ANALYTICS_URL,
          },
        }
      : {}),
    ...(e.STRIPE_CLIENT_ID && e.STRIPE_SECRET_KEY
      ? {
          stripe: {
            clientId: e.STRIPE_CLIENT_ID,
            secretKey: e.STRIPE_SECRET_KEY,
            connectUrl: e.STRIPE_CONNECT_URL.replace(/\/+$/, ''),
            authorizationUrl: `${e.STRIPE_CONNECT_URL.replace(/\/+$/, '')}/oauth/authorize`,
            tokenUrl: `${e.STRIPE_CONNECT_URL.replace(/\/+$/, '')}/oauth/token`,
            apiUrl: e.STRIPE_API_URL,
          },
        }
      : {}),
    allowInsecureRequests: e.PROVIDERS_ALLOW_HTTP,
  };
}

function metricsSettings(e: Variables): Config['metrics'] {
  const metricsPort = e.METRICS_PORT === '' ? null : Number(e.METRICS_PORT);
  if (metricsPort !== null && (!/^\d+$/.test(e.METRICS_PORT) || metricsPort < 1 || metricsPort > 65535 || metricsPort === e.PORT)) {
    throw new ConfigError('Invalid configuration: METRICS_PORT must be a port from 1 to 65535 other than PORT');
  }
  // A bearer token short enough to guess protects nothing.
  if (e.METRICS_TOKEN !== '' && e.METRICS_TOKEN.length < 16) throw new ConfigError('Invalid configuration: METRICS_TOKEN must be at least 16 characters');
  return metricsPort === null ? null : { port: metricsPort, host: e.METRICS_HOST, token: e.METRICS_TOKEN || null };
}
