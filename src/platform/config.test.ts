import assert from 'node:assert/strict';
import express from 'express';
import request from 'supertest';
import { ConfigError, loadConfig, PUBLIC_DEMO_API_KEY } from './config.ts';

describe('configuration (D22)', () => {
  it('has the documented defaults', () => {
    const config = loadConfig({});
    assert.deepEqual(
      {
        port: config.port,
        host: config.host,
        databaseUrl: config.databaseUrl,
        mode: config.mode,
        demoApiKey: config.demoApiKey,
        publicBaseUrl: config.publicBaseUrl,
        schedule: config.webhookRetryScheduleSeconds,
        delay: config.sandboxCompleteDelayMs,
        privateTargets: config.webhookAllowPrivateTargets,
      },
      {
        port: 8080,
        host: '127.0.0.1',
        databaseUrl: 'sqlite:./data/service.sqlite',
        mode: 'sandbox',
        demoApiKey: PUBLIC_DEMO_API_KEY,
        publicBaseUrl: 'http://127.0.0.1:8080',
        schedule: [0, 60, 300, 1800, 7200],
        delay: 5000,
        privateTargets: false,
      },
    );
  });

  it('reads JOB_LEASE_MS, a minute by default, and refuses a lease under a second, over an hour or fractional', () => {
    assert.equal(loadConfig({}).jobLeaseMs, 60_000);
    assert.equal(loadConfig({ JOB_LEASE_MS: '3000' }).jobLeaseMs, 3000);
    for (const lease of ['999', '3600001', '1500.5']) assert.throws(() => loadConfig({ JOB_LEASE_MS: lease }), /JOB_LEASE_MS/);
  });

  it('refuses what production must not have', () => {
    const key = 'b'.repeat(64);
    assert.throws(() => loadConfig({ SERVICE_MODE: 'production' }), /ENCRYPTION_KEY/);
    assert.throws(() => loadConfig({ SERVICE_MODE: 'production', ENCRYPTION_KEY: key, WEBHOOK_ALLOW_PRIVATE_TARGETS: '1' }), /refused in production/);
    assert.throws(() => loadConfig({ SERVICE_MODE: 'production', ENCRYPTION_KEY: key, DEMO_API_KEY: PUBLIC_DEMO_API_KEY }), /only in sandbox/);
    const production = loadConfig({ SERVICE_MODE: 'production', ENCRYPTION_KEY: key });
    assert.equal(production.demoApiKey, null);
    assert.equal(production.encryptionKey?.length, 32);
  });

  it('names the variable that is wrong', () => {
    const cases: Array<[Record<string, string>, RegExp]> = [
      [{ PORT: 'eighty' }, /PORT/],
      [{ SERVICE_MODE: 'staging' }, /SERVICE_MODE/],
      [{ DATABASE_URL: 'mysql://x' }, /DATABASE_URL/],
      [{ WEBHOOK_RETRY_SCHEDULE: '60,0' }, /WEBHOOK_RETRY_SCHEDULE/],
      [{ ENCRYPTION_KEY: 'short' }, /ENCRYPTION_KEY/],
      [{ LOG_LEVEL: 'loud' }, /LOG_LEVEL/],
    ];
    for (const [env, message] of cases) {
      assert.throws(
        () => loadConfig(env),
        (error: unknown) => error instanceof ConfigError && message.test(error.message),
        JSON.stringify(env),
      );
    }
  });

  it('reads the provider endpoints, the revocation ones included', () => {
    const credentials = { GOOGLE_CLIENT_ID: 'g', GOOGLE_CLIENT_SECRET: 's', STRIPE_CLIENT_ID: 'ca_x', STRIPE_SECRET_KEY: 'sk_test_x' };
    const defaults = loadConfig(credentials).providers;
    assert.equal(defaults.google?.revokeUrl, 'https://oauth2.googleapis.com/revoke');
    assert.equal(defaults.stripe?.connectUrl, 'https://connect.stripe.com');
    const custom = loadConfig({ ...credentials, GOOGLE_REVOKE_URL: 'http://127.0.0.1:1/revoke', STRIPE_CONNECT_URL: 'http://127.0.0.1:2/' }).providers;
    assert.equal(custom.google?.revokeUrl, 'http://127.0.0.1:1/revoke');
    assert.deepEqual([custom.stripe?.connectUrl, custom.stripe?.tokenUrl], ['http://127.0.0.1:2', 'http://127.0.0.1:2/oauth/token']);
    assert.throws(() => loadConfig({ ...credentials, STRIPE_CONNECT_URL: 'https://proxy.example/stripe' }), /STRIPE_CONNECT_URL must be an http\(s\) origin/);
  });

  it('reads a custom retry schedule and public base URL', () => {
    const config = loadConfig({ WEBHOOK_RETRY_SCHEDULE: '0, 1, 2', PUBLIC_BASE_URL: 'https://verify.example.org/' });
    assert.deepEqual(config.webhookRetryScheduleSeconds, [0, 1, 2]);
    assert.equal(config.publicBaseUrl, 'https://verify.example.org');
  });
});

