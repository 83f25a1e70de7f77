import assert from 'node:assert/strict';
import request from 'supertest';
import { AccountsRepository } from '../../src/accounts/accounts-repository.ts';
import * as admin from '../../src/accounts/lender-admin.ts';
import { adminContext } from '../../src/admin/admin-context.ts';
import { loadConfig } from '../../src/platform/config.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { startService, type Service } from '../../src/service.ts';
import { startGoogleSimulator, type GoogleSimulator, type GoogleSimulatorOptions } from '../simulators/google.ts';
import { providerEnv } from '../simulators/provider-env.ts';
import { startStripeSimulator, type StripeSimulator } from '../simulators/stripe.ts';
import { bindingCookieOf, pressOnProviderPage } from './provider-page.ts';

/** The service's public address: the providers send the creator back to its callbacks there. */
export const PUBLIC_BASE_URL = 'https://verify.lender.example';

/** Months before `now`, oldest first, as YYYY-MM. */
export const lastMonths = (count: number, now = new Date()) =>
  Array.from({ length: count }, (_, i) => new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - count + i, 1)).toISOString().slice(0, 7));

export interface ProviderService {
  service: Service;
  google: GoogleSimulator;
  stripe: StripeSimulator;
  /** A lender key of one account. */
  key: string;
  close(): Promise<void>;
}

/**
 * The service in production mode with its OAuth and API clients pointed at the Google and Stripe
 * simulators, and a lender key. `env` adds to the configuration; `googleClock` is Google's time,
 * apart from the service's, so a test can expire the access tokens Google issued.
 */
export async function startProviderService(
  databaseUrl: string,
  options: { env?: Record<string, string>; googleClock?: GoogleSimulatorOptions['clock'] } = {},
): Promise<ProviderService> {
  const google = await startGoogleSimulator(options.googleClock ? { clock: options.googleClock } : {});
  const stripe = await startStripeSimulator();
  const config = loadConfig({
    DATABASE_URL: databaseUrl,
    SERVICE_MODE: 'production',
    ENCRYPTION_KEY: 'e'.repeat(64),
    PUBLIC_BASE_URL,
    VALIDATE_RESPONSES: '1',
    ...options.env,
    ...providerEnv(google, stripe),
  });
  const service = await startService(config, createLogger({ level: 'silent' }));
  const ctx = adminContext(config, new AccountsRepository(service.db.knex));
  const lender = await admin.createLender(ctx, { name: 'Northwind Capital' });
  // A pilot account's burst of 10 would throttle the tests' own polling.
  await admin.updateLender(ctx, { id: lender.id, rateLimit: 100000, burst: 10000 });
  const key = (await admin.createKey(ctx, { lenderId: lender.id, role: 'lender' })).apiKey;
  return {
    service,
    google,
    stripe,
    key,
    async close() {
      await service.close();
      await google.close();
      await stripe.close();
    },
  };
}

/**
 * A creator's round trip through a provider, in the browser that began it: the connect button, the
 * provider's page and the button pressed there, then the service's callback. `authorization` is the
 * provider's page the service sent the creator to, `callback` where the provider sent them back.
 */
export async function connectAtProvider(
  service: Service,
  consentPath: string,
  platform: 'youtube' | 'stripe',
  button: string,
  account?: string,
): Promise<{ authorization: URL; callback: URL; answer: request.Response }> {
  const start = await request(service.app).post(`${consentPath}/connect/${platform}`);
  assert.equal(start.status, 303, start.text);
  const callback = await pressOnProviderPage(start.headers.location!, button, account);
  const answer = await request(service.app).get(`${callback.pathname}${callback.search}`).set('Cookie', bindingCookieOf(start.headers['set-cookie']));
  return { authorization: new URL(start.headers.location!), callback, answer };
}
