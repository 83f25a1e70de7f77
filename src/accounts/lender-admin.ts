import { newId } from '../platform/ids.ts';
import type { ServiceMode } from '../platform/config.ts';
import type { AccountsRepository, LenderChanges } from './accounts-repository.ts';
import { displayPrefix, generateApiKey, hashApiKey, isWellFormedApiKey, keyBelongsToMode } from './api-keys.ts';
import { parseAllowlist } from './ip-allowlist.ts';
import { parseReturnOrigins } from './return-origins.ts';
import { JURISDICTIONS, PLANS, ROLES, type ApiKeyRecord, type Jurisdiction, type LenderAccount, type Plan, type Role } from './model.ts';

/** A refused operator command; its message says what to change. */
export class AdminError extends Error {
  override name = 'AdminError';
}

export interface AdminContext {
  accounts: AccountsRepository;
  mode: ServiceMode;
  now: () => Date;
  /** Refuses product-policy overrides that make no sense; supplied by the scoring engine. */
  validatePolicyOverrides: (productType: string, overrides: Record<string, unknown>) => void;
}

function oneOf<T extends string>(what: string, value: string, allowed: readonly T[]): T {
  if (!allowed.includes(value as T)) throw new AdminError(`${what} must be one of ${allowed.join(', ')}; got "${value}"`);
  return value as T;
}

async function requireLender(ctx: AdminContext, id: string): Promise<LenderAccount> {
  const lender = await ctx.accounts.findLender(id);
  if (!lender) throw new AdminError(`No lender account ${id}`);
  return lender;
}

export async function createLender(ctx: AdminContext, input: { name: string; plan?: string; jurisdiction?: string }): Promise<LenderAccount> {
  const name = input.name.trim();
  if (name.length === 0 || name.length > 200) throw new AdminError('name must be 1 to 200 characters');
  const now = ctx.now().toISOString();
  const lender: LenderAccount = {
    id: newId('lnd'),
    name,
    plan: oneOf<Plan>('plan', input.plan ?? 'pilot', PLANS),
    jurisdiction: oneOf<Jurisdiction>('jurisdiction', input.jurisdiction ?? 'eu_gdpr', JURISDICTIONS),
    rateLimitPerMinute: null,
    rateLimitBurst: null,
    ipAllowlist: [],
    returnOrigins: [],
    createdAt: now,
    updatedAt: now,
  };
  await ctx.accounts.insertLender(lender);
  return lender;
}

export async function updateLender(
  ctx: AdminContext,
  input: { id: string; plan?: string; jurisdiction?: string; rateLimit?: number; burst?: number; allowlist?: string[]; returnOrigins?: string[] },
): Promise<LenderAccount> {
  await requireLender(ctx, input.id);
  const changes: LenderChanges = {};
  if (input.plan !== undefined) changes.plan = oneOf<Plan>('plan', input.plan, PLANS);
  if (input.jurisdiction !== undefined) changes.jurisdiction = oneOf<Jurisdiction>('jurisdiction', input.jurisdiction, JURISDICTIONS);
  const limit = rateLimitOf(input);
  if (limit) {
    changes.rateLimitPerMinute = limit.perMinute;
    changes.rateLimitBurst = limit.burst;
  }
  if (input.allowlist !== undefined) {
    try {
      changes.ipAllowlist = parseAllowlist(input.allowlist.filter((entry) => entry.trim() !== ''));
    } catch (error) {
      throw new AdminError(`allowlist: ${(error as Error).message}`);
    }
  }
  if (input.returnOrigins !== undefined) {
    try {
      changes.returnOrigins = parseReturnOrigins(input.returnOrigins);
    } catch (error) {
      throw new AdminError(`return origins: ${(error as Error).message}`);
    }
  }
  if (Object.keys(changes).length === 0) {
    throw new AdminError('nothing to change: give --plan, --jurisdiction, --rate-limit/--burst, --allowlist or --return-origins');
  }
  return (await ctx.accounts.updateLender(input.id, changes, ctx.now().toISOString()))!;
}

