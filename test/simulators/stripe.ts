/**
 * A local stand-in for Stripe Connect OAuth (connect.stripe.com) and the parts of the Stripe API
 * (api.stripe.com) the service reads, speaking Stripe's wire formats on loopback.
 *
 * Where Stripe's behaviour was checked against public material, the simulator follows it even when
 * it is inconvenient (a platform key without `Stripe-Account` sees the platform's own, empty
 * balance; a reused authorization code revokes the tokens it issued). Where it could not be
 * checked, the choice is listed in test/simulators/README.md.
 */
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';

export interface StripeTransaction {
  /** Minor units; negative for refunds, payouts and fees, as Stripe reports them. */
  amount: number;
  /** Lowercase ISO 4217, as Stripe sends it. */
  currency: string;
  /** Unix seconds. */
  created: number;
  type: 'charge' | 'payment' | 'refund' | 'payout' | 'stripe_fee' | 'adjustment';
  /** Optional fixed id (`txn_...`); generated when absent. */
  id?: string;
  /** Optional fee in minor units; charges and payments otherwise get 2.9% + 30. */
  fee?: number;
}

export interface StripeAccount {
  accountId: string;
  email: string;
  transactions: StripeTransaction[];
  /**
   * Connected to the platform before any OAuth flow. Default false: as on Stripe, the platform
   * reaches an account only after the creator authorized it and the code was exchanged.
   */
  connected?: boolean;
}

export type StripeFault = 'server_error' | 'revoked' | 'slow';

export interface StripeCall {
  method: string;
  path: string;
  query: Record<string, string>;
  headers: Record<string, string>;
  /** Form fields of a POST body, when there was one. */
  body?: Record<string, string>;
}

export interface StripeSimulator {
  baseUrl: string;
  endpoints: { authorize: string; token: string; deauthorize: string; api: string };
  clientId: string;
  secretKey: string;
  addAccount(account: StripeAccount): void;
  inject(fault: StripeFault, options?: { times?: number; slowMs?: number; accountId?: string }): void;
  calls: StripeCall[];
  /** Accounts disconnected at `/oauth/deauthorize`, in order. Refused requests are only in `calls`. */
  deauthorizations: StripeDeauthorization[];
  close(): Promise<void>;
}

export interface StripeDeauthorization {
  /** The `stripe_user_id` that was disconnected. */
  accountId: string;
  clientId: string;
}

export interface StripeSimulatorOptions {
  port?: number;
  /** Decides code expiry and `status`/`available_on`; the project's ManualClock fits. */
  clock?: { now(): Date };
}

const CODE_TTL_MS = 5 * 60 * 1000;
const DEFAULT_SLOW_MS = 2_000;
const SCOPES = ['read_only', 'read_write'] as const;
type Scope = (typeof SCOPES)[number];
const TYPES = new Set(['charge', 'payment', 'refund', 'payout', 'stripe_fee', 'adjustment']);
const REPORTING_CATEGORY: Record<StripeTransaction['type'], string> = {
  charge: 'charge',
  payment: 'charge',
  refund: 'refund',
  payout: 'payout',
  stripe_fee: 'fee',
  adjustment: 'other_adjustment',
};
const SOURCE_PREFIX: Record<StripeTransaction['type'], string | null> = {
  charge: 'ch_',
  payment: 'py_',
  refund: 're_',
  payout: 'po_',
  stripe_fee: null,
  adjustment: null,
};
const LIST_PARAMS = new Set(['limit', 'starting_after', 'ending_before', 'type', 'currency', 'payout', 'source', 'created']);
const CREATED_OPS = ['gt', 'gte', 'lt', 'lte'] as const;

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
function random(length: number): string {
  const bytes = randomBytes(length);
  let out = '';
  for (const byte of bytes) out += ALPHABET[byte % ALPHABET.length];
  return out;
}

/** Stripe never echoes a whole key back; it keeps the mode prefix and the last four characters. */
export function maskKey(key: string): string {
  const prefix = /^(?:sk|rk|pk)_(?:test|live)_/.exec(key)?.[0] ?? '';
  const rest = key.slice(prefix.length);
  return `${prefix}****${rest.length > 4 ? rest.slice(-4) : ''}`;
}

