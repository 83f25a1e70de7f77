import assert from 'node:assert/strict';
import { ManualClock } from '../../src/platform/clock.ts';
import { maskKey, startStripeSimulator, type StripeSimulator, type StripeTransaction } from './stripe.ts';

const REDIRECT = 'http://127.0.0.1:9/callback';
const MAY_2025 = Date.UTC(2025, 4, 1) / 1000;
const DAY = 86_400;

interface Form {
  action: string;
  fields: Record<string, string>;
  buttons: Array<{ name: string; value: string; text: string }>;
}

const unescape = (value: string) =>
  value.replace(/&(amp|lt|gt|quot|#39);/g, (_, e: string) => ({ amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'" })[e] as string);

/** Reads the consent page the way a browser would, so the tests depend on its markup, not on internals. */
function parseForms(html: string): Form[] {
  return [...html.matchAll(/<form\b([^>]*)>([\s\S]*?)<\/form>/g)].map((m) => {
    const attrs = m[1] as string;
    const inner = m[2] as string;
    assert.match(attrs, /method="post"/);
    const fields: Record<string, string> = {};
    for (const input of inner.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) fields[input[1] as string] = unescape(input[2] as string);
    const buttons = [...inner.matchAll(/<button type="submit" name="([^"]+)" value="([^"]+)"[^>]*>([^<]*)<\/button>/g)].map((b) => ({
      name: b[1] as string,
      value: b[2] as string,
      text: b[3] as string,
    }));
    return { action: unescape(/action="([^"]+)"/.exec(attrs)?.[1] ?? ''), fields, buttons };
  });
}

async function submit(sim: StripeSimulator, form: Form, buttonText: string) {
  const button = form.buttons.find((b) => b.text === buttonText);
  assert.ok(button, `no ${buttonText} button`);
  return fetch(new URL(form.action, sim.baseUrl), {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ ...form.fields, [button.name]: button.value }),
  });
}

function authorizeUrl(sim: StripeSimulator, params: Record<string, string | undefined> = {}) {
  const url = new URL(sim.endpoints.authorize);
  const all = { response_type: 'code', client_id: sim.clientId, scope: 'read_only', state: 'st-123', redirect_uri: REDIRECT, ...params };
  for (const [key, value] of Object.entries(all)) if (value !== undefined) url.searchParams.set(key, value);
  return url;
}

async function consentPage(sim: StripeSimulator, params: Record<string, string | undefined> = {}) {
  const response = await fetch(authorizeUrl(sim, params), { redirect: 'manual' });
  assert.equal(response.status, 200);
  return response.text();
}

/** Walks the creator's side of the flow and returns where Stripe sent the browser back. */
async function authorize(sim: StripeSimulator, accountId: string, params: Record<string, string | undefined> = {}) {
  const forms = parseForms(await consentPage(sim, params));
  const form = forms.find((f) => f.fields.account === accountId);
  assert.ok(form, `no form for ${accountId}`);
  const response = await submit(sim, form, 'Connect');
  assert.equal(response.status, 302);
  return new URL(response.headers.get('location') as string);
}

async function tokenRequest(sim: StripeSimulator, fields: Record<string, string>, headers: Record<string, string> = {}) {
  const response = await fetch(sim.endpoints.token, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(fields),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown>, headers: response.headers };
}

async function connect(sim: StripeSimulator, accountId: string) {
  const code = (await authorize(sim, accountId)).searchParams.get('code') as string;
  const { status, body } = await tokenRequest(sim, { grant_type: 'authorization_code', code, client_secret: sim.secretKey });
  assert.equal(status, 200, JSON.stringify(body));
  return body as { access_token: string; refresh_token: string; stripe_user_id: string; scope: string };
}

async function api(sim: StripeSimulator, path: string, auth: { key?: string; account?: string } = {}) {
  const headers: Record<string, string> = {};
  const key = 'key' in auth ? auth.key : sim.secretKey;
  if (key !== undefined) headers.authorization = `Bearer ${key}`;
  if (auth.account) headers['stripe-account'] = auth.account;
  const response = await fetch(`${sim.endpoints.api}${path}`, { headers });
  return { status: response.status, body: (await response.json()) as ApiBody, headers: response.headers };
}

/** A balance transaction as the simulated API lists it. */
interface ListedTransaction {
  id: string;
  object: string;
  amount: number;
  currency: string;
  created: number;
  available_on: number;
  type: string;
  status: string;
  reporting_category: string;
  fee: number;
  net: number;
  source: string;
  fee_details: unknown[];
}

interface Page {
  object: string;
  data: ListedTransaction[];
  has_more: boolean;
  url: string;
}

/**
 * A body of the simulated API: a list page, an account or a Stripe error, whichever the request
 * answers with. A test reads the members of the one it expects; one that is missing fails its assertion.
 */
type ApiBody = Page & {
  id: string;
  email: string;
  error: { type: string; message: string; code?: string; param?: string; doc_url?: string };
};

const txns = (count: number, from: number, step: number, make: (i: number) => Partial<StripeTransaction> = () => ({})): StripeTransaction[] =>
  Array.from({ length: count }, (_, i) => ({ amount: 1000 + i, currency: 'usd', created: from + i * step, type: 'charge' as const, ...make(i) }));

