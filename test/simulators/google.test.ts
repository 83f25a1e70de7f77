import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { ManualClock } from '../../src/platform/clock.ts';
import { GOOGLE_SCOPES, startGoogleSimulator, type GoogleSimulator } from './google.ts';

// Nothing listens here: redirects are read from the Location header, never followed.
const REDIRECT_URI = 'http://127.0.0.1:9/oauth/google/callback';
const SERVICE_SCOPE = `${GOOGLE_SCOPES.monetary} openid email`;
const ALICE = 'alice@example.com';
const BOB = 'bob@example.com';

const aliceAccount = {
  email: ALICE,
  channelId: 'UCaliceAAAAAAAAAAAAAAAAA',
  currency: 'USD',
  // Out of order on purpose: the report must sort, not echo insertion order.
  monthlyRevenue: { '2026-03': 50, '2025-11': 100.5, '2026-01': 123.45, '2025-12': 200 },
};
const bobAccount = { email: BOB, channelId: 'UCbobBBBBBBBBBBBBBBBBBBB', currency: 'EUR', monthlyRevenue: { '2026-01': 92 } };

// ------------------------------------------------------------------ browser-less helpers

function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

function authorizeUrl(sim: GoogleSimulator, challenge: string, overrides: Record<string, string | null> = {}): string {
  const params: Record<string, string | null> = {
    client_id: sim.clientId,
    redirect_uri: REDIRECT_URI,
    response_type: 'code',
    scope: SERVICE_SCOPE,
    state: 'state-123',
    code_challenge: challenge,
    code_challenge_method: 'S256',
    access_type: 'offline',
    prompt: 'consent',
    ...overrides,
  };
  const url = new URL(sim.endpoints.authorize);
  for (const [key, value] of Object.entries(params)) if (value !== null) url.searchParams.set(key, value);
  return url.toString();
}

interface ParsedForm {
  action: string;
  method: string;
  fields: Array<[string, string]>;
  checkboxes: Array<{ name: string; value: string; checked: boolean }>;
  buttons: Array<{ name: string; value: string; text: string; email: string | undefined }>;
}

function decodeEntities(text: string): string {
  return text
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
}

function attributes(tag: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of tag.matchAll(/([a-zA-Z_:-]+)(?:="([^"]*)")?/g)) {
    const name = m[1];
    if (name) out[name.toLowerCase()] = decodeEntities(m[2] ?? '');
  }
  return out;
}

/** Reads the forms the way a browser would submit them; enough for the simulator's own markup. */
function parseForms(html: string): ParsedForm[] {
  return [...html.matchAll(/<form\b([^>]*)>([\s\S]*?)<\/form>/g)].map((m) => {
    const formAttrs = attributes(m[1] ?? '');
    const inner = m[2] ?? '';
    const fields: Array<[string, string]> = [];
    const checkboxes: ParsedForm['checkboxes'] = [];
    for (const input of inner.matchAll(/<input\b([^>]*)>/g)) {
      const a = attributes(input[1] ?? '');
      if (a.type === 'checkbox') checkboxes.push({ name: a.name ?? '', value: a.value ?? '', checked: 'checked' in a });
      else if (a.name) fields.push([a.name, a.value ?? '']);
    }
    const buttons = [...inner.matchAll(/<button\b([^>]*)>([\s\S]*?)<\/button>/g)].map((b) => {
      const a = attributes(b[1] ?? '');
      return { name: a.name ?? '', value: a.value ?? '', text: decodeEntities((b[2] ?? '').trim()), email: a['data-email'] };
    });
    return { action: formAttrs.action ?? '', method: (formAttrs.method ?? 'get').toLowerCase(), fields, checkboxes, buttons };
  });
}

/** Presses a button on the consent page; `untick` clears checkboxes first, like a user would. */
async function press(pageUrl: string, html: string, buttonText: 'Allow' | 'Deny', email?: string, untick: string[] = []): Promise<Response> {
  const forms = parseForms(html);
  const form = forms.find((f) => f.buttons.some((b) => b.text === buttonText && (email === undefined || b.email === email)));
  assert.ok(form, `no ${buttonText} button${email ? ` for ${email}` : ''} on the page`);
  assert.equal(form.method, 'post');
  const button = form.buttons.find((b) => b.text === buttonText);
  assert.ok(button);
  const body = new URLSearchParams(form.fields);
  for (const box of form.checkboxes) if (box.checked && !untick.includes(box.value)) body.append(box.name, box.value);
  body.append(button.name, button.value);
  return fetch(new URL(form.action, pageUrl), {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body,
    redirect: 'manual',
  });
}

async function consent(
  sim: GoogleSimulator,
  email: string,
  options: { overrides?: Record<string, string | null>; untick?: string[] } = {},
): Promise<{ callback: URL; verifier: string }> {
  const { verifier, challenge } = pkce();
  const url = authorizeUrl(sim, challenge, options.overrides);
  const pageResponse = await fetch(url);
  assert.equal(pageResponse.status, 200);
  const response = await press(url, await pageResponse.text(), 'Allow', email, options.untick);
  assert.equal(response.status, 302);
  return { callback: new URL(response.headers.get('location') ?? ''), verifier };
}

function tokenRequest(sim: GoogleSimulator, fields: Record<string, string>, init: { basic?: boolean; contentType?: string } = {}): Promise<Response> {
  const headers: Record<string, string> = { 'content-type': init.contentType ?? 'application/x-www-form-urlencoded' };
  const body = new URLSearchParams(fields);
  if (init.basic) headers.authorization = `Basic ${Buffer.from(`${sim.clientId}:${sim.clientSecret}`).toString('base64')}`;
  else if (!('client_id' in fields)) {
    body.set('client_id', sim.clientId);
    body.set('client_secret', sim.clientSecret);
  }
  return fetch(sim.endpoints.token, { method: 'POST', headers, body: init.contentType === 'application/json' ? JSON.stringify(fields) : body });
}