function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string);
}

interface BalanceTransaction {
  id: string;
  seq: number;
  amount: number;
  currency: string;
  created: number;
  type: StripeTransaction['type'];
  fee: number;
  source: string | null;
}

interface AccountState {
  id: string;
  email: string;
  created: number;
  publishableKey: string;
  connected: boolean;
  transactions: BalanceTransaction[];
}

interface Grant {
  accountId: string;
  scope: Scope;
  /** The authorization code the token descends from, so a replayed code can revoke them all. */
  code: string;
}

interface CodeState {
  accountId: string;
  scope: Scope;
  expiresAt: number;
  used: boolean;
}

interface PendingAuthorization {
  redirectUri: string;
  scope: Scope;
  state: string | undefined;
}

interface ActiveFault {
  fault: 'server_error' | 'slow';
  remaining: number;
  slowMs: number;
  accountId: string | undefined;
}

type Caller = { kind: 'platform' } | { kind: 'connected'; accountId: string };

class HttpError {
  constructor(
    readonly status: number,
    readonly body: unknown,
    readonly headers: Record<string, string> = {},
  ) {}
}

function stripeError(status: number, error: Record<string, unknown>, headers?: Record<string, string>): HttpError {
  return new HttpError(status, { error }, headers);
}

function oauthError(status: number, error: string, description: string): HttpError {
  return new HttpError(status, { error, error_description: description });
}

function docUrl(code: string): string {
  return `https://stripe.com/docs/error-codes/${code.replace(/_/g, '-')}`;
}