function rateLimitOf(input: { rateLimit?: number; burst?: number }): { perMinute: number; burst: number } | null {
  if ((input.rateLimit === undefined) !== (input.burst === undefined)) throw new AdminError('--rate-limit and --burst go together');
  if (input.rateLimit === undefined || input.burst === undefined) return null;
  if (!Number.isInteger(input.rateLimit) || input.rateLimit < 1 || input.rateLimit > 1_000_000) {
    throw new AdminError('rate limit must be a whole number of requests per minute, 1 to 1000000');
  }
  if (!Number.isInteger(input.burst) || input.burst < 1 || input.burst > input.rateLimit) {
    throw new AdminError('burst must be a whole number of requests per second, 1 to the rate limit');
  }
  return { perMinute: input.rateLimit, burst: input.burst };
}

/** D8: an operator can give one key a higher limit than its lender's plan. */
export async function setKeyRateLimit(
  ctx: AdminContext,
  input: { keyId: string; rateLimit?: number; burst?: number },
): Promise<{ perMinute: number; burst: number }> {
  const limit = rateLimitOf(input);
  if (!limit) throw new AdminError('give --rate-limit and --burst');
  if (!(await ctx.accounts.setKeyRateLimit(input.keyId, limit))) throw new AdminError(`No API key ${input.keyId}`);
  return limit;
}

export async function setPolicy(
  ctx: AdminContext,
  input: { id: string; productType: string; overrides: Record<string, unknown> },
): Promise<Record<string, unknown>> {
  await requireLender(ctx, input.id);
  const current = (await ctx.accounts.findPolicies(input.id))[input.productType] ?? {};
  const merged = { ...current, ...input.overrides };
  try {
    ctx.validatePolicyOverrides(input.productType, merged);
  } catch (error) {
    throw new AdminError(`policy refused: ${(error as Error).message}`);
  }
  await ctx.accounts.upsertPolicy(input.id, input.productType, merged, ctx.now().toISOString());
  return merged;
}

/** The setting that records which kind of deployment a database belongs to. */
export const DEPLOYMENT_MODE_SETTING = 'deployment_mode';

/**
 * The mode the database belongs to: recorded by the first server start or operator command that
 * opens it, and never changed after. A database holds the keys of one kind of deployment only.
 */
export async function deploymentModeOf(accounts: Pick<AccountsRepository, 'initialiseSetting'>, mode: ServiceMode): Promise<ServiceMode> {
  return (await accounts.initialiseSetting(DEPLOYMENT_MODE_SETTING, mode)) as ServiceMode;
}

export async function createKey(ctx: AdminContext, input: { lenderId: string; role: string }): Promise<{ apiKey: string; record: ApiKeyRecord }> {
  const databaseMode = await deploymentModeOf(ctx.accounts, ctx.mode);
  if (databaseMode !== ctx.mode) {
    // A key of the other kind would be refused on every request by the server of this database.
    throw new AdminError(
      `this database belongs to a ${databaseMode} deployment, which accepts only ${databaseMode === 'production' ? 'civ_live_' : 'civ_test_'} keys; run with SERVICE_MODE=${databaseMode}`,
    );
  }
  await requireLender(ctx, input.lenderId);
  const apiKey = generateApiKey(ctx.mode);
  const record: ApiKeyRecord = {
    id: newId('key'),
    lenderId: input.lenderId,
    role: oneOf<Role>('role', input.role, ROLES),
    keyPrefix: displayPrefix(apiKey),
    createdAt: ctx.now().toISOString(),
    revokedAt: null,
  };
  await ctx.accounts.insertKey(record, hashApiKey(apiKey));
  return { apiKey, record };
}

export async function listKeys(ctx: AdminContext, lenderId: string): Promise<ApiKeyRecord[]> {
  await requireLender(ctx, lenderId);
  return ctx.accounts.listKeys(lenderId);
}

export async function revokeKey(ctx: AdminContext, keyId: string): Promise<ApiKeyRecord> {
  const record = await ctx.accounts.revokeKey(keyId, ctx.now().toISOString());
  if (!record) throw new AdminError(`No API key ${keyId}`);
  return record;
}

/**
 * Stops every key of the account at once (their next request is 401), and its dashboard: sign-in is
 * refused and every session ends at its next request (the access epoch moves), until reactivated.
 */
