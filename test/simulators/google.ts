/**
 * Local stand-in for Google OAuth 2.0 (web-server flow with PKCE), the OpenID Connect userinfo
 * endpoint and the YouTube Analytics API v2 `reports.query` method, for tests only. It listens on
 * 127.0.0.1 and answers with Google's wire formats so the service's client code runs unchanged
 * against it; see test/simulators/README.md for what is simulated and where it is simplified.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface GoogleAccount {
  email: string;
  channelId: string;
  currency: string;
  monthlyRevenue: Record<string /* YYYY-MM */, number>;
}

export type GoogleFault =
  | 'server_error' /* 503 on the next API, token or revoke call */
  | 'revoked' /* the account's tokens are revoked: token refresh → invalid_grant, API → 401 */
  | 'slow' /* the next API call answers after slowMs */
  | 'slow_token'; /* the next token call answers after slowMs */

export interface GoogleSimulator {
  baseUrl: string;
  endpoints: { authorize: string; token: string; revoke: string; userinfo: string; analyticsReports: string };
  clientId: string;
  clientSecret: string;
  addAccount(account: GoogleAccount): void;
  inject(fault: GoogleFault, options?: { times?: number; slowMs?: number; email?: string }): void;
  /** Calls received, for assertions: method, path, query, form body (secrets are not redacted). */
  calls: Array<{ method: string; path: string; query: Record<string, string>; body: Record<string, string> }>;
  /** Consents ended at `/revoke`, in order: whose, and which of its tokens was presented. Refused revocations are only in `calls`. */
  revocations: GoogleRevocation[];
  close(): Promise<void>;
}

export interface GoogleRevocation {
  email: string;
  /** Which kind of token the request presented (named as RFC 7009's token_type_hint values). */
  tokenType: 'access_token' | 'refresh_token';
  token: string;
}

export interface GoogleSimulatorOptions {
  port?: number;
  clientId?: string;
  clientSecret?: string;
  /**
   * Redirect URIs registered for the client (exact match, as in the Cloud console). Without it any
   * https URI, or http URI on a loopback host, is accepted, so tests need not know the service's port.
   */
  redirectUris?: string[];
  /** Source of time for code and token expiry; a src/platform/clock.ts ManualClock fits. */
  clock?: { now(): Date };
}

export const GOOGLE_SCOPES = {
  monetary: 'https://www.googleapis.com/auth/yt-analytics-monetary.readonly',
  analytics: 'https://www.googleapis.com/auth/yt-analytics.readonly',
  youtubeReadonly: 'https://www.googleapis.com/auth/youtube.readonly',
  userinfoEmail: 'https://www.googleapis.com/auth/userinfo.email',
  userinfoProfile: 'https://www.googleapis.com/auth/userinfo.profile',
} as const;

/**
 * Units of each currency per US dollar. Fixed so converted figures are reproducible; Google uses
 * daily rates. Revenue is held in the account's currency and converted through USD.
 */
export const USD_EXCHANGE_RATES: Readonly<Record<string, number>> = {
  USD: 1,
  EUR: 0.92,
  GBP: 0.79,
  CAD: 1.36,
  AUD: 1.52,
  JPY: 150,
};

export const ACCESS_TOKEN_TTL_SECONDS = 3599;
export const AUTHORIZATION_CODE_TTL_MS = 10 * 60 * 1000;
const DEFAULT_SLOW_MS = 2000;
const MAX_BODY_BYTES = 1024 * 1024;

const PATHS = {
  authorize: '/o/oauth2/v2/auth',
  token: '/token',
  revoke: '/revoke',
  userinfo: '/v1/userinfo',
  analyticsReports: '/v2/reports',
  discovery: '/.well-known/openid-configuration',
} as const;

const SCOPE_DESCRIPTIONS: Record<string, string> = {
  openid: 'Associate you with your personal info on Google',
  email: 'See your primary Google Account email address',
  profile: 'See your personal info, including any personal info you have made publicly available',
  [GOOGLE_SCOPES.userinfoEmail]: 'See your primary Google Account email address',
  [GOOGLE_SCOPES.userinfoProfile]: 'See your personal info, including any personal info you have made publicly available',
  [GOOGLE_SCOPES.monetary]: 'View monetary and non-monetary YouTube Analytics reports for your YouTube content',
  [GOOGLE_SCOPES.analytics]: 'View YouTube Analytics reports for your YouTube content',
  [GOOGLE_SCOPES.youtubeReadonly]: 'View your YouTube account',
};

// Sign-in scopes cannot be unticked on Google's granular consent screen; the others can.
const IDENTITY_SCOPES = new Set<string>(['openid', 'email', 'profile', GOOGLE_SCOPES.userinfoEmail, GOOGLE_SCOPES.userinfoProfile]);

// Google answers with the URL form of the short sign-in scopes, and a client that looks for the
// literal "email" in the granted scope would break in production; so does this simulator.
const SCOPE_EXPANSION: Record<string, string> = { email: GOOGLE_SCOPES.userinfoEmail, profile: GOOGLE_SCOPES.userinfoProfile };

// Real metric names the simulator does not serve get "query not supported" rather than
// "unknown identifier", as Google would give for a valid metric in an unsupported combination.
const KNOWN_UNSERVED_METRICS = new Set([
  'views',
  'estimatedMinutesWatched',
  'likes',
  'comments',
  'shares',
  'subscribersGained',
  'estimatedAdRevenue',
  'grossRevenue',
  'cpm',
  'playbackBasedCpm',
  'adImpressions',
  'monetizedPlaybacks',
]);