interface Tokens {
  access_token: string;
  refresh_token?: string;
  scope: string;
  id_token?: string;
  expires_in: number;
  token_type: string;
}

async function connect(sim: GoogleSimulator, email: string, options: { overrides?: Record<string, string | null>; untick?: string[] } = {}): Promise<Tokens> {
  const { callback, verifier } = await consent(sim, email, options);
  const response = await tokenRequest(sim, {
    grant_type: 'authorization_code',
    code: callback.searchParams.get('code') ?? '',
    redirect_uri: REDIRECT_URI,
    code_verifier: verifier,
  });
  assert.equal(response.status, 200, await response.clone().text());
  return (await response.json()) as Tokens;
}

function reportUrl(sim: GoogleSimulator, overrides: Record<string, string | null> = {}): string {
  const params: Record<string, string | null> = {
    ids: 'channel==MINE',
    startDate: '2025-12-01',
    endDate: '2026-03-31',
    metrics: 'estimatedRevenue',
    dimensions: 'month',
    ...overrides,
  };
  const url = new URL(sim.endpoints.analyticsReports);
  for (const [key, value] of Object.entries(params)) if (value !== null) url.searchParams.set(key, value);
  return url.toString();
}

function report(sim: GoogleSimulator, accessToken: string | undefined, overrides: Record<string, string | null> = {}): Promise<Response> {
  return fetch(reportUrl(sim, overrides), { headers: accessToken === undefined ? {} : { authorization: `Bearer ${accessToken}` } });
}

/** An RFC 7009 revocation request as the service's OAuth client sends it: the token in the form body. */
function revokeRequest(sim: GoogleSimulator, token: string): Promise<Response> {
  return fetch(sim.endpoints.revoke, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token }),
  });
}

function userinfo(sim: GoogleSimulator, accessToken: string): Promise<Response> {
  return fetch(sim.endpoints.userinfo, { headers: { authorization: `Bearer ${accessToken}` } });
}

function decodeJwt(jwt: string): { header: Record<string, unknown>; claims: Record<string, unknown>; signature: string } {
  const [header, claims, signature] = jwt.split('.');
  const part = (p: string | undefined) => JSON.parse(Buffer.from(p ?? '', 'base64url').toString('utf8')) as Record<string, unknown>;
  return { header: part(header), claims: part(claims), signature: signature ?? '' };
}

async function expectOAuthError(response: Response, status: number, error: string, description?: string): Promise<void> {
  const body = (await response.json()) as { error: string; error_description: string };
  assert.equal(response.status, status, JSON.stringify(body));
  assert.equal(body.error, error);
  if (description !== undefined) assert.equal(body.error_description, description);
}

async function expectApiError(
  response: Response,
  code: number,
  status: string,
  reason?: string,
): Promise<{ message: string; errors?: Array<Record<string, string>> }> {
  const body = (await response.json()) as { error: { code: number; message: string; status: string; errors?: Array<Record<string, string>> } };
  assert.equal(response.status, code, JSON.stringify(body));
  assert.equal(body.error.code, code);
  assert.equal(body.error.status, status);
  if (reason !== undefined) assert.equal(body.error.errors?.[0]?.reason, reason);
  return body.error;
}

async function expectErrorPage(url: string, error: string, init?: RequestInit): Promise<void> {
  const response = await fetch(url, { ...init, redirect: 'manual' });
  assert.equal(response.status, 400);
  assert.equal(response.headers.get('location'), null, 'an invalid request must never redirect');
  assert.match(response.headers.get('content-type') ?? '', /^text\/html/);
  assert.match(await response.text(), new RegExp(`Error 400: ${error}`));
}

// ------------------------------------------------------------------ tests