export async function deactivateLender(ctx: AdminContext, id: string): Promise<LenderAccount> {
  const lender = await requireLender(ctx, id);
  if (lender.deactivatedAt) throw new AdminError(`Lender ${id} is already deactivated (since ${lender.deactivatedAt})`);
  const now = ctx.now().toISOString();
  await ctx.accounts.setLenderDeactivated(id, now, now);
  return (await ctx.accounts.findLender(id))!;
}

/** Lets the account's keys that are not revoked work again, and its dashboard users sign in; sessions from before stay over. */
export async function reactivateLender(ctx: AdminContext, id: string): Promise<LenderAccount> {
  const lender = await requireLender(ctx, id);
  if (!lender.deactivatedAt) throw new AdminError(`Lender ${id} is active`);
  await ctx.accounts.setLenderDeactivated(id, null, ctx.now().toISOString());
  return (await ctx.accounts.findLender(id))!;
}

/** The account's eligibility overrides, per product type (empty when it uses the defaults). */
export async function showPolicies(ctx: AdminContext, id: string): Promise<Record<string, Record<string, unknown>>> {
  await requireLender(ctx, id);
  return ctx.accounts.findPolicies(id);
}

/**
 * Removes overrides of one product type: the named ones, or all of them, so the defaults apply again
 * to tapes computed from now on. Returns what is left.
 */
export async function clearPolicy(ctx: AdminContext, input: { id: string; productType: string; keys?: string[] }): Promise<Record<string, unknown>> {
  await requireLender(ctx, input.id);
  const current = (await ctx.accounts.findPolicies(input.id))[input.productType];
  if (!current) throw new AdminError(`Lender ${input.id} has no overrides for ${input.productType}`);
  if (!input.keys || input.keys.length === 0) {
    await ctx.accounts.deletePolicy(input.id, input.productType);
    return {};
  }
  const unknown = input.keys.filter((key) => !(key in current));
  if (unknown.length > 0) throw new AdminError(`no override ${unknown.join(', ')} for ${input.productType}; set are: ${Object.keys(current).join(', ')}`);
  const remaining = Object.fromEntries(Object.entries(current).filter(([key]) => !input.keys!.includes(key)));
  if (Object.keys(remaining).length === 0) await ctx.accounts.deletePolicy(input.id, input.productType);
  else await ctx.accounts.upsertPolicy(input.id, input.productType, remaining, ctx.now().toISOString());
  return remaining;
}

export const DEMO_LENDER_ID = 'lnd_sandboxDemoLender0';

/**
 * The sandbox's public demo key (section 5.5) belongs to a fixed demo lender account. Both are
 * created idempotently at every sandbox start, so a restart or a second process changes nothing.
 */
export async function ensureDemoAccount(ctx: AdminContext, demoApiKey: string): Promise<void> {
  if (!isWellFormedApiKey(demoApiKey) || !keyBelongsToMode(demoApiKey, 'sandbox')) {
    throw new AdminError('DEMO_API_KEY must look like civ_test_ followed by 20 to 64 letters and digits');
  }
  if (!(await ctx.accounts.findLender(DEMO_LENDER_ID))) {
    const now = ctx.now().toISOString();
    try {
      await ctx.accounts.insertLender({
        id: DEMO_LENDER_ID,
        name: 'Sandbox Demo Lender',
        plan: 'pilot',
        jurisdiction: 'eu_gdpr',
        rateLimitPerMinute: null,
        rateLimitBurst: null,
        ipAllowlist: [],
        returnOrigins: [],
        createdAt: now,
        updatedAt: now,
      });
    } catch (error) {
      if (!(await ctx.accounts.findLender(DEMO_LENDER_ID))) throw error;
    }
  }
  const keyHash = hashApiKey(demoApiKey);
  await ctx.accounts.insertKeyIfAbsent(
    {
      id: `key_demo${keyHash.slice(0, 16)}`,
      lenderId: DEMO_LENDER_ID,
      role: 'lender',
      keyPrefix: displayPrefix(demoApiKey),
      createdAt: ctx.now().toISOString(),
      revokedAt: null,
    },
    keyHash,
  );
}