const QUERY_NOT_SUPPORTED =
  'The query is not supported. Check the documentation at https://developers.google.com/youtube/analytics/v2/available_reports for a list of supported queries.';

interface AccountRecord extends GoogleAccount {
  sub: string;
}

interface AuthRequest {
  clientId: string;
  redirectUri: string;
  scopes: string[];
  state: string | undefined;
  codeChallenge: string;
  offline: boolean;
  promptNone: boolean;
}

interface CodeRecord {
  clientId: string;
  redirectUri: string;
  codeChallenge: string;
  scopes: string[];
  email: string;
  offline: boolean;
  expiresAt: number;
  used: boolean;
}

/** One consent: the refresh token and every access token minted from it live and die together. */
interface Grant {
  email: string;
  clientId: string;
  scopes: string[];
  revoked: boolean;
  refreshToken: string | undefined;
  accessTokens: Set<string>;
}

interface AccessTokenRecord {
  grant: Grant;
  expiresAt: number;
}

interface QueuedFault {
  kind: 'server_error' | 'slow' | 'slow_token';
  remaining: number;
  slowMs: number;
  email: string | undefined;
}

type Form = URLSearchParams;

class HttpError {
  constructor(
    readonly status: number,
    readonly body: unknown,
    readonly headers: Record<string, string> = {},
  ) {}
}