describe('TRUST_PROXY', () => {
  /** The client address Express sees behind a proxy at 127.0.0.1 that forwards for 203.0.113.7. */
  const clientAddressWith = async (trustProxy: unknown) => {
    const app = express();
    app.set('trust proxy', trustProxy);
    app.get('/', (req, res) => res.send(req.ip));
    return (await request(app).get('/').set('X-Forwarded-For', '203.0.113.7')).text;
  };

  it('reads numbers as hops, booleans as booleans, and lists of addresses, ranges and names', () => {
    const parse = (value: string) => loadConfig({ TRUST_PROXY: value }).trustProxy;
    assert.equal(parse(''), false);
    assert.equal(parse('false'), false);
    assert.equal(parse('true'), true);
    assert.equal(parse('1'), 1);
    assert.equal(parse('2'), 2);
    assert.deepEqual(parse('loopback, 10.0.0.0/8,fd00::/8,192.0.2.1'), ['loopback', '10.0.0.0/8', 'fd00::/8', '192.0.2.1']);
  });

  it('TRUST_PROXY=1, the example of docs/configuration.md, trusts the one proxy in front (it used to trust none)', async () => {
    assert.equal(await clientAddressWith(loadConfig({ TRUST_PROXY: '1' }).trustProxy), '203.0.113.7');
    assert.equal(await clientAddressWith(loadConfig({ TRUST_PROXY: 'loopback' }).trustProxy), '203.0.113.7');
    assert.notEqual(await clientAddressWith(loadConfig({}).trustProxy), '203.0.113.7', 'off by default');
  });

  it('refuses true in production mode, where any client could then pick its own address, and names what to give instead', () => {
    const production = { SERVICE_MODE: 'production', ENCRYPTION_KEY: 'c'.repeat(64) };
    assert.throws(
      () => loadConfig({ ...production, TRUST_PROXY: 'true' }),
      (error: unknown) =>
        error instanceof ConfigError &&
        /TRUST_PROXY=true \(or a \/0 range\) is refused in production/.test(error.message) &&
        /number of proxies/.test(error.message) &&
        /CIDR/.test(error.message),
    );
    for (const everyAddress of ['0.0.0.0/0', '10.0.0.0/8, ::/0'])
      assert.throws(() => loadConfig({ ...production, TRUST_PROXY: everyAddress }), /refused in production/, `${everyAddress} trusts every hop`);
    assert.equal(loadConfig({ ...production, TRUST_PROXY: '1' }).trustProxy, 1);
    assert.deepEqual(loadConfig({ ...production, TRUST_PROXY: '10.0.0.0/8, 192.0.2.1' }).trustProxy, ['10.0.0.0/8', '192.0.2.1']);
    assert.equal(loadConfig({ TRUST_PROXY: 'true' }).trustProxy, true, 'a sandbox may (it warns at start)');
  });

  it('refuses nonsense at start-up instead of trusting nobody', () => {
    for (const value of ['yes', '1.2', '-1', '10.0.0.0/33', '300.1.1.1', 'loopback,', 'proxy.example.com', '1e3']) {
      assert.throws(() => loadConfig({ TRUST_PROXY: value }), ConfigError, value);
    }
  });
});