describe('Google simulator', function () {
  let sim: GoogleSimulator;

  beforeEach(async function () {
    sim = await startGoogleSimulator();
    sim.addAccount(aliceAccount);
    sim.addAccount(bobAccount);
  });

  afterEach(async function () {
    await sim.close();
  });

  describe('authorization code flow with PKCE', function () {
    it('serves an accessible consent page listing every account, each with an Allow button, and one Deny button', async function () {
      const response = await fetch(authorizeUrl(sim, pkce().challenge));
      assert.equal(response.status, 200);
      assert.match(response.headers.get('content-type') ?? '', /^text\/html/);
      const html = await response.text();
      assert.match(html, /<html lang="en">/);
      assert.match(html, /<title>[^<]+<\/title>/);
      assert.doesNotMatch(html, /<(script|link|img)\b/, 'no external or scripted assets');
      const buttons = parseForms(html).flatMap((f) => f.buttons);
      assert.deepEqual(
        buttons.filter((b) => b.text === 'Allow').map((b) => b.email),
        [ALICE, BOB],
      );
      assert.equal(buttons.filter((b) => b.text === 'Deny').length, 1);
      // Every non-sign-in scope can be unticked, as on Google's granular consent screen.
      const aliceForm = parseForms(html).find((f) => f.buttons.some((b) => b.email === ALICE));
      assert.deepEqual(aliceForm?.checkboxes, [{ name: 'granted_scope', value: GOOGLE_SCOPES.monetary, checked: true }]);
    });

    it('redirects Allow to redirect_uri with a code, the state and the granted scopes, then exchanges the code', async function () {
      const { callback, verifier } = await consent(sim, ALICE);
      assert.equal(`${callback.origin}${callback.pathname}`, REDIRECT_URI);
      assert.equal(callback.searchParams.get('state'), 'state-123');
      const code = callback.searchParams.get('code') ?? '';
      assert.match(code, /^4\/0/);
      assert.deepEqual(
        new Set(callback.searchParams.get('scope')?.split(' ')),
        new Set([GOOGLE_SCOPES.monetary, 'openid', 'email', GOOGLE_SCOPES.userinfoEmail]),
      );

      const response = await tokenRequest(sim, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, code_verifier: verifier });
      assert.equal(response.status, 200);
      assert.match(response.headers.get('cache-control') ?? '', /no-store/);
      const tokens = (await response.json()) as Tokens;
      assert.deepEqual(Object.keys(tokens), ['access_token', 'expires_in', 'refresh_token', 'scope', 'token_type', 'id_token']);
      assert.match(tokens.access_token, /^ya29\./);
      assert.match(tokens.refresh_token ?? '', /^1\/\/0/);
      assert.equal(tokens.expires_in, 3599);
      assert.equal(tokens.token_type, 'Bearer');
      // The token answer uses URL forms only: a client checking for the literal "email" would break.
      assert.deepEqual(new Set(tokens.scope.split(' ')), new Set([GOOGLE_SCOPES.monetary, 'openid', GOOGLE_SCOPES.userinfoEmail]));

      const idToken = decodeJwt(tokens.id_token ?? '');
      assert.deepEqual(idToken.header, { alg: 'none', typ: 'JWT' });
      assert.equal(idToken.signature, '');
      assert.equal(idToken.claims.email, ALICE);
      assert.equal(idToken.claims.email_verified, true);
      assert.equal(idToken.claims.aud, sim.clientId);
      assert.equal(idToken.claims.iss, sim.baseUrl);
      assert.match(String(idToken.claims.sub), /^1\d{20}$/);
    });

    it('accepts client authentication by HTTP Basic instead of form parameters', async function () {
      const { callback, verifier } = await consent(sim, BOB);
      const response = await tokenRequest(
        sim,
        { grant_type: 'authorization_code', code: callback.searchParams.get('code') ?? '', redirect_uri: REDIRECT_URI, code_verifier: verifier },
        { basic: true },
      );
      assert.equal(response.status, 200);
      assert.equal(sim.calls.at(-1)?.body.client_secret, undefined);
    });

    it('redirects Deny with error=access_denied and the state, and no code', async function () {
      const url = authorizeUrl(sim, pkce().challenge);
      const response = await press(url, await (await fetch(url)).text(), 'Deny');
      assert.equal(response.status, 302);
      const callback = new URL(response.headers.get('location') ?? '');
      assert.equal(callback.searchParams.get('error'), 'access_denied');
      assert.equal(callback.searchParams.get('state'), 'state-123');
      assert.equal(callback.searchParams.has('code'), false);
    });

    it('keeps a query string already on redirect_uri', async function () {
      const { callback } = await consent(sim, ALICE, { overrides: { redirect_uri: `${REDIRECT_URI}?verification=vrf_1` } });
      assert.equal(callback.searchParams.get('verification'), 'vrf_1');
      assert.ok(callback.searchParams.get('code'));
    });

    it('issues no refresh token for access_type=online', async function () {
      const tokens = await connect(sim, ALICE, { overrides: { access_type: 'online' } });
      assert.equal(tokens.refresh_token, undefined);
      assert.deepEqual(Object.keys(tokens), ['access_token', 'expires_in', 'scope', 'token_type', 'id_token']);
    });

    it('issues no refresh token when access_type is left out, online being the default', async function () {
      const tokens = await connect(sim, ALICE, { overrides: { access_type: null } });
      assert.equal(tokens.refresh_token, undefined);
    });

    it('grants only the ticked scopes when the user unticks the monetary one, and the report then answers 403', async function () {
      const tokens = await connect(sim, ALICE, { untick: [GOOGLE_SCOPES.monetary] });
      assert.equal(tokens.scope.includes(GOOGLE_SCOPES.monetary), false);
      const response = await report(sim, tokens.access_token);
      assert.match(response.headers.get('www-authenticate') ?? '', /error="insufficient_scope"/);
      const error = await expectApiError(response, 403, 'PERMISSION_DENIED', 'insufficientPermissions');
      assert.equal(error.message, 'Request had insufficient authentication scopes.');
    });

    it('redirects prompt=none with interaction_required, since there is no browser session', async function () {
      const response = await fetch(authorizeUrl(sim, pkce().challenge, { prompt: 'none' }), { redirect: 'manual' });
      assert.equal(response.status, 302);
      assert.equal(new URL(response.headers.get('location') ?? '').searchParams.get('error'), 'interaction_required');
    });
  });

  describe('authorization request errors are an HTML page, never a redirect', function () {
    const cases: Array<[string, Record<string, string | null>, string]> = [
      ['missing client_id', { client_id: null }, 'invalid_request'],
      ['unknown client_id', { client_id: 'someone-else.apps.googleusercontent.com' }, 'invalid_client'],
      ['missing redirect_uri', { redirect_uri: null }, 'invalid_request'],
      ['plain http redirect_uri off loopback', { redirect_uri: 'http://example.com/cb' }, 'redirect_uri_mismatch'],
      ['redirect_uri with a fragment', { redirect_uri: `${REDIRECT_URI}#x` }, 'redirect_uri_mismatch'],
      ['response_type=token', { response_type: 'token' }, 'unsupported_response_type'],
      ['missing scope', { scope: null }, 'invalid_request'],
      ['unknown scope', { scope: 'openid https://www.googleapis.com/auth/drive' }, 'invalid_scope'],
      ['missing code_challenge', { code_challenge: null }, 'invalid_request'],
      ['code_challenge_method=plain', { code_challenge_method: 'plain' }, 'invalid_request'],
      ['missing code_challenge_method (defaults to plain)', { code_challenge_method: null }, 'invalid_request'],
      ['malformed code_challenge', { code_challenge: 'short' }, 'invalid_request'],
      ['bad access_type', { access_type: 'forever' }, 'invalid_request'],
      ['bad prompt', { prompt: 'login' }, 'invalid_request'],
    ];
    for (const [name, overrides, error] of cases) {
      it(`${name} → Error 400: ${error}`, async function () {
        await expectErrorPage(authorizeUrl(sim, pkce().challenge, overrides), error);
      });
    }

    it('applies the same checks to the consent POST, and refuses an unknown account', async function () {
      const url = authorizeUrl(sim, pkce().challenge);
      const form = parseForms(await (await fetch(url)).text()).find((f) => f.buttons.some((b) => b.email === ALICE));
      assert.ok(form);
      const post = (mutate: (body: URLSearchParams) => void) => {
        const body = new URLSearchParams(form.fields);
        body.set('decision', 'allow');
        mutate(body);
        return { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body };
      };
      await expectErrorPage(
        sim.endpoints.authorize,
        'invalid_client',
        post((b) => b.set('client_id', 'other')),
      );
      await expectErrorPage(
        sim.endpoints.authorize,
        'redirect_uri_mismatch',
        post((b) => b.set('redirect_uri', 'http://evil.example/cb')),
      );
      await expectErrorPage(
        sim.endpoints.authorize,
        'invalid_request',
        post((b) => b.set('email', 'nobody@example.com')),
      );
      await expectErrorPage(
        sim.endpoints.authorize,
        'invalid_request',
        post((b) => b.set('decision', 'maybe')),
      );
    });

    it('checks redirect_uri by exact match when the client has registered URIs', async function () {
      const strict = await startGoogleSimulator({ redirectUris: [REDIRECT_URI] });
      try {
        strict.addAccount(aliceAccount);
        await expectErrorPage(authorizeUrl(strict, pkce().challenge, { redirect_uri: `${REDIRECT_URI}/` }), 'redirect_uri_mismatch');
        assert.ok((await connect(strict, ALICE)).access_token);
      } finally {
        await strict.close();
      }
    });
  });

  describe('token endpoint errors', function () {
    async function freshCode(email = ALICE): Promise<{ code: string; verifier: string }> {
      const { callback, verifier } = await consent(sim, email);
      return { code: callback.searchParams.get('code') ?? '', verifier };
    }

    it('refuses a code used twice (invalid_grant)', async function () {
      const { code, verifier } = await freshCode();
      const fields = { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, code_verifier: verifier };
      assert.equal((await tokenRequest(sim, fields)).status, 200);
      await expectOAuthError(await tokenRequest(sim, fields), 400, 'invalid_grant', 'Bad Request');
    });

    it('refuses an unknown code (invalid_grant)', async function () {
      await expectOAuthError(
        await tokenRequest(sim, { grant_type: 'authorization_code', code: '4/0nonsense', redirect_uri: REDIRECT_URI, code_verifier: pkce().verifier }),
        400,
        'invalid_grant',
      );
    });

    it('refuses a wrong or missing code_verifier (invalid_grant), and the code stays usable with the right one', async function () {
      const { code, verifier } = await freshCode();
      await expectOAuthError(
        await tokenRequest(sim, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, code_verifier: pkce().verifier }),
        400,
        'invalid_grant',
        'Invalid code verifier.',
      );
      await expectOAuthError(
        await tokenRequest(sim, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI }),
        400,
        'invalid_grant',
        'Missing code verifier.',
      );
      assert.equal((await tokenRequest(sim, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, code_verifier: verifier })).status, 200);
    });

    it('refuses a redirect_uri different from the authorization request (redirect_uri_mismatch)', async function () {
      const { code, verifier } = await freshCode();
      await expectOAuthError(
        await tokenRequest(sim, { grant_type: 'authorization_code', code, redirect_uri: 'http://127.0.0.1:9/other', code_verifier: verifier }),
        400,
        'redirect_uri_mismatch',
      );
    });

    it('refuses a code older than ten minutes (invalid_grant)', async function () {
      const clock = new ManualClock('2026-04-01T00:00:00Z');
      const timed = await startGoogleSimulator({ clock });
      try {
        timed.addAccount(aliceAccount);
        const { callback, verifier } = await consent(timed, ALICE);
        clock.advance(10 * 60 * 1000);
        await expectOAuthError(
          await tokenRequest(timed, {
            grant_type: 'authorization_code',
            code: callback.searchParams.get('code') ?? '',
            redirect_uri: REDIRECT_URI,
            code_verifier: verifier,
          }),
          400,
          'invalid_grant',
        );
      } finally {
        await timed.close();
      }
    });

    it('answers 401 invalid_client for an unknown client or a wrong secret, by form or by Basic', async function () {
      const { code, verifier } = await freshCode();
      const grant = { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, code_verifier: verifier };
      await expectOAuthError(
        await tokenRequest(sim, { ...grant, client_id: 'other', client_secret: sim.clientSecret }),
        401,
        'invalid_client',
        'The OAuth client was not found.',
      );
      await expectOAuthError(await tokenRequest(sim, { ...grant, client_id: sim.clientId, client_secret: 'wrong' }), 401, 'invalid_client', 'Unauthorized');
      const basic = await fetch(sim.endpoints.token, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${sim.clientId}:wrong`).toString('base64')}` },
        body: new URLSearchParams(grant),
      });
      assert.match(basic.headers.get('www-authenticate') ?? '', /^Basic/);
      await expectOAuthError(basic, 401, 'invalid_client');
      // None of the failures above consumed the code.
      assert.equal((await tokenRequest(sim, grant)).status, 200);
    });

    it('answers 400 invalid_request for missing client credentials or parameters, or a JSON body', async function () {
      await expectOAuthError(
        await tokenRequest(sim, { grant_type: 'authorization_code', client_id: '', client_secret: '' }),
        400,
        'invalid_request',
        'Could not determine client ID from request.',
      );
      await expectOAuthError(
        await tokenRequest(sim, { grant_type: 'authorization_code', client_id: sim.clientId }),
        400,
        'invalid_request',
        'client_secret is missing.',
      );
      await expectOAuthError(await tokenRequest(sim, {}), 400, 'invalid_request', 'Missing required parameter: grant_type');
      await expectOAuthError(
        await tokenRequest(sim, { grant_type: 'authorization_code', redirect_uri: REDIRECT_URI }),
        400,
        'invalid_request',
        'Missing required parameter: code',
      );
      await expectOAuthError(await tokenRequest(sim, { grant_type: 'refresh_token' }), 400, 'invalid_request', 'Missing required parameter: refresh_token');
      await expectOAuthError(
        await tokenRequest(sim, { grant_type: 'authorization_code', code: 'x' }, { contentType: 'application/json' }),
        400,
        'invalid_request',
      );
    });

    it('answers 400 unsupported_grant_type for other grants', async function () {
      await expectOAuthError(await tokenRequest(sim, { grant_type: 'password' }), 400, 'unsupported_grant_type', 'Invalid grant_type: password');
    });
  });

  describe('refresh and revocation', function () {
    it('refresh returns a new access token, no new refresh token, and the old access token keeps working', async function () {
      const tokens = await connect(sim, ALICE);
      const response = await tokenRequest(sim, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token ?? '' });
      assert.equal(response.status, 200);
      const refreshed = (await response.json()) as Tokens;
      assert.deepEqual(Object.keys(refreshed), ['access_token', 'expires_in', 'scope', 'token_type', 'id_token']);
      assert.notEqual(refreshed.access_token, tokens.access_token);
      assert.equal(refreshed.scope, tokens.scope);
      assert.equal((await report(sim, refreshed.access_token)).status, 200);
      assert.equal((await report(sim, tokens.access_token)).status, 200);
    });

    it('refresh with an unknown token is invalid_grant', async function () {
      await expectOAuthError(
        await tokenRequest(sim, { grant_type: 'refresh_token', refresh_token: '1//0unknown' }),
        400,
        'invalid_grant',
        'Token has been expired or revoked.',
      );
    });

    it('revoking the refresh token (token in the query) kills the whole consent', async function () {
      const tokens = await connect(sim, ALICE);
      const response = await fetch(`${sim.endpoints.revoke}?token=${encodeURIComponent(tokens.refresh_token ?? '')}`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
      assert.equal(response.status, 200);
      await expectOAuthError(
        await tokenRequest(sim, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token ?? '' }),
        400,
        'invalid_grant',
        'Token has been expired or revoked.',
      );
      await expectApiError(await report(sim, tokens.access_token), 401, 'UNAUTHENTICATED', 'authError');
      assert.equal((await userinfo(sim, tokens.access_token)).status, 401);
    });

    it('revoking the access token (token in the form) also revokes its refresh token; a second revoke is invalid_token', async function () {
      const tokens = await connect(sim, ALICE);
      const revoke = () =>
        fetch(sim.endpoints.revoke, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ token: tokens.access_token }),
        });
      assert.equal((await revoke()).status, 200);
      await expectOAuthError(await tokenRequest(sim, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token ?? '' }), 400, 'invalid_grant');
      await expectOAuthError(await revoke(), 400, 'invalid_token', 'Token expired or revoked');
    });

    it('revoking one consent leaves another account untouched', async function () {
      const alice = await connect(sim, ALICE);
      const bob = await connect(sim, BOB);
      await fetch(`${sim.endpoints.revoke}?token=${encodeURIComponent(alice.access_token)}`, { method: 'POST' });
      assert.equal((await report(sim, bob.access_token)).status, 200);
    });

    it('revoke without a token is invalid_request', async function () {
      await expectOAuthError(await fetch(sim.endpoints.revoke, { method: 'POST' }), 400, 'invalid_request');
    });

    it('revoking a token it never issued is invalid_token', async function () {
      await expectOAuthError(await revokeRequest(sim, '1//0neverissued'), 400, 'invalid_token', 'Token expired or revoked');
      assert.deepEqual(sim.revocations, []);
    });

    it('records each consent ended at /revoke with whose it was and the kind of token presented; refused ones only in calls', async function () {
      const alice = await connect(sim, ALICE);
      const bob = await connect(sim, BOB);
      assert.equal((await revokeRequest(sim, alice.refresh_token ?? '')).status, 200);
      assert.equal((await revokeRequest(sim, bob.access_token)).status, 200);
      assert.equal((await revokeRequest(sim, alice.access_token)).status, 400, 'the consent is already gone');
      assert.deepEqual(sim.revocations, [
        { email: ALICE, tokenType: 'refresh_token', token: alice.refresh_token },
        { email: BOB, tokenType: 'access_token', token: bob.access_token },
      ]);
      assert.equal(sim.calls.filter((c) => c.method === 'POST' && c.path === '/revoke').length, 3);
    });
  });

  describe('userinfo', function () {
    it('returns sub, email and email_verified for the consenting account, matching the id_token', async function () {
      const tokens = await connect(sim, BOB);
      const response = await userinfo(sim, tokens.access_token);
      assert.equal(response.status, 200);
      const info = (await response.json()) as Record<string, unknown>;
      assert.deepEqual(info, { sub: decodeJwt(tokens.id_token ?? '').claims.sub, email: BOB, email_verified: true });
    });

    it('leaves email out when the email scope was not requested', async function () {
      const tokens = await connect(sim, ALICE, { overrides: { scope: `openid ${GOOGLE_SCOPES.monetary}` } });
      const info = (await (await userinfo(sim, tokens.access_token)).json()) as Record<string, unknown>;
      assert.deepEqual(Object.keys(info), ['sub']);
    });

    it('answers 401 with Google’s body and a Bearer challenge for a missing or unknown token', async function () {
      for (const headers of [{}, { authorization: 'Bearer ya29.unknown' }] as Array<Record<string, string>>) {
        const response = await fetch(sim.endpoints.userinfo, { headers });
        assert.match(response.headers.get('www-authenticate') ?? '', /^Bearer realm="https:\/\/accounts\.google\.com\/", error="invalid_token"/);
        await expectOAuthError(response, 401, 'invalid_request', 'Invalid Credentials');
      }
    });

    it('answers 401 once the access token has expired (3599 s), until it is refreshed', async function () {
      const clock = new ManualClock('2026-04-01T00:00:00Z');
      const timed = await startGoogleSimulator({ clock });
      try {
        timed.addAccount(aliceAccount);
        const tokens = await connect(timed, ALICE);
        clock.advance(3598 * 1000);
        assert.equal((await userinfo(timed, tokens.access_token)).status, 200);
        clock.advance(1000);
        assert.equal((await userinfo(timed, tokens.access_token)).status, 401);
        await expectApiError(await report(timed, tokens.access_token), 401, 'UNAUTHENTICATED', 'authError');
        const refreshed = (await (await tokenRequest(timed, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token ?? '' })).json()) as Tokens;
        assert.equal((await userinfo(timed, refreshed.access_token)).status, 200);
      } finally {
        await timed.close();
      }
    });

    it('lets a refresh token renew access long after the consent, each new access token expiring in turn', async function () {
      const clock = new ManualClock('2026-04-01T00:00:00Z');
      const timed = await startGoogleSimulator({ clock });
      try {
        timed.addAccount(aliceAccount);
        const tokens = await connect(timed, ALICE);
        // A monthly re-read: the consent's access token is long dead, the refresh token is not.
        clock.advance(31 * 24 * 3600 * 1000);
        await expectApiError(await report(timed, tokens.access_token), 401, 'UNAUTHENTICATED', 'authError');
        const response = await tokenRequest(timed, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token ?? '' });
        assert.equal(response.status, 200);
        const refreshed = (await response.json()) as Tokens;
        assert.equal(refreshed.expires_in, 3599);
        assert.equal(refreshed.refresh_token, undefined);
        assert.equal((await report(timed, refreshed.access_token)).status, 200);
        clock.advance(3599 * 1000);
        await expectApiError(await report(timed, refreshed.access_token), 401, 'UNAUTHENTICATED', 'authError');
      } finally {
        await timed.close();
      }
    });
  });

  describe('YouTube Analytics reports.query', function () {
    let alice: Tokens;
    let bob: Tokens;
    beforeEach(async function () {
      alice = await connect(sim, ALICE);
      bob = await connect(sim, BOB);
    });

    async function rows(accessToken: string, overrides: Record<string, string | null> = {}): Promise<unknown> {
      const response = await report(sim, accessToken, overrides);
      const body = (await response.json()) as { rows?: unknown };
      assert.equal(response.status, 200, JSON.stringify(body));
      return body.rows;
    }

    it('returns the result table: one row per month in range that has data, ascending', async function () {
      const response = await report(sim, alice.access_token, { currency: 'USD' });
      assert.equal(response.status, 200);
      assert.match(response.headers.get('content-type') ?? '', /^application\/json/);
      assert.deepEqual(await response.json(), {
        kind: 'youtubeAnalytics#resultTable',
        columnHeaders: [
          { name: 'month', columnType: 'DIMENSION', dataType: 'STRING' },
          { name: 'estimatedRevenue', columnType: 'METRIC', dataType: 'FLOAT' },
        ],
        rows: [
          ['2025-12', 200],
          ['2026-01', 123.45],
          ['2026-03', 50],
        ],
      });
    });

    it('includes a month whose first day is on or before endDate, whatever the day of endDate', async function () {
      assert.deepEqual(await rows(alice.access_token, { startDate: '2025-11-01', endDate: '2026-01-01' }), [
        ['2025-11', 100.5],
        ['2025-12', 200],
        ['2026-01', 123.45],
      ]);
      assert.deepEqual(await rows(alice.access_token, { startDate: '2026-03-01', endDate: '2026-03-01' }), [['2026-03', 50]]);
    });

    it('leaves out "rows" when the range holds no data, as Google does', async function () {
      assert.equal(await rows(alice.access_token, { startDate: '2024-01-01', endDate: '2024-12-31' }), undefined);
    });

    it('serves each token its own account, and accepts the own channel id in ids', async function () {
      assert.deepEqual(await rows(bob.access_token, { currency: 'EUR' }), [['2026-01', 92]]);
      assert.deepEqual(await rows(bob.access_token, { ids: `channel==${bobAccount.channelId}`, currency: 'EUR' }), [['2026-01', 92]]);
    });

    it('reports in USD when currency is omitted, converting from the account currency', async function () {
      assert.deepEqual(await rows(bob.access_token), [['2026-01', 100]]);
    });

    it('converts to the requested currency with the fixed table', async function () {
      assert.deepEqual(await rows(bob.access_token, { currency: 'GBP' }), [['2026-01', 79]]);
      assert.deepEqual(await rows(alice.access_token, { currency: 'JPY', startDate: '2026-01-01', endDate: '2026-01-31' }), [['2026-01', 18517.5]]);
    });

    it('sorts descending with sort=-month', async function () {
      assert.deepEqual(await rows(alice.access_token, { sort: '-month' }), [
        ['2026-03', 50],
        ['2026-01', 123.45],
        ['2025-12', 200],
      ]);
    });

    it('answers 401 UNAUTHENTICATED for a missing or unknown token', async function () {
      const missing = await report(sim, undefined);
      assert.equal(missing.headers.get('www-authenticate'), 'Bearer realm="https://accounts.google.com/"');
      await expectApiError(missing, 401, 'UNAUTHENTICATED', 'required');
      const unknown = await report(sim, 'ya29.unknown');
      assert.match(unknown.headers.get('www-authenticate') ?? '', /error="invalid_token"/);
      const error = await expectApiError(unknown, 401, 'UNAUTHENTICATED', 'authError');
      assert.deepEqual(error.errors?.[0], {
        message: 'Invalid Credentials',
        domain: 'global',
        reason: 'authError',
        location: 'Authorization',
        locationType: 'header',
      });
    });

    it('answers 403 Forbidden when the token has only the non-monetary Analytics scope', async function () {
      const readonly = await connect(sim, ALICE, { overrides: { scope: `openid email ${GOOGLE_SCOPES.analytics}` } });
      await expectApiError(await report(sim, readonly.access_token), 403, 'PERMISSION_DENIED', 'forbidden');
    });

    it('answers 403 Forbidden for another creator’s channel', async function () {
      await expectApiError(await report(sim, alice.access_token, { ids: `channel==${bobAccount.channelId}` }), 403, 'PERMISSION_DENIED', 'forbidden');
    });

    const badQueries: Array<[string, Record<string, string | null>, string, RegExp]> = [
      ['missing ids', { ids: null }, 'required', /^Required$/],
      ['missing startDate', { startDate: null }, 'required', /^Required$/],
      ['missing endDate', { endDate: null }, 'required', /^Required$/],
      ['missing metrics', { metrics: null }, 'required', /^Required$/],
      ['a date not in YYYY-MM-DD', { startDate: '12/01/2025' }, 'invalidParameter', /regular expression/],
      ['an impossible date', { endDate: '2026-02-30' }, 'invalidParameter', /not a calendar date/],
      ['a lower-case currency', { currency: 'usd' }, 'invalidParameter', /\[A-Z\]\{3\}/],
      ['an unknown metric', { metrics: 'estimatedRevenue,bogus' }, 'badRequest', /Unknown identifier \(bogus\)/],
      ['a metric the simulator does not serve', { metrics: 'views' }, 'badRequest', /query is not supported/],
      ['dimensions=day', { dimensions: 'day' }, 'badRequest', /query is not supported/],
      ['no dimensions', { dimensions: null }, 'badRequest', /query is not supported/],
      ['filters', { filters: 'country==US' }, 'badRequest', /query is not supported/],
      ['an unsupported sort', { sort: '-estimatedRevenue' }, 'badRequest', /query is not supported/],
      ['malformed ids', { ids: 'MINE' }, 'badRequest', /ids/],
      ['endDate before startDate', { startDate: '2026-03-01', endDate: '2026-01-31' }, 'badRequest', /on or before/],
      ['startDate not the first of a month', { startDate: '2025-12-15' }, 'badRequest', /first day of a month/],
      ['a currency outside the table', { currency: 'CHF' }, 'badRequest', /Unsupported currency: CHF/],
    ];
    for (const [name, overrides, reason, message] of badQueries) {
      it(`answers 400 INVALID_ARGUMENT for ${name}`, async function () {
        const error = await expectApiError(await report(sim, alice.access_token, overrides), 400, 'INVALID_ARGUMENT', reason);
        assert.match(error.message, message);
      });
    }
  });

  describe('faults', function () {
    const unavailable = { error: { code: 503, message: 'The service is currently unavailable.', status: 'UNAVAILABLE' } };

    it('server_error fails the next call only by default, then the service recovers', async function () {
      const tokens = await connect(sim, ALICE);
      sim.inject('server_error');
      const failed = await report(sim, tokens.access_token);
      assert.equal(failed.status, 503);
      assert.deepEqual(await failed.json(), unavailable);
      assert.equal((await report(sim, tokens.access_token)).status, 200);
    });

    it('server_error counts token, userinfo and analytics calls alike, `times` of them', async function () {
      const tokens = await connect(sim, ALICE);
      sim.inject('server_error', { times: 3 });
      assert.equal((await tokenRequest(sim, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token ?? '' })).status, 503);
      assert.equal((await userinfo(sim, tokens.access_token)).status, 503);
      assert.equal((await report(sim, tokens.access_token)).status, 503);
      assert.equal((await report(sim, tokens.access_token)).status, 200);
    });

    it('server_error fails /revoke before the token is looked at, so the consent lives on and a retry revokes it', async function () {
      const alice = await connect(sim, ALICE);
      const bob = await connect(sim, BOB);
      sim.inject('server_error', { times: 2, email: ALICE });
      assert.equal((await revokeRequest(sim, bob.refresh_token ?? '')).status, 200, 'a fault for Alice leaves Bob alone');
      for (let i = 0; i < 2; i++) {
        const failed = await revokeRequest(sim, alice.refresh_token ?? '');
        assert.equal(failed.status, 503);
        assert.deepEqual(await failed.json(), unavailable);
      }
      assert.equal((await report(sim, alice.access_token)).status, 200, 'a failed revocation revoked nothing');
      assert.equal((await revokeRequest(sim, alice.refresh_token ?? '')).status, 200);
      assert.equal((await report(sim, alice.access_token)).status, 401);
      assert.deepEqual(
        sim.revocations.map((r) => r.email),
        [BOB, ALICE],
      );
    });

    it('server_error without an email also strikes /revoke', async function () {
      const tokens = await connect(sim, ALICE);
      sim.inject('server_error');
      assert.equal((await revokeRequest(sim, tokens.access_token)).status, 503);
      assert.equal((await revokeRequest(sim, tokens.access_token)).status, 200);
    });

    it('server_error fails the code exchange without consuming the code, so a retry succeeds', async function () {
      const { callback, verifier } = await consent(sim, ALICE);
      const fields = { grant_type: 'authorization_code', code: callback.searchParams.get('code') ?? '', redirect_uri: REDIRECT_URI, code_verifier: verifier };
      sim.inject('server_error');
      const failed = await tokenRequest(sim, fields);
      assert.equal(failed.status, 503);
      assert.deepEqual(await failed.json(), unavailable);
      assert.equal((await tokenRequest(sim, fields)).status, 200);
    });

    it('server_error with an email only hits calls made for that account', async function () {
      const alice = await connect(sim, ALICE);
      const bob = await connect(sim, BOB);
      sim.inject('server_error', { email: BOB });
      assert.equal((await report(sim, alice.access_token)).status, 200);
      assert.equal((await report(sim, bob.access_token)).status, 503);
      assert.equal((await report(sim, bob.access_token)).status, 200);
    });

    it('revoked: refresh is invalid_grant and the APIs answer 401, while other accounts and a fresh consent work', async function () {
      const alice = await connect(sim, ALICE);
      const bob = await connect(sim, BOB);
      sim.inject('revoked', { email: ALICE });
      await expectOAuthError(
        await tokenRequest(sim, { grant_type: 'refresh_token', refresh_token: alice.refresh_token ?? '' }),
        400,
        'invalid_grant',
        'Token has been expired or revoked.',
      );
      await expectApiError(await report(sim, alice.access_token), 401, 'UNAUTHENTICATED', 'authError');
      assert.equal((await userinfo(sim, alice.access_token)).status, 401);
      assert.equal((await report(sim, bob.access_token)).status, 200);
      // Revocation ends the existing consent; the creator reconnecting gives new, working tokens.
      const again = await connect(sim, ALICE);
      assert.equal((await report(sim, again.access_token)).status, 200);
    });

    it('revoked without an email revokes every account', async function () {
      const alice = await connect(sim, ALICE);
      const bob = await connect(sim, BOB);
      sim.inject('revoked');
      assert.equal((await report(sim, alice.access_token)).status, 401);
      assert.equal((await report(sim, bob.access_token)).status, 401);
    });

    it('slow delays the next analytics call by slowMs, and only that one', async function () {
      const tokens = await connect(sim, ALICE);
      sim.inject('slow', { slowMs: 300 });
      let started = performance.now();
      assert.equal((await report(sim, tokens.access_token)).status, 200);
      assert.ok(performance.now() - started >= 290, 'the slow call answered early');
      started = performance.now();
      assert.equal((await report(sim, tokens.access_token)).status, 200);
      assert.ok(performance.now() - started < 250, 'the fault outlived its one call');
    });

    it('slow lets a client give up with a timeout, the way the service will', async function () {
      const tokens = await connect(sim, ALICE);
      sim.inject('slow', { slowMs: 5000 });
      await assert.rejects(
        fetch(reportUrl(sim), { headers: { authorization: `Bearer ${tokens.access_token}` }, signal: AbortSignal.timeout(100) }),
        (error: Error) => error.name === 'TimeoutError',
      );
    });

    it('close() does not wait for a slow call in flight', async function () {
      const tokens = await connect(sim, ALICE);
      sim.inject('slow', { slowMs: 60_000 });
      const pending = fetch(reportUrl(sim), { headers: { authorization: `Bearer ${tokens.access_token}` } }).catch((error: unknown) => error);
      await new Promise((resolve) => setTimeout(resolve, 50));
      const started = performance.now();
      await sim.close();
      assert.ok(performance.now() - started < 1000);
      assert.ok((await pending) instanceof Error, 'the in-flight call is cut off');
      sim = await startGoogleSimulator(); // afterEach closes it
    });

    it('rejects inject for an account that was never added', function () {
      assert.throws(() => sim.inject('revoked', { email: 'nobody@example.com' }), /no account/);
    });
  });

  describe('bookkeeping', function () {
    it('records every call with method, path, query and form body', async function () {
      const tokens = await connect(sim, ALICE);
      await report(sim, tokens.access_token, { currency: 'USD' });
      assert.deepEqual(
        sim.calls.map((c) => `${c.method} ${c.path}`),
        ['GET /o/oauth2/v2/auth', 'POST /o/oauth2/v2/auth', 'POST /token', 'GET /v2/reports'],
      );
      const [authorize, decision, exchange, query] = sim.calls;
      assert.equal(authorize?.query.code_challenge_method, 'S256');
      assert.equal(decision?.body.email, ALICE);
      assert.equal(decision?.body.granted_scope, GOOGLE_SCOPES.monetary);
      assert.equal(exchange?.body.grant_type, 'authorization_code');
      assert.equal(exchange?.body.client_secret, sim.clientSecret);
      assert.deepEqual(query?.query, {
        ids: 'channel==MINE',
        startDate: '2025-12-01',
        endDate: '2026-03-31',
        metrics: 'estimatedRevenue',
        dimensions: 'month',
        currency: 'USD',
      });
    });

    it('publishes an OpenID discovery document naming its endpoints', async function () {
      const doc = (await (await fetch(`${sim.baseUrl}/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
      assert.equal(doc.authorization_endpoint, sim.endpoints.authorize);
      assert.equal(doc.token_endpoint, sim.endpoints.token);
      assert.equal(doc.userinfo_endpoint, sim.endpoints.userinfo);
      assert.equal(doc.revocation_endpoint, sim.endpoints.revoke);
    });

    it('validates accounts as they are added', function () {
      assert.throws(() => sim.addAccount({ ...aliceAccount, monthlyRevenue: { '2026-1': 5 } }), /YYYY-MM/);
      assert.throws(() => sim.addAccount({ ...aliceAccount, currency: 'XYZ' }), /USD_EXCHANGE_RATES/);
    });

    it('replaces an account added again, so a test can change revenue between fetches', async function () {
      const tokens = await connect(sim, ALICE);
      sim.addAccount({ ...aliceAccount, monthlyRevenue: { '2026-01': 1 } });
      const body = (await (await report(sim, tokens.access_token, { currency: 'USD' })).json()) as { rows: unknown };
      assert.deepEqual(body.rows, [['2026-01', 1]]);
    });

    it('listens on the port asked for', async function () {
      const probe = await startGoogleSimulator();
      const port = Number(new URL(probe.baseUrl).port);
      await probe.close();
      const fixed = await startGoogleSimulator({ port });
      try {
        assert.equal(fixed.baseUrl, `http://127.0.0.1:${port}`);
      } finally {
        await fixed.close();
      }
    });
  });
});