export async function startGoogleSimulator(options: GoogleSimulatorOptions = {}): Promise<GoogleSimulator> {
  const clientId = options.clientId ?? '1234567890-simulator.apps.googleusercontent.com';
  const clientSecret = options.clientSecret ?? 'GOCSPX-simulator-client-secret';
  const registeredRedirectUris = options.redirectUris;
  const now = (): number => (options.clock ? options.clock.now().getTime() : Date.now());

  const accounts = new Map<string, AccountRecord>();
  const codes = new Map<string, CodeRecord>();
  const grants: Grant[] = [];
  const accessTokens = new Map<string, AccessTokenRecord>();
  const refreshTokens = new Map<string, Grant>();
  const faults: QueuedFault[] = [];
  const calls: GoogleSimulator['calls'] = [];
  const revocations: GoogleRevocation[] = [];
  const pendingDelays = new Set<{ timer: NodeJS.Timeout; resolve: () => void }>();
  let closed = false;
  let baseUrl = '';

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) sendJson(res, 500, { error: { code: 500, message: String(error), status: 'INTERNAL' } });
      else res.destroy();
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', baseUrl);
    const method = req.method ?? 'GET';
    const raw = await readBody(req);
    if (raw === undefined) return sendJson(res, 413, { error: 'invalid_request', error_description: 'Request body too large.' });
    const form = isForm(req) ? new URLSearchParams(raw) : new URLSearchParams();
    calls.push({ method, path: url.pathname, query: flatten(url.searchParams), body: flatten(form) });

    try {
      switch (url.pathname) {
        case PATHS.authorize:
          if (method === 'GET') return authorizePage(res, url.searchParams);
          if (method === 'POST') return authorizeDecision(res, form);
          return methodNotAllowed(res);
        case PATHS.token:
          if (method !== 'POST') return methodNotAllowed(res);
          return await tokenEndpoint(req, res, form);
        case PATHS.revoke:
          if (method !== 'POST') return methodNotAllowed(res);
          return revokeEndpoint(res, url.searchParams, form);
        case PATHS.userinfo:
          if (method !== 'GET' && method !== 'POST') return methodNotAllowed(res);
          return userinfoEndpoint(req, res);
        case PATHS.analyticsReports:
          if (method !== 'GET') return methodNotAllowed(res);
          return await reportsEndpoint(req, res, url.searchParams);
        case PATHS.discovery:
          return sendJson(res, 200, discoveryDocument());
        default:
          return sendHtml(
            res,
            404,
            page('Error 404 (Not Found)', `<h1>404. That’s an error.</h1><p>The requested URL ${escapeHtml(url.pathname)} was not found on this server.</p>`),
          );
      }
    } catch (error) {
      if (error instanceof HttpError) return sendJson(res, error.status, error.body, error.headers);
      throw error;
    }
  }

  // ---------------------------------------------------------------- authorization endpoint

  function validateAuthRequest(params: URLSearchParams): AuthRequest | { status: number; error: string; message: string } {
    const fail = (error: string, message: string) => ({ status: 400, error, message });
    const requestedClient = params.get('client_id');
    if (!requestedClient) return fail('invalid_request', 'Missing required parameter: client_id');
    if (requestedClient !== clientId) return fail('invalid_client', 'The OAuth client was not found.');
    const redirectUri = params.get('redirect_uri');
    if (!redirectUri) return fail('invalid_request', 'Missing required parameter: redirect_uri');
    if (!redirectUriAllowed(redirectUri)) {
      return fail('redirect_uri_mismatch', `The redirect URI in the request, ${redirectUri}, does not match the ones authorized for the OAuth client.`);
    }
    const responseType = params.get('response_type');
    if (!responseType) return fail('invalid_request', 'Missing required parameter: response_type');
    if (responseType !== 'code') return fail('unsupported_response_type', `Invalid response_type: ${responseType}`);
    const scope = params.get('scope');
    if (!scope || !scope.trim()) return fail('invalid_request', 'Missing required parameter: scope');
    const scopes = unique(scope.trim().split(/\s+/));
    const invalid = scopes.filter((s) => !(s in SCOPE_DESCRIPTIONS));
    if (invalid.length > 0) return fail('invalid_scope', `Some requested scopes were invalid. {invalid=[${invalid.join(', ')}]}`);
    // Google accepts authorization without PKCE for confidential clients; the service must always
    // use it, so its absence is an error here.
    const codeChallenge = params.get('code_challenge');
    if (!codeChallenge) return fail('invalid_request', 'Missing required parameter: code_challenge (this simulator requires PKCE)');
    const challengeMethod = params.get('code_challenge_method') ?? 'plain';
    if (challengeMethod !== 'S256') return fail('invalid_request', `Invalid code_challenge_method: ${challengeMethod} (this simulator accepts only S256)`);
    if (!/^[A-Za-z0-9_-]{43}$/.test(codeChallenge))
      return fail('invalid_request', 'Invalid code_challenge: expected the base64url SHA-256 of the code_verifier (43 characters).');
    const accessType = params.get('access_type') ?? 'online';
    if (accessType !== 'online' && accessType !== 'offline') return fail('invalid_request', `Invalid access_type: ${accessType}`);
    const prompts = (params.get('prompt') ?? '').split(/\s+/).filter(Boolean);
    const badPrompt = prompts.find((p) => !['none', 'consent', 'select_account'].includes(p));
    if (badPrompt || (prompts.includes('none') && prompts.length > 1)) return fail('invalid_request', `Invalid prompt: ${params.get('prompt')}`);
    return {
      clientId: requestedClient,
      redirectUri,
      scopes,
      state: params.get('state') ?? undefined,
      codeChallenge,
      offline: accessType === 'offline',
      promptNone: prompts.includes('none'),
    };
  }

  function redirectUriAllowed(uri: string): boolean {
    if (registeredRedirectUris) return registeredRedirectUris.includes(uri);
    let parsed: URL;
    try {
      parsed = new URL(uri);
    } catch {
      return false;
    }
    if (parsed.hash || uri.includes('#')) return false;
    if (parsed.protocol === 'https:') return true;
    return parsed.protocol === 'http:' && ['localhost', '127.0.0.1', '[::1]'].includes(parsed.hostname);
  }

  function authorizePage(res: ServerResponse, params: URLSearchParams): void {
    const request = validateAuthRequest(params);
    if ('error' in request) return authorizationErrorPage(res, request);
    // There is no signed-in browser session to reuse, so a silent request can never succeed.
    if (request.promptNone) return redirect(res, request.redirectUri, { error: 'interaction_required', state: request.state });

    const carried = carriedParams(params);
    const grantable = request.scopes.filter((s) => !IDENTITY_SCOPES.has(s));
    const accountSections = [...accounts.values()]
      .map((account, i) => {
        const headingId = `account-${i}`;
        const checkboxes = grantable
          .map(
            (s) =>
              `<li><label><input type="checkbox" name="granted_scope" value="${escapeHtml(s)}" checked> ${escapeHtml(SCOPE_DESCRIPTIONS[s] ?? s)}</label></li>`,
          )
          .join('');
        return `<li><section aria-labelledby="${headingId}"><h2 id="${headingId}">${escapeHtml(account.email)}</h2>
<form method="post" action="${PATHS.authorize}">${carried}<input type="hidden" name="email" value="${escapeHtml(account.email)}"><input type="hidden" name="granular_consent" value="1">${
          grantable.length > 0 ? `<fieldset><legend>Select what ${escapeHtml(request.clientId)} can access</legend><ul>${checkboxes}</ul></fieldset>` : ''
        }<button type="submit" name="decision" value="allow" data-email="${escapeHtml(account.email)}">Allow</button></form></section></li>`;
      })
      .join('\n');
    const requested = request.scopes.map((s) => `<li>${escapeHtml(SCOPE_DESCRIPTIONS[s] ?? s)}</li>`).join('');
    const body = `<h1 id="title">Sign in with Google</h1>
<p><strong>${escapeHtml(request.clientId)}</strong> wants to access your Google Account:</p>
<ul>${requested}</ul>
${accounts.size > 0 ? `<h2>Choose an account</h2><ul class="accounts">${accountSections}</ul>` : '<p role="status">No accounts have been added to this simulator.</p>'}
<form method="post" action="${PATHS.authorize}">${carried}<button type="submit" name="decision" value="deny">Deny</button></form>`;
    sendHtml(res, 200, page('Sign in - Google Accounts (simulator)', body));
  }

  function authorizeDecision(res: ServerResponse, form: Form): void {
    const request = validateAuthRequest(form);
    if ('error' in request) return authorizationErrorPage(res, request);
    const decision = form.get('decision');
    if (decision === 'deny') return redirect(res, request.redirectUri, { error: 'access_denied', state: request.state });
    if (decision !== 'allow')
      return authorizationErrorPage(res, { status: 400, error: 'invalid_request', message: 'Missing or invalid decision: expected allow or deny.' });
    const account = accounts.get(form.get('email') ?? '');
    if (!account) return authorizationErrorPage(res, { status: 400, error: 'invalid_request', message: `No such account: ${form.get('email') ?? '(none)'}` });

    let granted = request.scopes;
    if (form.get('granular_consent') === '1') {
      const ticked = new Set(form.getAll('granted_scope'));
      granted = request.scopes.filter((s) => IDENTITY_SCOPES.has(s) || ticked.has(s));
    }
    const code = `4/0${token(32)}`;
    codes.set(code, {
      clientId: request.clientId,
      redirectUri: request.redirectUri,
      codeChallenge: request.codeChallenge,
      scopes: granted,
      email: account.email,
      offline: request.offline,
      expiresAt: now() + AUTHORIZATION_CODE_TTL_MS,
      used: false,
    });
    // Google echoes the requested short scopes and their URL forms; authuser and prompt come along too.
    redirect(res, request.redirectUri, {
      state: request.state,
      code,
      scope: unique([...granted, ...granted.map(expandScope)]).join(' '),
      authuser: '0',
      prompt: 'consent',
    });
  }

  function authorizationErrorPage(res: ServerResponse, failure: { status: number; error: string; message: string }): void {
    const heading = `Error ${failure.status}: ${failure.error}`;
    sendHtml(
      res,
      failure.status,
      page(
        heading,
        `<h1>Access blocked: Authorization Error</h1><p role="alert"><strong data-error="${escapeHtml(failure.error)}">${escapeHtml(heading)}</strong></p><p>${escapeHtml(failure.message)}</p>`,
      ),
    );
  }

  // ---------------------------------------------------------------- token endpoint

  async function tokenEndpoint(req: IncomingMessage, res: ServerResponse, form: Form): Promise<void> {
    if (!isForm(req)) throw oauthError(400, 'invalid_request', 'Content-Type must be application/x-www-form-urlencoded.');
    const grantType = form.get('grant_type');
    const email =
      grantType === 'authorization_code'
        ? codes.get(form.get('code') ?? '')?.email
        : grantType === 'refresh_token'
          ? refreshTokens.get(form.get('refresh_token') ?? '')?.email
          : undefined;
    const slow = takeFault('slow_token', email);
    if (slow) {
      await delay(slow.slowMs);
      if (closed || res.destroyed) return;
    }
    if (takeFault('server_error', email)) return sendUnavailable(res);

    authenticateClient(req, form);
    if (!grantType) throw oauthError(400, 'invalid_request', 'Missing required parameter: grant_type');
    if (grantType === 'authorization_code') return sendJson(res, 200, exchangeCode(form), NO_STORE);
    if (grantType === 'refresh_token') return sendJson(res, 200, refresh(form), NO_STORE);
    throw oauthError(400, 'unsupported_grant_type', `Invalid grant_type: ${grantType}`);
  }

  function authenticateClient(req: IncomingMessage, form: Form): void {
    let id = form.get('client_id') ?? undefined;
    let secret = form.get('client_secret') ?? undefined;
    const header = req.headers.authorization;
    const usedBasic = header !== undefined && /^basic /i.test(header);
    if (usedBasic) {
      const basic = parseBasic(header);
      if (!basic) throw oauthError(401, 'invalid_client', 'Unauthorized', { 'www-authenticate': 'Basic realm="oauth2"' });
      if ((id !== undefined && id !== basic.id) || (secret !== undefined && secret !== basic.secret)) {
        throw oauthError(400, 'invalid_request', 'Client credentials given both in the Authorization header and in the body, and they differ.');
      }
      id = basic.id;
      secret = basic.secret;
    }
    const challenge: Record<string, string> = usedBasic ? { 'www-authenticate': 'Basic realm="oauth2"' } : {};
    if (!id) throw oauthError(400, 'invalid_request', 'Could not determine client ID from request.');
    if (id !== clientId) throw oauthError(401, 'invalid_client', 'The OAuth client was not found.', challenge);
    if (!secret) throw oauthError(400, 'invalid_request', 'client_secret is missing.');
    if (secret !== clientSecret) throw oauthError(401, 'invalid_client', 'Unauthorized', challenge);
  }

  function exchangeCode(form: Form): Record<string, unknown> {
    const code = form.get('code');
    if (!code) throw oauthError(400, 'invalid_request', 'Missing required parameter: code');
    const redirectUri = form.get('redirect_uri');
    if (!redirectUri) throw oauthError(400, 'invalid_request', 'Missing required parameter: redirect_uri');
    const record = codes.get(code);
    if (!record) throw oauthError(400, 'invalid_grant', 'Malformed auth code.');
    if (record.used || record.expiresAt <= now() || record.clientId !== clientId) throw oauthError(400, 'invalid_grant', 'Bad Request');
    if (record.redirectUri !== redirectUri) throw oauthError(400, 'redirect_uri_mismatch', 'Bad Request');
    const verifier = form.get('code_verifier');
    if (!verifier) throw oauthError(400, 'invalid_grant', 'Missing code verifier.');
    if (!/^[A-Za-z0-9._~-]{43,128}$/.test(verifier) || s256(verifier) !== record.codeChallenge)
      throw oauthError(400, 'invalid_grant', 'Invalid code verifier.');
    record.used = true;

    const grant: Grant = {
      email: record.email,
      clientId: record.clientId,
      scopes: record.scopes,
      revoked: false,
      refreshToken: undefined,
      accessTokens: new Set(),
    };
    grants.push(grant);
    const issued = issueAccessToken(grant);
    if (record.offline) {
      grant.refreshToken = `1//0${token(48)}`;
      refreshTokens.set(grant.refreshToken, grant);
      issued.refresh_token = grant.refreshToken;
    }
    return orderTokenResponse(issued);
  }

  function refresh(form: Form): Record<string, unknown> {
    const refreshToken = form.get('refresh_token');
    if (!refreshToken) throw oauthError(400, 'invalid_request', 'Missing required parameter: refresh_token');
    const grant = refreshTokens.get(refreshToken);
    if (!grant || grant.revoked) throw oauthError(400, 'invalid_grant', 'Token has been expired or revoked.');
    if (grant.clientId !== clientId) throw oauthError(400, 'invalid_grant', 'Unauthorized');
    // Google does not rotate refresh tokens: the answer carries no refresh_token.
    return orderTokenResponse(issueAccessToken(grant));
  }

  function issueAccessToken(grant: Grant): Record<string, unknown> {
    const accessToken = `ya29.${token(48)}`;
    accessTokens.set(accessToken, { grant, expiresAt: now() + ACCESS_TOKEN_TTL_SECONDS * 1000 });
    grant.accessTokens.add(accessToken);
    const response: Record<string, unknown> = {
      access_token: accessToken,
      expires_in: ACCESS_TOKEN_TTL_SECONDS,
      scope: unique(grant.scopes.map(expandScope)).join(' '),
      token_type: 'Bearer',
    };
    if (grant.scopes.includes('openid')) response.id_token = idToken(grant);
    return response;
  }

  function orderTokenResponse(r: Record<string, unknown>): Record<string, unknown> {
    const ordered: Record<string, unknown> = {};
    for (const key of ['access_token', 'expires_in', 'refresh_token', 'scope', 'token_type', 'id_token']) if (r[key] !== undefined) ordered[key] = r[key];
    return ordered;
  }

  /** Unsigned (alg "none") so tests need no key material; the service must not verify it against Google's JWKS. */
  function idToken(grant: Grant): string {
    const account = accounts.get(grant.email);
    const issuedAt = Math.floor(now() / 1000);
    const claims: Record<string, unknown> = { iss: baseUrl, azp: grant.clientId, aud: grant.clientId, sub: account?.sub ?? subjectFor(grant.email) };
    if (grant.scopes.some((s) => expandScope(s) === GOOGLE_SCOPES.userinfoEmail)) {
      claims.email = grant.email;
      claims.email_verified = true;
    }
    claims.iat = issuedAt;
    claims.exp = issuedAt + ACCESS_TOKEN_TTL_SECONDS + 1;
    return `${base64url(JSON.stringify({ alg: 'none', typ: 'JWT' }))}.${base64url(JSON.stringify(claims))}.`;
  }

  // ---------------------------------------------------------------- revocation endpoint

  function revokeEndpoint(res: ServerResponse, query: URLSearchParams, form: Form): void {
    const value = query.get('token') ?? form.get('token');
    const viaAccessToken = value ? accessTokens.get(value)?.grant : undefined;
    const grant = viaAccessToken ?? (value ? refreshTokens.get(value) : undefined);
    // As at /token, an outage strikes before the request is read, so the retry finds the token intact.
    if (takeFault('server_error', grant?.email)) return sendUnavailable(res);
    if (!value) throw oauthError(400, 'invalid_request', 'Missing required parameter: token');
    if (!grant || grant.revoked) throw oauthError(400, 'invalid_token', 'Token expired or revoked');
    // Revoking either token of a consent revokes the whole consent, as Google documents.
    grant.revoked = true;
    revocations.push({ email: grant.email, tokenType: viaAccessToken ? 'access_token' : 'refresh_token', token: value });
    sendJson(res, 200, {});
  }

  // ---------------------------------------------------------------- userinfo endpoint

  function userinfoEndpoint(req: IncomingMessage, res: ServerResponse): void {
    const presented = bearer(req);
    if (takeFault('server_error', presented ? accessTokens.get(presented)?.grant.email : undefined)) return sendUnavailable(res);
    const record = presented ? liveAccessToken(presented) : undefined;
    if (!record) {
      throw new HttpError(
        401,
        { error: 'invalid_request', error_description: 'Invalid Credentials' },
        { 'www-authenticate': 'Bearer realm="https://accounts.google.com/", error="invalid_token"' },
      );
    }
    const grant = record.grant;
    const info: Record<string, unknown> = { sub: accounts.get(grant.email)?.sub ?? subjectFor(grant.email) };
    if (grant.scopes.some((s) => expandScope(s) === GOOGLE_SCOPES.userinfoEmail)) {
      info.email = grant.email;
      info.email_verified = true;
    }
    sendJson(res, 200, info);
  }

  // ---------------------------------------------------------------- YouTube Analytics reports.query

  async function reportsEndpoint(req: IncomingMessage, res: ServerResponse, q: URLSearchParams): Promise<void> {
    const presented = bearer(req);
    const email = presented ? accessTokens.get(presented)?.grant.email : undefined;
    const slow = takeFault('slow', email);
    if (slow) {
      await delay(slow.slowMs);
      if (closed || res.destroyed) return;
    }
    if (takeFault('server_error', email)) return sendUnavailable(res);

    if (!presented) {
      throw googleApiError(
        401,
        'UNAUTHENTICATED',
        'Request is missing required authentication credential. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.',
        {
          errors: [{ message: 'Login Required.', domain: 'global', reason: 'required', location: 'Authorization', locationType: 'header' }],
          headers: { 'www-authenticate': 'Bearer realm="https://accounts.google.com/"' },
        },
      );
    }
    const record = liveAccessToken(presented);
    if (!record) {
      throw googleApiError(
        401,
        'UNAUTHENTICATED',
        'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.',
        {
          errors: [{ message: 'Invalid Credentials', domain: 'global', reason: 'authError', location: 'Authorization', locationType: 'header' }],
          headers: { 'www-authenticate': 'Bearer realm="https://accounts.google.com/", error="invalid_token"' },
        },
      );
    }
    const scopes = new Set(record.grant.scopes);
    // A token with no YouTube Analytics scope at all is stopped at Google's front end, before the
    // query is read; one with only the non-monetary scope reaches the API and is refused there.
    const analyticsScopes = [GOOGLE_SCOPES.monetary, GOOGLE_SCOPES.analytics, GOOGLE_SCOPES.youtubeReadonly];
    if (!analyticsScopes.some((s) => scopes.has(s))) {
      throw googleApiError(403, 'PERMISSION_DENIED', 'Request had insufficient authentication scopes.', {
        errors: [{ message: 'Insufficient Permission', domain: 'global', reason: 'insufficientPermissions' }],
        details: [
          {
            '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
            reason: 'ACCESS_TOKEN_SCOPE_INSUFFICIENT',
            domain: 'googleapis.com',
            metadata: { service: 'youtubeanalytics.googleapis.com' },
          },
        ],
        headers: {
          'www-authenticate': `Bearer realm="https://accounts.google.com/", error="insufficient_scope", scope="${GOOGLE_SCOPES.monetary} ${GOOGLE_SCOPES.analytics}"`,
        },
      });
    }

    const account = accounts.get(record.grant.email);
    if (!account) throw googleApiError(403, 'PERMISSION_DENIED', 'Forbidden', { errors: [{ message: 'Forbidden', domain: 'global', reason: 'forbidden' }] });
    const query = parseReportQuery(q, account);
    if (!scopes.has(GOOGLE_SCOPES.monetary)) {
      throw googleApiError(403, 'PERMISSION_DENIED', 'Forbidden', { errors: [{ message: 'Forbidden', domain: 'global', reason: 'forbidden' }] });
    }

    const rows: Array<[string, number]> = Object.keys(account.monthlyRevenue)
      .filter((month) => month >= query.firstMonth && month <= query.lastMonth)
      .sort()
      .map((month) => [month, convert(account.monthlyRevenue[month] ?? 0, account.currency, query.currency)]);
    if (query.descending) rows.reverse();
    const table: Record<string, unknown> = {
      kind: 'youtubeAnalytics#resultTable',
      columnHeaders: [
        { name: 'month', columnType: 'DIMENSION', dataType: 'STRING' },
        { name: 'estimatedRevenue', columnType: 'METRIC', dataType: 'FLOAT' },
      ],
    };
    // Google leaves "rows" out when there is no data, so a client must not assume it is there.
    if (rows.length > 0) table.rows = rows;
    sendJson(res, 200, table);
  }

  function parseReportQuery(q: URLSearchParams, account: AccountRecord): { firstMonth: string; lastMonth: string; currency: string; descending: boolean } {
    for (const name of ['ids', 'startDate', 'endDate', 'metrics']) {
      if (!q.get(name)) throw invalidArgument('Required', [{ message: 'Required', domain: 'global', reason: 'required' }]);
    }
    const ids = q.get('ids') ?? '';
    const startDate = q.get('startDate') ?? '';
    const endDate = q.get('endDate') ?? '';
    const metrics = (q.get('metrics') ?? '').split(',');
    for (const [name, value] of [
      ['startDate', startDate],
      ['endDate', endDate],
    ] as const) {
      if (!/^[0-9]{4}-[0-9]{2}-[0-9]{2}$/.test(value)) {
        throw invalidParameter(name, `Invalid value '${value}'. Values must match the following regular expression: '[0-9]{4}-[0-9]{2}-[0-9]{2}'`);
      }
      if (!isCalendarDate(value)) throw invalidParameter(name, `Invalid value '${value}'. It is not a calendar date.`);
    }
    const currency = q.get('currency') ?? 'USD';
    if (!/^[A-Z]{3}$/.test(currency))
      throw invalidParameter('currency', `Invalid value '${currency}'. Values must match the following regular expression: '[A-Z]{3}'`);

    const unknownMetric = metrics.find((m) => m !== 'estimatedRevenue' && !KNOWN_UNSERVED_METRICS.has(m));
    if (unknownMetric !== undefined) throw badRequest(`Unknown identifier (${unknownMetric}) given in field parameters.metrics.`);
    if (metrics.length !== 1 || metrics[0] !== 'estimatedRevenue') throw badRequest(QUERY_NOT_SUPPORTED);
    if (q.get('dimensions') !== 'month') throw badRequest(QUERY_NOT_SUPPORTED);
    if (q.get('filters')) throw badRequest(QUERY_NOT_SUPPORTED);
    const sort = q.get('sort');
    if (sort !== null && sort !== 'month' && sort !== '-month') throw badRequest(QUERY_NOT_SUPPORTED);

    const channel = /^channel==(.+)$/.exec(ids)?.[1];
    if (!channel) throw badRequest(`Invalid ids value '${ids}'. Expected channel==MINE or channel==CHANNEL_ID.`);
    if (channel !== 'MINE' && channel !== account.channelId)
      throw googleApiError(403, 'PERMISSION_DENIED', 'Forbidden', { errors: [{ message: 'Forbidden', domain: 'global', reason: 'forbidden' }] });

    if (endDate < startDate) throw badRequest(`The start date (${startDate}) must be on or before the end date (${endDate}).`);
    if (!startDate.endsWith('-01')) throw badRequest(`With the month dimension the start date must be the first day of a month; got ${startDate}.`);
    if (!(currency in USD_EXCHANGE_RATES)) throw badRequest(`Unsupported currency: ${currency}.`);
    return { firstMonth: startDate.slice(0, 7), lastMonth: endDate.slice(0, 7), currency, descending: sort === '-month' };
  }

  // ---------------------------------------------------------------- shared helpers

  function liveAccessToken(value: string): AccessTokenRecord | undefined {
    const record = accessTokens.get(value);
    if (!record || record.grant.revoked || record.expiresAt <= now()) return undefined;
    return record;
  }

  function takeFault(kind: QueuedFault['kind'], email: string | undefined): QueuedFault | undefined {
    const index = faults.findIndex((f) => f.kind === kind && (f.email === undefined || f.email === email));
    if (index < 0) return undefined;
    const fault = faults[index];
    if (!fault) return undefined;
    fault.remaining -= 1;
    if (fault.remaining <= 0) faults.splice(index, 1);
    return fault;
  }

  function delay(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const entry = {
        timer: setTimeout(() => {
          pendingDelays.delete(entry);
          resolve();
        }, ms),
        resolve,
      };
      pendingDelays.add(entry);
    });
  }

  function discoveryDocument(): Record<string, unknown> {
    return {
      issuer: baseUrl,
      authorization_endpoint: baseUrl + PATHS.authorize,
      token_endpoint: baseUrl + PATHS.token,
      userinfo_endpoint: baseUrl + PATHS.userinfo,
      revocation_endpoint: baseUrl + PATHS.revoke,
      response_types_supported: ['code'],
      subject_types_supported: ['public'],
      id_token_signing_alg_values_supported: ['none'],
      scopes_supported: ['openid', 'email', 'profile'],
      token_endpoint_auth_methods_supported: ['client_secret_post', 'client_secret_basic'],
      code_challenge_methods_supported: ['S256'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
    };
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    baseUrl,
    endpoints: {
      authorize: baseUrl + PATHS.authorize,
      token: baseUrl + PATHS.token,
      revoke: baseUrl + PATHS.revoke,
      userinfo: baseUrl + PATHS.userinfo,
      analyticsReports: baseUrl + PATHS.analyticsReports,
    },
    clientId,
    clientSecret,
    calls,
    revocations,
    addAccount(account: GoogleAccount): void {
      if (!account.email.includes('@')) throw new Error(`addAccount: not an email address: ${account.email}`);
      if (!(account.currency in USD_EXCHANGE_RATES)) {
        throw new Error(`addAccount: currency ${account.currency} is not in USD_EXCHANGE_RATES (${Object.keys(USD_EXCHANGE_RATES).join(', ')})`);
      }
      for (const [month, amount] of Object.entries(account.monthlyRevenue)) {
        if (!/^[0-9]{4}-(0[1-9]|1[0-2])$/.test(month)) throw new Error(`addAccount: month keys are YYYY-MM, got ${month}`);
        if (!Number.isFinite(amount)) throw new Error(`addAccount: revenue for ${month} is not a finite number`);
      }
      // Adding an email again replaces its data (so a test can change revenue) but keeps its tokens.
      accounts.set(account.email, { ...account, monthlyRevenue: { ...account.monthlyRevenue }, sub: subjectFor(account.email) });
    },
    inject(fault: GoogleFault, opts: { times?: number; slowMs?: number; email?: string } = {}): void {
      if (opts.email !== undefined && !accounts.has(opts.email)) throw new Error(`inject: no account ${opts.email}`);
      if (fault === 'revoked') {
        for (const grant of grants) if (opts.email === undefined || grant.email === opts.email) grant.revoked = true;
        return;
      }
      const times = opts.times ?? 1;
      if (!Number.isInteger(times) || times < 1) throw new Error('inject: times must be a positive integer');
      faults.push({ kind: fault, remaining: times, slowMs: opts.slowMs ?? DEFAULT_SLOW_MS, email: opts.email });
    },
    async close(): Promise<void> {
      closed = true;
      for (const entry of pendingDelays) {
        clearTimeout(entry.timer);
        entry.resolve();
      }
      pendingDelays.clear();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}

// ------------------------------------------------------------------ module-level helpers

const NO_STORE = { 'cache-control': 'no-cache, no-store, max-age=0, must-revalidate', pragma: 'no-cache', expires: 'Mon, 01 Jan 1990 00:00:00 GMT' };

function oauthError(status: number, error: string, description: string, headers: Record<string, string> = {}): HttpError {
  return new HttpError(status, { error, error_description: description }, { ...NO_STORE, ...headers });
}

function googleApiError(
  code: number,
  status: string,
  message: string,
  extra: { errors?: unknown[]; details?: unknown[]; headers?: Record<string, string> } = {},
): HttpError {
  const error: Record<string, unknown> = { code, message };
  if (extra.errors) error.errors = extra.errors;
  error.status = status;
  if (extra.details) error.details = extra.details;
  return new HttpError(code, { error }, extra.headers);
}

function invalidArgument(message: string, errors: unknown[]): HttpError {
  return googleApiError(400, 'INVALID_ARGUMENT', message, { errors });
}

function invalidParameter(location: string, message: string): HttpError {
  return invalidArgument(message, [{ message, domain: 'global', reason: 'invalidParameter', location, locationType: 'parameter' }]);
}

function badRequest(message: string): HttpError {
  return invalidArgument(message, [{ message, domain: 'global', reason: 'badRequest' }]);
}

function sendUnavailable(res: ServerResponse): void {
  sendJson(res, 503, { error: { code: 503, message: 'The service is currently unavailable.', status: 'UNAVAILABLE' } });
}

function methodNotAllowed(res: ServerResponse): void {
  sendHtml(res, 405, page('Error 405 (Method Not Allowed)', '<h1>405. That’s an error.</h1><p>The request method is not supported for this URL.</p>'));
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers });
  res.end(JSON.stringify(body, null, 2));
}