export async function startStripeSimulator(options: StripeSimulatorOptions = {}): Promise<StripeSimulator> {
  const clock = options.clock ?? { now: () => new Date() };
  const nowMs = () => clock.now().getTime();
  const nowSeconds = () => Math.floor(nowMs() / 1000);

  const clientId = `ca_${random(32)}`;
  const secretKey = `sk_test_${random(99)}`;
  const platform: AccountState = {
    id: `acct_${random(16)}`,
    email: 'platform@simulator.invalid',
    created: nowSeconds(),
    publishableKey: `pk_test_${random(99)}`,
    connected: true,
    transactions: [],
  };

  const accounts = new Map<string, AccountState>();
  const pending = new Map<string, PendingAuthorization>();
  const codes = new Map<string, CodeState>();
  const accessTokens = new Map<string, Grant>();
  const refreshTokens = new Map<string, Grant>();
  const faults: ActiveFault[] = [];
  const calls: StripeCall[] = [];
  const deauthorizations: StripeDeauthorization[] = [];
  const sleepers = new Set<{ timer: NodeJS.Timeout; wake: () => void }>();
  let seq = 0;
  let closing = false;

  const revokeTokens = (predicate: (grant: Grant) => boolean) => {
    for (const [token, grant] of accessTokens) if (predicate(grant)) accessTokens.delete(token);
    for (const [token, grant] of refreshTokens) if (predicate(grant)) refreshTokens.delete(token);
  };

  const disconnect = (account: AccountState) => {
    account.connected = false;
    revokeTokens((grant) => grant.accountId === account.id);
    for (const [code, state] of codes) if (state.accountId === account.id) codes.delete(code);
  };

  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const entry = {
        timer: setTimeout(() => {
          sleepers.delete(entry);
          resolve();
        }, ms),
        wake: resolve,
      };
      sleepers.add(entry);
    });

  const toBalanceTransaction = (t: StripeTransaction): BalanceTransaction => {
    if (!Number.isSafeInteger(t.amount)) throw new TypeError(`amount must be an integer in minor units, got ${t.amount}`);
    if (!/^[a-z]{3}$/.test(t.currency)) throw new TypeError(`currency must be lowercase ISO 4217 as Stripe sends it, got ${JSON.stringify(t.currency)}`);
    if (!Number.isSafeInteger(t.created) || t.created < 0 || t.created > 1e11) throw new TypeError(`created must be unix seconds, got ${t.created}`);
    if (!TYPES.has(t.type)) throw new TypeError(`unsupported type ${JSON.stringify(t.type)}`);
    if (t.id !== undefined && !/^txn_[A-Za-z0-9]+$/.test(t.id)) throw new TypeError(`id must look like txn_..., got ${JSON.stringify(t.id)}`);
    const earns = t.type === 'charge' || t.type === 'payment';
    const fee = t.fee ?? (earns && t.amount > 0 ? Math.round(t.amount * 0.029) + 30 : 0);
    const prefix = SOURCE_PREFIX[t.type];
    return {
      id: t.id ?? `txn_${random(24)}`,
      seq: seq++,
      amount: t.amount,
      currency: t.currency,
      created: t.created,
      type: t.type,
      fee,
      source: prefix ? `${prefix}${random(24)}` : null,
    };
  };

  const renderTransaction = (t: BalanceTransaction) => {
    // Card funds settle two days later; everything else moves the balance at once.
    const availableOn = t.type === 'charge' || t.type === 'payment' ? t.created + 2 * 86_400 : t.created;
    return {
      id: t.id,
      object: 'balance_transaction',
      amount: t.amount,
      available_on: availableOn,
      created: t.created,
      currency: t.currency,
      description: null,
      exchange_rate: null,
      fee: t.fee,
      fee_details: t.fee === 0 ? [] : [{ amount: t.fee, application: null, currency: t.currency, description: 'Stripe processing fees', type: 'stripe_fee' }],
      net: t.amount - t.fee,
      reporting_category: REPORTING_CATEGORY[t.type],
      source: t.source,
      status: availableOn <= nowSeconds() ? 'available' : 'pending',
      type: t.type,
    };
  };

  const renderAccount = (a: AccountState) => ({
    id: a.id,
    object: 'account',
    business_profile: { name: null, support_email: null, url: null },
    business_type: null,
    capabilities: {},
    charges_enabled: true,
    controller: { type: 'account' },
    country: 'US',
    created: a.created,
    default_currency: 'usd',
    details_submitted: true,
    email: a.email,
    metadata: {},
    payouts_enabled: true,
    type: 'standard',
  });

  // ---------------------------------------------------------------- HTTP plumbing

  const readBody = (req: http.IncomingMessage) =>
    new Promise<string>((resolve, reject) => {
      let size = 0;
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > 1_000_000) {
          reject(new HttpError(413, { error: { type: 'invalid_request_error', message: 'Request body too large.' } }));
          req.destroy();
        } else chunks.push(chunk);
      });
      req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
      req.on('error', reject);
    });

  const send = (res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    if (res.headersSent || res.destroyed) return;
    const text = JSON.stringify(body, null, 2);
    res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Cache-Control': 'no-cache, no-store', ...headers });
    res.end(text);
  };

  const sendHtml = (res: http.ServerResponse, status: number, html: string) => {
    if (res.headersSent || res.destroyed) return;
    res.writeHead(status, { 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-store' });
    res.end(html);
  };

  const redirect = (res: http.ServerResponse, target: string, params: Record<string, string | undefined>) => {
    const url = new URL(target);
    for (const [key, value] of Object.entries(params)) if (value !== undefined) url.searchParams.append(key, value);
    res.writeHead(302, { Location: url.toString(), 'Cache-Control': 'no-store' });
    res.end();
  };

  const page = (title: string, body: string) =>
    `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>
body{font-family:system-ui,sans-serif;max-width:40rem;margin:2rem auto;padding:0 1rem;color:#1a1a1a;background:#fff}
button{font:inherit;padding:.5rem 1rem;margin:.25rem 0;border:2px solid #1a1a1a;border-radius:4px;background:#fff;color:#1a1a1a;cursor:pointer}
button:focus-visible{outline:3px solid #0a58ca;outline-offset:2px}
ul{list-style:none;padding:0}li{margin:1rem 0}
</style>
</head>
<body>
<main>
${body}
</main>
</body>
</html>
`;

  const errorPage = (res: http.ServerResponse, message: string) =>
    sendHtml(res, 400, page('Stripe Connect: error', `<h1>Something went wrong</h1>\n<p role="alert">${escapeHtml(message)}</p>`));

  // ---------------------------------------------------------------- OAuth: authorize

  const authorizeGet = (res: http.ServerResponse, query: Record<string, string>) => {
    // Stripe shows an error page (never redirects) until it trusts the client and the redirect target.
    if (!query.client_id) return errorPage(res, 'Missing required param: client_id.');
    if (query.client_id !== clientId) return errorPage(res, `No such application: '${query.client_id}'.`);
    const redirectUri = query.redirect_uri;
    if (!redirectUri) return errorPage(res, 'Missing required param: redirect_uri (this simulator has no default redirect URI).');
    let parsed: URL;
    try {
      parsed = new URL(redirectUri);
    } catch {
      return errorPage(res, `Invalid redirect URI '${redirectUri}'.`);
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return errorPage(res, `Invalid redirect URI '${redirectUri}'.`);
    const state = query.state;
    if (query.response_type !== 'code') {
      return redirect(res, redirectUri, {
        error: 'unsupported_response_type',
        error_description: `Invalid response_type: ${query.response_type ?? ''}. The only supported response_type is 'code'.`,
        state,
      });
    }
    const scope = query.scope ?? 'read_only';
    if (!(SCOPES as readonly string[]).includes(scope)) {
      return redirect(res, redirectUri, { error: 'invalid_scope', error_description: `Invalid scope: ${scope}. Use read_only or read_write.`, state });
    }

    const authorization = random(24);
    pending.set(authorization, { redirectUri, scope: scope as Scope, state });
    const hidden = `<input type="hidden" name="authorization" value="${authorization}">`;
    const list = [...accounts.values()]
      .map(
        (a) => `<li>
<form method="post" action="/oauth/authorize">
${hidden}
<input type="hidden" name="account" value="${escapeHtml(a.id)}">
<p id="label-${escapeHtml(a.id)}">${escapeHtml(a.email)} <span>(${escapeHtml(a.id)})</span></p>
<button type="submit" name="decision" value="connect" aria-describedby="label-${escapeHtml(a.id)}">Connect</button>
</form>
</li>`,
      )
      .join('\n');
    const access = scope === 'read_only' ? 'view your Stripe data (read only)' : 'view and change your Stripe data';
    sendHtml(
      res,
      200,
      page(
        'Connect with Stripe (simulator)',
        `<h1>Connect your Stripe account</h1>
<p>The platform <strong>${escapeHtml(clientId)}</strong> asks to ${access}.</p>
<h2>Choose an account</h2>
${list ? `<ul>\n${list}\n</ul>` : '<p>No accounts have been added to this simulator.</p>'}
<form method="post" action="/oauth/authorize">
${hidden}
<button type="submit" name="decision" value="deny">Deny</button>
</form>`,
      ),
    );
  };

  const authorizePost = (res: http.ServerResponse, form: Record<string, string>) => {
    const request = form.authorization ? pending.get(form.authorization) : undefined;
    if (!request) return errorPage(res, 'This authorization request is unknown or was already answered. Start again from the platform.');
    if (form.decision === 'deny') {
      pending.delete(form.authorization as string);
      return redirect(res, request.redirectUri, { error: 'access_denied', error_description: 'The user denied your request', state: request.state });
    }
    if (form.decision !== 'connect') return errorPage(res, 'Choose Connect or Deny.');
    const account = form.account ? accounts.get(form.account) : undefined;
    if (!account) return errorPage(res, `No such account: '${form.account ?? ''}'.`);
    pending.delete(form.authorization as string);
    const code = `ac_${random(32)}`;
    codes.set(code, { accountId: account.id, scope: request.scope, expiresAt: nowMs() + CODE_TTL_MS, used: false });
    redirect(res, request.redirectUri, { code, scope: request.scope, state: request.state });
  };

  // ---------------------------------------------------------------- OAuth: token and deauthorize

  /** The platform authenticates with its secret key: Bearer, Basic (`-u sk_...:`) or `client_secret`. */
  const presentedKey = (req: http.IncomingMessage, form?: Record<string, string>): string | undefined => {
    const header = req.headers.authorization;
    if (header) {
      const [scheme, value = ''] = header.split(/\s+/, 2) as [string, string?];
      if (/^bearer$/i.test(scheme)) return value;
      if (/^basic$/i.test(scheme)) return Buffer.from(value, 'base64').toString('utf8').split(':')[0] ?? '';
      return header;
    }
    return form?.client_secret;
  };

  const authenticatePlatform = (req: http.IncomingMessage, form: Record<string, string>) => {
    const key = presentedKey(req, form);
    if (!key) {
      throw oauthError(
        401,
        'invalid_client',
        'No authentication credentials were provided. Send your secret API key in the Authorization header using the Bearer authentication method, or as the client_secret parameter.',
      );
    }
    if (key !== secretKey) throw oauthError(401, 'invalid_client', `No such API key: ${maskKey(key)}`);
    if (form.client_id !== undefined && form.client_id !== clientId) throw oauthError(401, 'invalid_client', `No such application: '${form.client_id}'`);
  };

  const issueTokens = (grant: Grant, refreshToken: string) => {
    const accessToken = `sk_test_${random(99)}`;
    accessTokens.set(accessToken, grant);
    const account = accounts.get(grant.accountId) as AccountState;
    return {
      access_token: accessToken,
      livemode: false,
      refresh_token: refreshToken,
      token_type: 'bearer',
      stripe_publishable_key: account.publishableKey,
      stripe_user_id: account.id,
      scope: grant.scope,
    };
  };

  const token = (req: http.IncomingMessage, form: Record<string, string>) => {
    authenticatePlatform(req, form);
    const grantType = form.grant_type;
    if (!grantType) throw oauthError(400, 'invalid_request', 'No grant type specified');

    if (grantType === 'authorization_code') {
      const code = form.code;
      if (!code) throw oauthError(400, 'invalid_request', 'No authorization code provided');
      const state = codes.get(code);
      if (!state) throw oauthError(400, 'invalid_grant', `Authorization code does not exist: ${code}`);
      if (state.used) {
        // A replayed code means it may have leaked, so Stripe (like RFC 6749 §4.1.2) revokes what it issued.
        revokeTokens((grant) => grant.code === code);
        throw oauthError(400, 'invalid_grant', 'This authorization code has already been used. All tokens issued with this code have been revoked.');
      }
      if (nowMs() >= state.expiresAt) throw oauthError(400, 'invalid_grant', `Authorization code expired: ${code}`);
      state.used = true;
      const account = accounts.get(state.accountId) as AccountState;
      account.connected = true;
      const grant: Grant = { accountId: account.id, scope: state.scope, code };
      const refreshToken = `rt_${random(48)}`;
      refreshTokens.set(refreshToken, grant);
      return issueTokens(grant, refreshToken);
    }

    if (grantType === 'refresh_token') {
      const refreshToken = form.refresh_token;
      if (!refreshToken) throw oauthError(400, 'invalid_request', 'No refresh token provided');
      const grant = refreshTokens.get(refreshToken);
      if (!grant) throw oauthError(400, 'invalid_grant', `Refresh token does not exist: ${refreshToken}`);
      const scope = form.scope ?? grant.scope;
      if (!(SCOPES as readonly string[]).includes(scope)) throw oauthError(400, 'invalid_scope', `Invalid scope: ${scope}`);
      if (scope === 'read_write' && grant.scope === 'read_only') {
        throw oauthError(400, 'invalid_scope', 'A refresh token can only mint an access token of equal or lesser scope than it was granted (read_only).');
      }
      return issueTokens({ ...grant, scope: scope as Scope }, refreshToken);
    }

    throw oauthError(400, 'unsupported_grant_type', `Unsupported grant type: ${grantType}. Use authorization_code or refresh_token.`);
  };

  const deauthorize = async (req: http.IncomingMessage, form: Record<string, string>) => {
    // Faults are matched as on /v1: an incident strikes any call before authentication, a fault for
    // one account only the calls naming it, so a caller's retry can be tested either way.
    await consumeFaults(undefined);
    authenticatePlatform(req, form);
    if (!form.client_id) throw oauthError(400, 'invalid_request', 'No client_id provided');
    if (!form.stripe_user_id) throw oauthError(400, 'invalid_request', 'No stripe_user_id provided');
    await consumeFaults(form.stripe_user_id);
    const account = accounts.get(form.stripe_user_id);
    if (!account || !account.connected) {
      throw oauthError(401, 'invalid_client', `This application is not connected to stripe account ${form.stripe_user_id}, or that account does not exist.`);
    }
    disconnect(account);
    deauthorizations.push({ accountId: account.id, clientId: form.client_id });
    return { stripe_user_id: account.id };
  };

  // ---------------------------------------------------------------- API

  const noAccess = (key: string, accountId: string) =>
    // What Stripe answers when the platform's access was revoked or never existed: 403, account_invalid.
    stripeError(403, {
      code: 'account_invalid',
      doc_url: docUrl('account_invalid'),
      message: `The provided key '${maskKey(key)}' does not have access to account '${accountId}' (or that account does not exist). Application access may have been revoked.`,
      type: 'invalid_request_error',
    });

  const authenticateApi = (req: http.IncomingMessage): { caller: Caller; key: string } => {
    const key = presentedKey(req);
    const unauthorized = { 'WWW-Authenticate': 'Basic realm="Stripe"' };
    if (!key) {
      throw stripeError(
        401,
        {
          message:
            "You did not provide an API key. You need to provide your API key in the Authorization header, using Bearer auth (e.g. 'Authorization: Bearer YOUR_SECRET_KEY'). See https://stripe.com/docs/api#authentication for details, or we can help at https://support.stripe.com/.",
          type: 'invalid_request_error',
        },
        unauthorized,
      );
    }
    const header = req.headers['stripe-account'];
    const stripeAccount = Array.isArray(header) ? header[0] : header;
    if (key === secretKey) {
      if (stripeAccount === undefined || stripeAccount === platform.id) return { caller: { kind: 'platform' }, key };
      const account = accounts.get(stripeAccount);
      if (!account || !account.connected) throw noAccess(key, stripeAccount);
      return { caller: { kind: 'connected', accountId: account.id }, key };
    }
    const grant = accessTokens.get(key);
    // Revoked access tokens are simply gone, as a rolled key is: Stripe no longer knows them.
    if (!grant) throw stripeError(401, { message: `Invalid API Key provided: ${maskKey(key)}`, type: 'invalid_request_error' }, unauthorized);
    if (stripeAccount !== undefined && stripeAccount !== grant.accountId) throw noAccess(key, stripeAccount);
    return { caller: { kind: 'connected', accountId: grant.accountId }, key };
  };

  const parseInteger = (param: string, raw: string) => {
    if (!/^-?\d+$/.test(raw)) {
      throw stripeError(400, {
        code: 'parameter_invalid_integer',
        doc_url: docUrl('parameter_invalid_integer'),
        message: `Invalid integer: ${raw}`,
        param,
        type: 'invalid_request_error',
      });
    }
    return Number(raw);
  };

  const listBalanceTransactions = (account: AccountState, query: Record<string, string>) => {
    for (const key of Object.keys(query)) {
      const base = key.replace(/\[.*$/, '');
      const knownCreated = key === 'created' || CREATED_OPS.some((op) => key === `created[${op}]`);
      if (key.startsWith('expand')) continue;
      if (base === 'created' ? !knownCreated : !LIST_PARAMS.has(key)) {
        throw stripeError(400, {
          code: 'parameter_unknown',
          doc_url: docUrl('parameter_unknown'),
          message: `Received unknown parameter: ${key}`,
          param: key,
          type: 'invalid_request_error',
        });
      }
    }
    let limit = 10;
    if (query.limit !== undefined) {
      limit = parseInteger('limit', query.limit);
      if (limit < 1 || limit > 100)
        throw stripeError(400, { message: 'Invalid limit: must be between 1 and 100', param: 'limit', type: 'invalid_request_error' });
    }
    if (query.starting_after !== undefined && query.ending_before !== undefined) {
      throw stripeError(400, {
        message: 'You may only specify one of these parameters: ending_before, starting_after.',
        param: 'ending_before',
        type: 'invalid_request_error',
      });
    }
    const bounds: Partial<Record<(typeof CREATED_OPS)[number] | 'eq', number>> = {};
    if (query.created !== undefined) bounds.eq = parseInteger('created', query.created);
    for (const op of CREATED_OPS) {
      const raw = query[`created[${op}]`];
      if (raw !== undefined) bounds[op] = parseInteger(`created[${op}]`, raw);
    }

    // Newest first, as Stripe lists; creation order breaks ties so cursors stay stable.
    const newestFirst = (a: BalanceTransaction, b: BalanceTransaction) => b.created - a.created || b.seq - a.seq;
    const all = [...account.transactions].sort(newestFirst);
    const matches = all.filter(
      (t) =>
        (bounds.eq === undefined || t.created === bounds.eq) &&
        (bounds.gt === undefined || t.created > bounds.gt) &&
        (bounds.gte === undefined || t.created >= bounds.gte) &&
        (bounds.lt === undefined || t.created < bounds.lt) &&
        (bounds.lte === undefined || t.created <= bounds.lte) &&
        (query.type === undefined || t.type === query.type) &&
        (query.currency === undefined || t.currency === query.currency) &&
        (query.source === undefined || t.source === query.source),
    );

    const cursorParam = query.starting_after !== undefined ? 'starting_after' : query.ending_before !== undefined ? 'ending_before' : undefined;
    let data: BalanceTransaction[];
    let hasMore: boolean;
    if (cursorParam) {
      const cursorId = query[cursorParam] as string;
      // The cursor is a position in the whole list, so it may itself lie outside the created filter.
      const cursor = all.find((t) => t.id === cursorId);
      if (!cursor) {
        throw stripeError(400, {
          code: 'resource_missing',
          doc_url: docUrl('resource_missing'),
          message: `No such balance transaction: '${cursorId}'`,
          param: cursorParam,
          type: 'invalid_request_error',
        });
      }
      if (cursorParam === 'starting_after') {
        const after = matches.filter((t) => newestFirst(cursor, t) < 0);
        data = after.slice(0, limit);
        hasMore = after.length > limit;
      } else {
        const before = matches.filter((t) => newestFirst(t, cursor) < 0);
        data = before.slice(Math.max(0, before.length - limit));
        hasMore = before.length > limit;
      }
    } else {
      data = matches.slice(0, limit);
      hasMore = matches.length > limit;
    }
    return { object: 'list', data: data.map(renderTransaction), has_more: hasMore, url: '/v1/balance_transactions' };
  };

  const consumeFaults = async (accountId: string | undefined) => {
    let failure: HttpError | undefined;
    for (const fault of [...faults]) {
      if (fault.accountId !== accountId) continue;
      fault.remaining -= 1;
      if (fault.remaining <= 0) faults.splice(faults.indexOf(fault), 1);
      if (fault.fault === 'slow') await sleep(fault.slowMs);
      else {
        failure ??= stripeError(500, {
          message:
            "Sorry, something went wrong. We've already been notified of the problem, but if you need any help, you can reach us at support.stripe.com/contact.",
          type: 'api_error',
        });
      }
    }
    if (failure) throw failure;
  };

  const api = async (req: http.IncomingMessage, path: string, query: Record<string, string>) => {
    // Faults not tied to an account stand for a Stripe-wide incident, so they strike before authentication.
    await consumeFaults(undefined);
    const { caller, key } = authenticateApi(req);
    const target = caller.kind === 'platform' ? platform : (accounts.get(caller.accountId) as AccountState);
    if (caller.kind === 'connected') await consumeFaults(caller.accountId);

    const method = req.method ?? 'GET';
    const unrecognized = () =>
      stripeError(404, {
        message: `Unrecognized request URL (${method}: ${path}). Please see https://stripe.com/docs or we can help at https://support.stripe.com/.`,
        type: 'invalid_request_error',
      });
    if (method !== 'GET') throw unrecognized();
    if (path === '/v1/balance_transactions') return listBalanceTransactions(target, query);
    if (path === '/v1/account') return renderAccount(target);
    const match = /^\/v1\/accounts\/([^/]+)$/.exec(path);
    if (match) {
      const id = decodeURIComponent(match[1] as string);
      if (id === target.id) return renderAccount(target);
      const account = accounts.get(id);
      if (caller.kind === 'platform' && account?.connected) return renderAccount(account);
      throw noAccess(key, id);
    }
    throw unrecognized();
  };

  // ---------------------------------------------------------------- server

  const handle = async (req: http.IncomingMessage, res: http.ServerResponse) => {
    res.setHeader('Request-Id', `req_${random(14)}`);
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const path = url.pathname;
    const query: Record<string, string> = {};
    for (const [key, value] of url.searchParams) query[key] = value;
    const headers: Record<string, string> = {};
    for (const [key, value] of Object.entries(req.headers)) if (value !== undefined) headers[key] = Array.isArray(value) ? value.join(', ') : value;
    const call: StripeCall = { method: req.method ?? 'GET', path, query, headers };
    calls.push(call);

    try {
      let form: Record<string, string> = {};
      if (req.method === 'POST') {
        const raw = await readBody(req);
        // Stripe's v1 and OAuth endpoints read form encoding only; a JSON body arrives as no parameters.
        const type = req.headers['content-type'] ?? '';
        if (type.startsWith('application/x-www-form-urlencoded')) form = Object.fromEntries(new URLSearchParams(raw));
        call.body = form;
      }

      if (path === '/oauth/authorize' && req.method === 'GET') return authorizeGet(res, query);
      if (path === '/oauth/authorize' && req.method === 'POST') return authorizePost(res, form);
      if (path === '/oauth/token' && req.method === 'POST') return send(res, 200, token(req, { ...query, ...form }));
      if (path === '/oauth/deauthorize' && req.method === 'POST') return send(res, 200, await deauthorize(req, { ...query, ...form }));
      if (path.startsWith('/v1/')) {
        const version = req.headers['stripe-version'];
        res.setHeader('Stripe-Version', (Array.isArray(version) ? version[0] : version) ?? '2024-06-20');
        const body = await api(req, path, query);
        return send(res, 200, body);
      }
      send(res, 404, {
        error: {
          message: `Unrecognized request URL (${req.method}: ${path}). Please see https://stripe.com/docs or we can help at https://support.stripe.com/.`,
          type: 'invalid_request_error',
        },
      });
    } catch (error) {
      if (error instanceof HttpError) return send(res, error.status, error.body, error.headers);
      send(res, 500, { error: { type: 'api_error', message: `Simulator failure: ${error instanceof Error ? error.message : String(error)}` } });
    }
  };

  const server = http.createServer((req, res) => {
    void handle(req, res);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const baseUrl = `http://127.0.0.1:${port}`;

  return {
    baseUrl,
    endpoints: {
      authorize: `${baseUrl}/oauth/authorize`,
      token: `${baseUrl}/oauth/token`,
      deauthorize: `${baseUrl}/oauth/deauthorize`,
      api: baseUrl,
    },
    clientId,
    secretKey,
    calls,
    deauthorizations,
    addAccount(account) {
      if (!/^acct_[A-Za-z0-9]+$/.test(account.accountId)) throw new TypeError(`accountId must look like acct_..., got ${JSON.stringify(account.accountId)}`);
      const transactions = account.transactions.map(toBalanceTransaction);
      const ids = new Set(transactions.map((t) => t.id));
      if (ids.size !== transactions.length) throw new TypeError(`duplicate transaction ids in ${account.accountId}`);
      const existing = accounts.get(account.accountId);
      // Re-adding replaces the data but keeps the connection, so a test can grow an account mid-flow.
      accounts.set(account.accountId, {
        id: account.accountId,
        email: account.email,
        created: existing?.created ?? nowSeconds(),
        publishableKey: existing?.publishableKey ?? `pk_test_${random(99)}`,
        connected: account.connected ?? existing?.connected ?? false,
        transactions,
      });
    },
    inject(fault, injectOptions = {}) {
      const { accountId } = injectOptions;
      if (accountId !== undefined && !accounts.has(accountId)) throw new Error(`inject: no account ${accountId} was added`);
      if (fault === 'revoked') {
        for (const account of accounts.values()) if (accountId === undefined || account.id === accountId) disconnect(account);
        return;
      }
      if (fault !== 'server_error' && fault !== 'slow') throw new Error(`inject: unknown fault ${String(fault)}`);
      const times = injectOptions.times ?? 1;
      if (!Number.isInteger(times) || times < 1) throw new Error(`inject: times must be a positive integer, got ${times}`);
      faults.push({ fault, remaining: times, slowMs: injectOptions.slowMs ?? DEFAULT_SLOW_MS, accountId });
    },
    async close() {
      if (closing) return;
      closing = true;
      for (const sleeper of sleepers) {
        clearTimeout(sleeper.timer);
        sleeper.wake();
      }
      sleepers.clear();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
  };
}