describe('Stripe simulator', function () {
  this.timeout(20_000);
  let sim: StripeSimulator;
  let clock: ManualClock;

  beforeEach(async () => {
    clock = new ManualClock('2025-07-01T00:00:00Z');
    sim = await startStripeSimulator({ clock });
    sim.addAccount({ accountId: 'acct_creator1', email: 'ana@example.com', transactions: txns(3, MAY_2025, DAY) });
    sim.addAccount({ accountId: 'acct_creator2', email: 'bo@example.com', transactions: [] });
  });
  afterEach(() => sim.close());

  describe('Connect OAuth authorize', () => {
    it('serves a self-contained, labelled consent page with one Connect form per account and a Deny form', async () => {
      const response = await fetch(authorizeUrl(sim));
      assert.equal(response.status, 200);
      assert.match(response.headers.get('content-type') as string, /^text\/html/);
      assert.match(response.headers.get('request-id') as string, /^req_[A-Za-z0-9]{14}$/);
      const html = await response.text();
      assert.match(html, /<html lang="en">/);
      assert.match(html, /<title>[^<]+<\/title>/);
      assert.match(html, /<main>/);
      assert.doesNotMatch(html, /\b(?:src|href)=/, 'no external assets');
      assert.match(html, /view your Stripe data \(read only\)/);
      const forms = parseForms(html);
      assert.deepEqual(
        forms.map((f) => [f.fields.account ?? null, f.buttons.map((b) => b.text)]),
        [
          ['acct_creator1', ['Connect']],
          ['acct_creator2', ['Connect']],
          [null, ['Deny']],
        ],
      );
      assert.match(html, /ana@example\.com/);
      // Each Connect button is described by its account, so a screen reader hears which one it connects.
      assert.match(html, /aria-describedby="label-acct_creator1"/);
      assert.match(html, /id="label-acct_creator1"/);
    });

    it('redirects Connect with a single-use ac_ code, the scope and the state', async () => {
      const back = await authorize(sim, 'acct_creator1', { redirect_uri: `${REDIRECT}?from=test` });
      assert.equal(`${back.origin}${back.pathname}`, REDIRECT);
      assert.equal(back.searchParams.get('from'), 'test', 'an existing query on the redirect URI is kept');
      assert.match(back.searchParams.get('code') as string, /^ac_[A-Za-z0-9]{32}$/);
      assert.equal(back.searchParams.get('scope'), 'read_only');
      assert.equal(back.searchParams.get('state'), 'st-123');
    });

    it('redirects Deny with access_denied and the description form-encoded', async () => {
      const forms = parseForms(await consentPage(sim));
      const response = await submit(sim, forms.at(-1) as Form, 'Deny');
      assert.equal(response.status, 302);
      const location = response.headers.get('location') as string;
      assert.equal(location, `${REDIRECT}?error=access_denied&error_description=The+user+denied+your+request&state=st-123`);
    });

    it('answers each consent page once', async () => {
      const forms = parseForms(await consentPage(sim));
      assert.equal((await submit(sim, forms[0] as Form, 'Connect')).status, 302);
      const again = await submit(sim, forms[1] as Form, 'Connect');
      assert.equal(again.status, 400);
      assert.equal(again.headers.get('location'), null);
    });

    it('shows an error page, never a redirect, for a bad client or redirect URI', async () => {
      for (const params of [
        { client_id: 'ca_unknown' },
        { client_id: undefined },
        { redirect_uri: undefined },
        { redirect_uri: 'not a url' },
        { redirect_uri: 'javascript:alert(1)' },
      ]) {
        const response = await fetch(authorizeUrl(sim, params), { redirect: 'manual' });
        assert.equal(response.status, 400, JSON.stringify(params));
        assert.equal(response.headers.get('location'), null);
        assert.match(response.headers.get('content-type') as string, /^text\/html/);
        assert.match(await response.text(), /role="alert"/);
      }
    });

    it('reports a bad scope or response_type to the redirect URI, with the state', async () => {
      const scope = await fetch(authorizeUrl(sim, { scope: 'admin' }), { redirect: 'manual' });
      assert.equal(scope.status, 302);
      const scopeBack = new URL(scope.headers.get('location') as string);
      assert.equal(scopeBack.searchParams.get('error'), 'invalid_scope');
      assert.equal(scopeBack.searchParams.get('state'), 'st-123');

      const type = await fetch(authorizeUrl(sim, { response_type: 'token' }), { redirect: 'manual' });
      assert.equal(new URL(type.headers.get('location') as string).searchParams.get('error'), 'unsupported_response_type');
    });

    it('defaults the scope to read_only, accepts read_write, and omits an absent state as Stripe does', async () => {
      const plain = await authorize(sim, 'acct_creator1', { scope: undefined, state: undefined });
      assert.equal(plain.searchParams.get('scope'), 'read_only');
      assert.equal(plain.searchParams.has('state'), false);
      const write = await authorize(sim, 'acct_creator1', { scope: 'read_write' });
      assert.equal(write.searchParams.get('scope'), 'read_write');
    });
  });

  describe('Connect OAuth token', () => {
    it('exchanges a code for the token response and connects the account', async () => {
      const code = (await authorize(sim, 'acct_creator1')).searchParams.get('code') as string;
      const before = await api(sim, '/v1/account', { account: 'acct_creator1' });
      assert.equal(before.status, 403, 'not reachable until the code is exchanged');

      const { status, body, headers } = await tokenRequest(sim, { grant_type: 'authorization_code', code, client_secret: sim.secretKey });
      assert.equal(status, 200);
      assert.match(headers.get('request-id') as string, /^req_/);
      assert.deepEqual(Object.keys(body).sort(), [
        'access_token',
        'livemode',
        'refresh_token',
        'scope',
        'stripe_publishable_key',
        'stripe_user_id',
        'token_type',
      ]);
      assert.match(body.access_token as string, /^sk_test_/);
      assert.match(body.refresh_token as string, /^rt_/);
      assert.match(body.stripe_publishable_key as string, /^pk_test_/);
      assert.equal(body.token_type, 'bearer');
      assert.equal(body.livemode, false);
      assert.equal(body.stripe_user_id, 'acct_creator1');
      assert.equal(body.scope, 'read_only');

      const viaHeader = await api(sim, '/v1/account', { account: 'acct_creator1' });
      assert.equal(viaHeader.status, 200);
      assert.deepEqual([viaHeader.body.id, viaHeader.body.object, viaHeader.body.email], ['acct_creator1', 'account', 'ana@example.com']);
      const viaToken = await api(sim, '/v1/account', { key: body.access_token as string });
      assert.equal(viaToken.body.email, 'ana@example.com');
    });

    it('accepts the platform key as Bearer or Basic as well as client_secret', async () => {
      for (const authorization of [`Bearer ${sim.secretKey}`, `Basic ${Buffer.from(`${sim.secretKey}:`).toString('base64')}`]) {
        const code = (await authorize(sim, 'acct_creator1')).searchParams.get('code') as string;
        const { status } = await tokenRequest(sim, { grant_type: 'authorization_code', code }, { authorization });
        assert.equal(status, 200, authorization.split(' ')[0]);
      }
    });

    it('rejects a wrong key or none with 401 invalid_client, masking the key', async () => {
      const code = (await authorize(sim, 'acct_creator1')).searchParams.get('code') as string;
      const wrong = await tokenRequest(sim, { grant_type: 'authorization_code', code, client_secret: 'sk_test_wrongwrongwrong1234' });
      assert.equal(wrong.status, 401);
      assert.deepEqual(wrong.body, { error: 'invalid_client', error_description: 'No such API key: sk_test_****1234' });
      const none = await tokenRequest(sim, { grant_type: 'authorization_code', code });
      assert.equal(none.status, 401);
      assert.equal(none.body.error, 'invalid_client');
      const ok = await tokenRequest(sim, { grant_type: 'authorization_code', code, client_secret: sim.secretKey });
      assert.equal(ok.status, 200, 'a rejected attempt does not use the code up');
    });

    it('rejects a missing grant type, a missing or unknown code and an unsupported grant', async () => {
      const key = { client_secret: sim.secretKey };
      assert.deepEqual((await tokenRequest(sim, { ...key, code: 'ac_x' })).body, { error: 'invalid_request', error_description: 'No grant type specified' });
      assert.equal((await tokenRequest(sim, { ...key, grant_type: 'authorization_code' })).body.error, 'invalid_request');
      const unknown = await tokenRequest(sim, { ...key, grant_type: 'authorization_code', code: 'ac_doesnotexist' });
      assert.equal(unknown.status, 400);
      assert.deepEqual(unknown.body, { error: 'invalid_grant', error_description: 'Authorization code does not exist: ac_doesnotexist' });
      const grant = await tokenRequest(sim, { ...key, grant_type: 'password' });
      assert.equal(grant.status, 400);
      assert.equal(grant.body.error, 'unsupported_grant_type');
    });

    it('does not read a JSON body, as Stripe reads form encoding only', async () => {
      const code = (await authorize(sim, 'acct_creator1')).searchParams.get('code') as string;
      const response = await fetch(sim.endpoints.token, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${sim.secretKey}` },
        body: JSON.stringify({ grant_type: 'authorization_code', code }),
      });
      assert.equal(response.status, 400);
      assert.equal(((await response.json()) as { error: string }).error, 'invalid_request');
    });

    it('refuses a reused code and revokes every token issued with it', async () => {
      const code = (await authorize(sim, 'acct_creator1')).searchParams.get('code') as string;
      const first = await tokenRequest(sim, { grant_type: 'authorization_code', code, client_secret: sim.secretKey });
      assert.equal((await api(sim, '/v1/account', { key: first.body.access_token as string })).status, 200);

      const second = await tokenRequest(sim, { grant_type: 'authorization_code', code, client_secret: sim.secretKey });
      assert.equal(second.status, 400);
      assert.deepEqual(second.body, {
        error: 'invalid_grant',
        error_description: 'This authorization code has already been used. All tokens issued with this code have been revoked.',
      });
      assert.equal((await api(sim, '/v1/account', { key: first.body.access_token as string })).status, 401);
      const refresh = await tokenRequest(sim, { grant_type: 'refresh_token', refresh_token: first.body.refresh_token as string, client_secret: sim.secretKey });
      assert.equal(refresh.body.error, 'invalid_grant');
    });

    it('expires a code after five minutes', async () => {
      const code = (await authorize(sim, 'acct_creator1')).searchParams.get('code') as string;
      clock.advance(5 * 60 * 1000);
      const late = await tokenRequest(sim, { grant_type: 'authorization_code', code, client_secret: sim.secretKey });
      assert.equal(late.status, 400);
      assert.deepEqual(late.body, { error: 'invalid_grant', error_description: `Authorization code expired: ${code}` });

      const fresh = (await authorize(sim, 'acct_creator1')).searchParams.get('code') as string;
      clock.advance(5 * 60 * 1000 - 1);
      assert.equal((await tokenRequest(sim, { grant_type: 'authorization_code', code: fresh, client_secret: sim.secretKey })).status, 200);
    });

    it('mints a new access token from a refresh token, never a wider scope', async () => {
      const tokens = await connect(sim, 'acct_creator1');
      const refreshed = await tokenRequest(sim, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_secret: sim.secretKey });
      assert.equal(refreshed.status, 200);
      assert.notEqual(refreshed.body.access_token, tokens.access_token);
      assert.equal(refreshed.body.refresh_token, tokens.refresh_token);
      assert.equal(refreshed.body.stripe_user_id, 'acct_creator1');
      assert.equal((await api(sim, '/v1/account', { key: refreshed.body.access_token as string })).status, 200);

      const wider = await tokenRequest(sim, {
        grant_type: 'refresh_token',
        refresh_token: tokens.refresh_token,
        scope: 'read_write',
        client_secret: sim.secretKey,
      });
      assert.equal(wider.status, 400);
      assert.equal(wider.body.error, 'invalid_scope');
      const unknown = await tokenRequest(sim, { grant_type: 'refresh_token', refresh_token: 'rt_nope', client_secret: sim.secretKey });
      assert.deepEqual(unknown.body, { error: 'invalid_grant', error_description: 'Refresh token does not exist: rt_nope' });
    });
  });

  describe('Connect OAuth deauthorize', () => {
    const deauthorize = async (fields: Record<string, string>, key?: string) => {
      const response = await fetch(sim.endpoints.deauthorize, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...(key ? { authorization: `Bearer ${key}` } : {}) },
        body: new URLSearchParams(fields),
      });
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    };

    it('answers with the stripe_user_id and cuts the platform off', async () => {
      const tokens = await connect(sim, 'acct_creator1');
      const done = await deauthorize({ client_id: sim.clientId, stripe_user_id: 'acct_creator1' }, sim.secretKey);
      assert.equal(done.status, 200);
      assert.deepEqual(done.body, { stripe_user_id: 'acct_creator1' });

      assert.equal((await api(sim, '/v1/balance_transactions', { account: 'acct_creator1' })).status, 403);
      assert.equal((await api(sim, '/v1/balance_transactions', { key: tokens.access_token })).status, 401);

      const again = await deauthorize({ client_id: sim.clientId, stripe_user_id: 'acct_creator1' }, sim.secretKey);
      assert.equal(again.status, 401);
      assert.deepEqual(again.body, {
        error: 'invalid_client',
        error_description: 'This application is not connected to stripe account acct_creator1, or that account does not exist.',
      });
    });

    it('requires the platform key and its own client_id', async () => {
      await connect(sim, 'acct_creator1');
      assert.equal((await deauthorize({ client_id: sim.clientId, stripe_user_id: 'acct_creator1' }, 'sk_test_nottheplatformkey')).status, 401);
      assert.equal((await deauthorize({ client_id: 'ca_other', stripe_user_id: 'acct_creator1' }, sim.secretKey)).body.error, 'invalid_client');
      assert.equal((await deauthorize({ stripe_user_id: 'acct_creator1' }, sim.secretKey)).body.error, 'invalid_request');
      assert.equal((await deauthorize({ client_id: sim.clientId, stripe_user_id: 'acct_creator1', client_secret: sim.secretKey })).status, 200);
    });

    it('answers an account it does not know, or never connected, as one no longer connected', async () => {
      for (const accountId of ['acct_unknown', 'acct_creator2']) {
        const refused = await deauthorize({ client_id: sim.clientId, stripe_user_id: accountId }, sim.secretKey);
        assert.equal(refused.status, 401);
        assert.deepEqual(refused.body, {
          error: 'invalid_client',
          error_description: `This application is not connected to stripe account ${accountId}, or that account does not exist.`,
        });
      }
    });

    it('records each disconnection in deauthorizations; refused requests only in calls', async () => {
      await connect(sim, 'acct_creator1');
      await connect(sim, 'acct_creator2');
      await deauthorize({ client_id: sim.clientId, stripe_user_id: 'acct_creator2' }, sim.secretKey);
      await deauthorize({ client_id: sim.clientId, stripe_user_id: 'acct_creator2' }, sim.secretKey);
      await deauthorize({ client_id: sim.clientId, stripe_user_id: 'acct_creator1' }, 'sk_test_nottheplatformkey');
      await deauthorize({ client_id: sim.clientId, stripe_user_id: 'acct_creator1' }, sim.secretKey);
      assert.deepEqual(sim.deauthorizations, [
        { accountId: 'acct_creator2', clientId: sim.clientId },
        { accountId: 'acct_creator1', clientId: sim.clientId },
      ]);
      const posts = sim.calls.filter((c) => c.path === '/oauth/deauthorize');
      assert.equal(posts.length, 4);
      assert.deepEqual(posts[0]?.body, { client_id: sim.clientId, stripe_user_id: 'acct_creator2' });
    });

    it('server_error for an account fails its deauthorization with 500 api_error and disconnects nothing, so a retry works', async () => {
      await connect(sim, 'acct_creator1');
      await connect(sim, 'acct_creator2');
      sim.inject('server_error', { times: 2, accountId: 'acct_creator1' });
      assert.equal((await deauthorize({ client_id: sim.clientId, stripe_user_id: 'acct_creator2' }, sim.secretKey)).status, 200, 'other accounts unaffected');
      for (let i = 0; i < 2; i++) {
        const failed = await deauthorize({ client_id: sim.clientId, stripe_user_id: 'acct_creator1' }, sim.secretKey);
        assert.equal(failed.status, 500);
        assert.equal((failed.body.error as { type: string }).type, 'api_error');
      }
      assert.equal((await api(sim, '/v1/balance_transactions', { account: 'acct_creator1' })).status, 200, 'still connected');
      assert.equal((await deauthorize({ client_id: sim.clientId, stripe_user_id: 'acct_creator1' }, sim.secretKey)).status, 200);
      assert.equal((await api(sim, '/v1/balance_transactions', { account: 'acct_creator1' })).status, 403);
      assert.deepEqual(
        sim.deauthorizations.map((d) => d.accountId),
        ['acct_creator2', 'acct_creator1'],
      );
    });

    it('server_error without an accountId strikes deauthorize before authentication, like a Stripe-wide incident', async () => {
      await connect(sim, 'acct_creator1');
      sim.inject('server_error');
      assert.equal((await deauthorize({ client_id: sim.clientId, stripe_user_id: 'acct_creator1' }, 'sk_test_nottheplatformkey')).status, 500);
      assert.equal((await deauthorize({ client_id: sim.clientId, stripe_user_id: 'acct_creator1' }, sim.secretKey)).status, 200);
    });
  });

  describe('GET /v1/balance_transactions', () => {
    const list = async (query: string, account = 'acct_big') => api(sim, `/v1/balance_transactions${query}`, { account });

    beforeEach(() => {
      // 250 charges a day apart from May 2025 on: more than two pages of the maximum size.
      sim.addAccount({ accountId: 'acct_big', email: 'big@example.com', connected: true, transactions: txns(250, MAY_2025, DAY) });
    });

    it('pages newest first with starting_after until has_more is false', async () => {
      const seen: ListedTransaction[] = [];
      let cursor: string | undefined;
      const pages: boolean[] = [];
      do {
        const { status, body } = await list(`?limit=100${cursor ? `&starting_after=${cursor}` : ''}`);
        assert.equal(status, 200);
        const page = body as Page;
        assert.equal(page.object, 'list');
        assert.equal(page.url, '/v1/balance_transactions');
        seen.push(...page.data);
        pages.push(page.has_more);
        cursor = page.has_more ? page.data.at(-1)?.id : undefined;
      } while (cursor);
      assert.deepEqual(pages, [true, true, false]);
      assert.equal(seen.length, 250);
      assert.equal(new Set(seen.map((t) => t.id)).size, 250);
      const created = seen.map((t) => t.created);
      assert.deepEqual(
        created,
        [...created].sort((a, b) => b - a),
      );
      assert.equal(created[0], MAY_2025 + 249 * DAY);
    });

    it('returns ten by default and the balance transaction shape', async () => {
      const { body, headers } = await list('');
      assert.equal(body.data.length, 10);
      assert.equal(body.has_more, true);
      assert.match(headers.get('request-id') as string, /^req_[A-Za-z0-9]{14}$/);
      const t = body.data[0]!;
      assert.match(t.id, /^txn_/);
      assert.equal(t.object, 'balance_transaction');
      assert.equal(t.amount, 1249);
      assert.equal(t.fee, Math.round(1249 * 0.029) + 30);
      assert.equal(t.net, t.amount - t.fee);
      assert.deepEqual(t.fee_details, [{ amount: t.fee, application: null, currency: 'usd', description: 'Stripe processing fees', type: 'stripe_fee' }]);
      assert.equal(t.reporting_category, 'charge');
      assert.equal(t.available_on, t.created + 2 * DAY);
      assert.match(t.source, /^ch_/);
      assert.ok(['available', 'pending'].includes(t.status));
      assert.deepEqual(Object.keys(t).sort(), [
        'amount',
        'available_on',
        'created',
        'currency',
        'description',
        'exchange_rate',
        'fee',
        'fee_details',
        'id',
        'net',
        'object',
        'reporting_category',
        'source',
        'status',
        'type',
      ]);
    });

    it('reports status from the clock: pending until available_on', async () => {
      clock.set(new Date((MAY_2025 + 249 * DAY + DAY - 1) * 1000));
      const { body } = await list('?limit=3');
      assert.deepEqual(
        body.data.map((t: { status: string }) => t.status),
        ['pending', 'pending', 'available'],
      );
    });

    it('filters by created with inclusive gte/lte and exclusive gt/lt, across pages', async () => {
      const gte = MAY_2025 + 10 * DAY;
      const lte = MAY_2025 + 159 * DAY;
      const first = await list(`?limit=100&created[gte]=${gte}&created[lte]=${lte}`);
      assert.equal(first.body.data.length, 100);
      assert.equal(first.body.data[0]?.created, lte);
      assert.equal(first.body.has_more, true);
      const second = await list(`?limit=100&created%5Bgte%5D=${gte}&created%5Blte%5D=${lte}&starting_after=${first.body.data.at(-1)?.id}`);
      assert.equal(second.body.data.length, 50);
      assert.equal(second.body.data.at(-1)?.created, gte);
      assert.equal(second.body.has_more, false);

      const open = await list(`?limit=100&created[gt]=${gte}&created[lt]=${gte + 3 * DAY}`);
      assert.deepEqual(
        open.body.data.map((t: { created: number }) => t.created),
        [gte + 2 * DAY, gte + DAY],
      );
      const exact = await list(`?created=${gte}`);
      assert.deepEqual(
        exact.body.data.map((t: { created: number }) => t.created),
        [gte],
      );
    });

    it('pages backwards with ending_before', async () => {
      const page = (await list('?limit=5')).body as Page;
      const next = (await list(`?limit=5&starting_after=${page.data.at(-1)?.id}`)).body as Page;
      const back = (await list(`?limit=5&ending_before=${next.data[0]?.id}`)).body as Page;
      assert.deepEqual(
        back.data.map((t) => t.id),
        page.data.map((t) => t.id),
      );
      assert.equal(back.has_more, false);
    });

    it('keeps refunds negative with no fee, beside charges in several currencies', async () => {
      sim.addAccount({
        accountId: 'acct_mixed',
        email: 'mixed@example.com',
        connected: true,
        transactions: [
          { amount: 5000, currency: 'usd', created: MAY_2025, type: 'charge' },
          { amount: -2000, currency: 'usd', created: MAY_2025 + 10, type: 'refund' },
          { amount: 4200, currency: 'eur', created: MAY_2025 + 20, type: 'payment' },
          { amount: 30000, currency: 'jpy', created: MAY_2025 + 30, type: 'charge', fee: 0 },
          { amount: -7000, currency: 'usd', created: MAY_2025 + 40, type: 'payout' },
          { amount: -150, currency: 'usd', created: MAY_2025 + 50, type: 'stripe_fee' },
          { amount: 75, currency: 'eur', created: MAY_2025 + 60, type: 'adjustment', id: 'txn_fixedid' },
        ],
      });
      const { body } = await list('?limit=100', 'acct_mixed');
      const rows = (body as Page).data.map((t) => [t.type, t.amount, t.currency, t.reporting_category, t.net === t.amount - t.fee]);
      assert.deepEqual(rows, [
        ['adjustment', 75, 'eur', 'other_adjustment', true],
        ['stripe_fee', -150, 'usd', 'fee', true],
        ['payout', -7000, 'usd', 'payout', true],
        ['charge', 30000, 'jpy', 'charge', true],
        ['payment', 4200, 'eur', 'charge', true],
        ['refund', -2000, 'usd', 'refund', true],
        ['charge', 5000, 'usd', 'charge', true],
      ]);
      const refund = (body as Page).data.find((t) => t.type === 'refund');
      assert.ok(refund, 'the refund is listed');
      assert.equal(refund.fee, 0);
      assert.equal(refund.net, -2000);
      assert.match(refund.source, /^re_/);
      assert.equal((body as Page).data[0]?.id, 'txn_fixedid');

      const eur = await list('?currency=eur', 'acct_mixed');
      assert.deepEqual(
        eur.body.data.map((t: { amount: number }) => t.amount),
        [75, 4200],
      );
      const refunds = await list('?type=refund', 'acct_mixed');
      assert.deepEqual(
        refunds.body.data.map((t: { amount: number }) => t.amount),
        [-2000],
      );
    });

    it('rejects fixtures Stripe would never send', () => {
      const bad = (t: Partial<StripeTransaction>) => () =>
        sim.addAccount({ accountId: 'acct_bad', email: 'x@example.com', transactions: [{ ...txns(1, MAY_2025, 0)[0], ...t } as StripeTransaction] });
      assert.throws(bad({ currency: 'USD' }), /lowercase/);
      assert.throws(bad({ amount: 10.5 }), /minor units/);
      assert.throws(bad({ created: Date.now() }), /unix seconds/);
      assert.throws(() => sim.addAccount({ accountId: 'creator', email: 'x@example.com', transactions: [] }), /acct_/);
    });

    it('answers bad parameters with 400 in Stripe form', async () => {
      const integer = await list('?limit=ten');
      assert.equal(integer.status, 400);
      assert.deepEqual(integer.body, {
        error: {
          code: 'parameter_invalid_integer',
          doc_url: 'https://stripe.com/docs/error-codes/parameter-invalid-integer',
          message: 'Invalid integer: ten',
          param: 'limit',
          type: 'invalid_request_error',
        },
      });
      for (const limit of ['0', '101']) {
        const range = await list(`?limit=${limit}`);
        assert.equal(range.status, 400);
        assert.equal(range.body.error.param, 'limit');
        assert.equal(range.body.error.type, 'invalid_request_error');
      }
      const created = await list('?created[gte]=yesterday');
      assert.equal(created.body.error.code, 'parameter_invalid_integer');
      assert.equal(created.body.error.param, 'created[gte]');
      const unknown = await list('?created.gte=1');
      assert.equal(unknown.status, 400);
      assert.equal(unknown.body.error.code, 'parameter_unknown');
      assert.equal(unknown.body.error.message, 'Received unknown parameter: created.gte');
      const cursor = await list('?starting_after=txn_gone');
      assert.equal(cursor.status, 400);
      assert.equal(cursor.body.error.code, 'resource_missing');
      assert.equal(cursor.body.error.param, 'starting_after');
      const both = await list('?starting_after=a&ending_before=b');
      assert.equal(both.status, 400);
    });
  });

  describe('API authentication and errors', () => {
    it('401s without a key and with a wrong one, masking the key', async () => {
      const none = await api(sim, '/v1/balance_transactions', { key: undefined });
      assert.equal(none.status, 401);
      assert.equal(none.body.error.type, 'invalid_request_error');
      assert.match(none.body.error.message, /^You did not provide an API key/);
      assert.match(none.headers.get('request-id') as string, /^req_/);

      const wrong = await api(sim, '/v1/balance_transactions', { key: 'sk_test_abcdefghijklmnop1234' });
      assert.equal(wrong.status, 401);
      assert.deepEqual(wrong.body, { error: { message: 'Invalid API Key provided: sk_test_****1234', type: 'invalid_request_error' } });
      assert.equal(maskKey(sim.secretKey).length, 'sk_test_****'.length + 4);
    });

    it('403s account_invalid for an account never connected, exactly as for a revoked one', async () => {
      const { status, body } = await api(sim, '/v1/balance_transactions', { account: 'acct_creator2' });
      assert.equal(status, 403);
      assert.deepEqual(body, {
        error: {
          code: 'account_invalid',
          doc_url: 'https://stripe.com/docs/error-codes/account-invalid',
          message: `The provided key '${maskKey(sim.secretKey)}' does not have access to account 'acct_creator2' (or that account does not exist). Application access may have been revoked.`,
          type: 'invalid_request_error',
        },
      });
      assert.equal((await api(sim, '/v1/balance_transactions', { account: 'acct_nobody' })).status, 403);
    });

    it('shows the platform its own empty balance when Stripe-Account is missing, as Stripe does', async () => {
      await connect(sim, 'acct_creator1');
      const { status, body } = await api(sim, '/v1/balance_transactions');
      assert.equal(status, 200);
      assert.deepEqual(body, { object: 'list', data: [], has_more: false, url: '/v1/balance_transactions' });
      const account = await api(sim, '/v1/account');
      assert.notEqual(account.body.id, 'acct_creator1');
    });

    it("does not let one creator's token reach another account", async () => {
      const tokens = await connect(sim, 'acct_creator1');
      await connect(sim, 'acct_creator2');
      assert.equal((await api(sim, '/v1/balance_transactions', { key: tokens.access_token, account: 'acct_creator2' })).status, 403);
      assert.equal((await api(sim, '/v1/accounts/acct_creator2', { key: tokens.access_token })).status, 403);
      assert.equal((await api(sim, '/v1/accounts/acct_creator2')).body.email, 'bo@example.com');
    });

    it('404s an unknown URL and a non-GET method in Stripe form', async () => {
      const missing = await api(sim, '/v1/charges_typo');
      assert.equal(missing.status, 404);
      assert.match(missing.body.error.message, /^Unrecognized request URL \(GET: \/v1\/charges_typo\)/);
      const post = await fetch(`${sim.endpoints.api}/v1/balance_transactions`, { method: 'POST', headers: { authorization: `Bearer ${sim.secretKey}` } });
      assert.equal(post.status, 404);
      assert.match(post.headers.get('request-id') as string, /^req_/);
    });

    it('records every call with its bracketed query keys and lowercased headers', async () => {
      await connect(sim, 'acct_creator1');
      sim.calls.length = 0;
      await api(sim, `/v1/balance_transactions?limit=2&created%5Bgte%5D=${MAY_2025}`, { account: 'acct_creator1' });
      assert.equal(sim.calls.length, 1);
      const call = sim.calls[0];
      assert.equal(call?.method, 'GET');
      assert.equal(call?.path, '/v1/balance_transactions');
      assert.deepEqual(call?.query, { limit: '2', 'created[gte]': String(MAY_2025) });
      assert.equal(call?.headers['stripe-account'], 'acct_creator1');
      assert.equal(call?.headers.authorization, `Bearer ${sim.secretKey}`);
    });

    it('records the form body of OAuth posts', async () => {
      await connect(sim, 'acct_creator1');
      const tokenCall = sim.calls.find((c) => c.path === '/oauth/token');
      assert.equal(tokenCall?.body?.grant_type, 'authorization_code');
      assert.match(tokenCall?.body?.code ?? '', /^ac_/);
    });
  });

  describe('faults', () => {
    beforeEach(async () => {
      await connect(sim, 'acct_creator1');
      await connect(sim, 'acct_creator2');
    });

    it('server_error answers the next call with 500 api_error, then recovers', async () => {
      sim.inject('server_error');
      const failed = await api(sim, '/v1/balance_transactions', { account: 'acct_creator1' });
      assert.equal(failed.status, 500);
      assert.equal(failed.body.error.type, 'api_error');
      assert.equal(typeof failed.body.error.message, 'string');
      assert.match(failed.headers.get('request-id') as string, /^req_/);
      assert.equal((await api(sim, '/v1/balance_transactions', { account: 'acct_creator1' })).status, 200);
    });

    it('server_error honours times and an accountId', async () => {
      sim.inject('server_error', { times: 2, accountId: 'acct_creator2' });
      assert.equal((await api(sim, '/v1/balance_transactions', { account: 'acct_creator1' })).status, 200);
      assert.equal((await api(sim, '/v1/balance_transactions', { account: 'acct_creator2' })).status, 500);
      assert.equal((await api(sim, '/v1/account', { account: 'acct_creator2' })).status, 500);
      assert.equal((await api(sim, '/v1/account', { account: 'acct_creator2' })).status, 200);
    });

    it('revoked makes the account refuse the platform and its tokens from then on', async () => {
      const tokens = await connect(sim, 'acct_creator1');
      sim.inject('revoked', { accountId: 'acct_creator1' });
      for (let i = 0; i < 2; i++) {
        const refused = await api(sim, '/v1/balance_transactions', { account: 'acct_creator1' });
        assert.equal(refused.status, 403);
        assert.equal(refused.body.error.code, 'account_invalid');
        assert.match(refused.body.error.message, /Application access may have been revoked\.$/);
      }
      assert.equal((await api(sim, '/v1/account', { key: tokens.access_token })).status, 401);
      const refresh = await tokenRequest(sim, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_secret: sim.secretKey });
      assert.equal(refresh.body.error, 'invalid_grant');
      assert.equal((await api(sim, '/v1/balance_transactions', { account: 'acct_creator2' })).status, 200, 'other accounts unaffected');

      await connect(sim, 'acct_creator1');
      assert.equal((await api(sim, '/v1/balance_transactions', { account: 'acct_creator1' })).status, 200, 'the creator can connect again');
    });

    it('revoked without an accountId cuts off every account', async () => {
      sim.inject('revoked');
      assert.equal((await api(sim, '/v1/account', { account: 'acct_creator1' })).status, 403);
      assert.equal((await api(sim, '/v1/account', { account: 'acct_creator2' })).status, 403);
    });

    it('slow delays only the next call by slowMs', async () => {
      sim.inject('slow', { slowMs: 300 });
      let started = Date.now();
      assert.equal((await api(sim, '/v1/account', { account: 'acct_creator1' })).status, 200);
      assert.ok(Date.now() - started >= 290, `took ${Date.now() - started} ms`);
      started = Date.now();
      await api(sim, '/v1/account', { account: 'acct_creator1' });
      assert.ok(Date.now() - started < 250);
    });

    it('slow lets a client time out, and close() does not wait for the sleeper', async () => {
      sim.inject('slow', { slowMs: 60_000 });
      await assert.rejects(
        fetch(`${sim.endpoints.api}/v1/account`, { headers: { authorization: `Bearer ${sim.secretKey}` }, signal: AbortSignal.timeout(200) }),
        { name: 'TimeoutError' },
      );
      const started = Date.now();
      await sim.close();
      assert.ok(Date.now() - started < 1_000);
    });

    it('refuses faults it cannot apply', () => {
      assert.throws(() => sim.inject('server_error', { accountId: 'acct_never_added' }), /no account/);
      assert.throws(() => sim.inject('server_error', { times: 0 }), /positive integer/);
      assert.throws(() => sim.inject('meltdown' as never), /unknown fault/);
    });
  });

  it('listens on a requested port', async () => {
    const probe = await startStripeSimulator();
    const port = Number(new URL(probe.baseUrl).port);
    await probe.close();
    const fixed = await startStripeSimulator({ port });
    try {
      assert.equal(fixed.baseUrl, `http://127.0.0.1:${port}`);
      assert.equal(fixed.endpoints.api, fixed.baseUrl);
      assert.match(fixed.clientId, /^ca_/);
      assert.match(fixed.secretKey, /^sk_test_/);
    } finally {
      await fixed.close();
    }
  });
});