function sendHtml(res: ServerResponse, status: number, html: string): void {
  res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
  res.end(html);
}

function redirect(res: ServerResponse, target: string, params: Record<string, string | undefined>): void {
  const location = new URL(target);
  for (const [key, value] of Object.entries(params)) if (value !== undefined) location.searchParams.append(key, value);
  res.writeHead(302, { location: location.toString(), 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
  res.end(
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Moved</title></head><body><p><a href="${escapeHtml(location.toString())}">Continue</a></p></body></html>`,
  );
}

function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>body{font-family:system-ui,sans-serif;max-width:40rem;margin:2rem auto;padding:0 1rem;line-height:1.5;color:#202124}button{font:inherit;padding:.5rem 1.25rem;margin:.5rem .5rem 0 0}button:focus-visible{outline:3px solid #1a73e8;outline-offset:2px}ul.accounts{list-style:none;padding:0}ul.accounts>li{border:1px solid #dadce0;border-radius:8px;padding:0 1rem 1rem;margin-bottom:1rem}fieldset{border:none;padding:0}</style>
</head>
<body>
<main>
${body}
</main>
</body>
</html>`;
}

/** The authorization request, re-sent as hidden fields so the consent POST is self-contained. */
function carriedParams(params: URLSearchParams): string {
  const names = [
    'client_id',
    'redirect_uri',
    'response_type',
    'scope',
    'state',
    'code_challenge',
    'code_challenge_method',
    'access_type',
    'prompt',
    'include_granted_scopes',
    'login_hint',
  ];
  return names
    .filter((name) => params.has(name))
    .map((name) => `<input type="hidden" name="${name}" value="${escapeHtml(params.get(name) ?? '')}">`)
    .join('');
}

function escapeHtml(value: string): string {
  return value.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');
}

function isForm(req: IncomingMessage): boolean {
  return (req.headers['content-type'] ?? '').toLowerCase().startsWith('application/x-www-form-urlencoded');
}

async function readBody(req: IncomingMessage): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  let tooLarge = false;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) tooLarge = true;
    else chunks.push(chunk as Buffer);
  }
  return tooLarge ? undefined : Buffer.concat(chunks).toString('utf8');
}

/** Repeated fields (the consent form's granted_scope) are joined with a space. */
function flatten(params: URLSearchParams): Record<string, string> {
  const out: Record<string, string> = {};
  for (const key of new Set(params.keys())) out[key] = params.getAll(key).join(' ');
  return out;
}

function parseBasic(header: string): { id: string; secret: string } | undefined {
  const encoded = header.replace(/^basic\s+/i, '').trim();
  const decoded = Buffer.from(encoded, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return undefined;
  try {
    // RFC 6749 §2.3.1: both parts are form-urlencoded before base64.
    return { id: decodeURIComponent(decoded.slice(0, colon).replace(/\+/g, ' ')), secret: decodeURIComponent(decoded.slice(colon + 1).replace(/\+/g, ' ')) };
  } catch {
    return undefined;
  }
}

function bearer(req: IncomingMessage): string | undefined {
  const match = /^bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
  return match?.[1];
}

function expandScope(scope: string): string {
  return SCOPE_EXPANSION[scope] ?? scope;
}

function unique(values: string[]): string[] {
  return [...new Set(values)];
}

function token(bytes: number): string {
  return randomBytes(bytes).toString('base64url');
}

function base64url(text: string): string {
  return Buffer.from(text, 'utf8').toString('base64url');
}

function s256(verifier: string): string {
  return createHash('sha256').update(verifier, 'ascii').digest('base64url');
}

/** Google subjects are 21-digit strings; derived from the email so they are stable across runs. */
function subjectFor(email: string): string {
  const digits = BigInt(`0x${createHash('sha256').update(email.toLowerCase()).digest('hex')}`)
    .toString()
    .slice(0, 20);
  return `1${digits}`;
}

function isCalendarDate(value: string): boolean {
  const date = new Date(`${value}T00:00:00Z`);
  return !Number.isNaN(date.getTime()) && date.toISOString().slice(0, 10) === value;
}

function convert(amount: number, from: string, to: string): number {
  if (from === to) return amount;
  const fromRate = USD_EXCHANGE_RATES[from];
  const toRate = USD_EXCHANGE_RATES[to];
  if (fromRate === undefined || toRate === undefined) throw new Error(`no rate for ${from}→${to}`);
  return Math.round((amount / fromRate) * toRate * 1000) / 1000;
}
