import type { Knex } from 'knex';
import type { CountedWindows, WindowCounts } from '../platform/rate-limit-windows.ts';
import { hotStatement, knexHotStatements, type HotStatements } from '../platform/db/hot-statements.ts';
import { columnsOf, everyColumnOf } from '../platform/db/columns.ts';
import type { ApiKeyRecord, Jurisdiction, LenderAccount, Plan, Principal, Role } from './model.ts';

interface LenderRow {
  id: string;
  name: string;
  plan: string;
  jurisdiction: string;
  rate_limit_per_minute: number | null;
  rate_limit_burst: number | null;
  ip_allowlist: string;
  return_origins: string;
  created_at: string;
  updated_at: string;
  deactivated_at?: string | null;
  access_epoch?: number | string;
}

/** A lender's columns as the prepared reads name them (docs/persistence.md says why not `l.*`). */
const LENDER_COLUMNS = everyColumnOf<LenderRow>()(
  'id',
  'name',
  'plan',
  'jurisdiction',
  'rate_limit_per_minute',
  'rate_limit_burst',
  'ip_allowlist',
  'return_origins',
  'created_at',
  'updated_at',
  'deactivated_at',
  'access_epoch',
);

interface KeyRow {
  id: string;
  lender_id: string;
  role: string;
  key_prefix: string;
  created_at: string;
  revoked_at: string | null;
  last_used_at?: string | null;
  rate_limit_per_minute?: number | null;
  rate_limit_burst?: number | null;
}

const toLender = (row: LenderRow): LenderAccount => ({
  id: row.id,
  name: row.name,
  plan: row.plan as Plan,
  jurisdiction: row.jurisdiction as Jurisdiction,
  rateLimitPerMinute: row.rate_limit_per_minute,
  rateLimitBurst: row.rate_limit_burst,
  ipAllowlist: JSON.parse(row.ip_allowlist) as string[],
  returnOrigins: JSON.parse(row.return_origins) as string[],
  createdAt: row.created_at,
  updatedAt: row.updated_at,
  deactivatedAt: row.deactivated_at ?? null,
  accessEpoch: Number(row.access_epoch ?? 0),
});

const toKey = (row: KeyRow): ApiKeyRecord => ({
  id: row.id,
  lenderId: row.lender_id,
  role: row.role as Role,
  keyPrefix: row.key_prefix,
  createdAt: row.created_at,
  revokedAt: row.revoked_at,
  lastUsedAt: row.last_used_at ?? null,
  rateLimit: row.rate_limit_per_minute && row.rate_limit_burst ? { perMinute: row.rate_limit_per_minute, burst: row.rate_limit_burst } : null,
});

const keyRow = (key: ApiKeyRecord, keyHash: string) => ({
  id: key.id,
  lender_id: key.lenderId,
  role: key.role,
  key_hash: keyHash,
  key_prefix: key.keyPrefix,
  created_at: key.createdAt,
  revoked_at: key.revokedAt,
});

export type LenderChanges = Partial<
  Pick<LenderAccount, 'plan' | 'rateLimitPerMinute' | 'rateLimitBurst' | 'ipAllowlist' | 'returnOrigins' | 'name' | 'jurisdiction'>
>;

type PrincipalRow = LenderRow & { key_id: string; key_role: string; key_per_minute: number | null; key_burst: number | null };

function toPrincipal(row: PrincipalRow): Principal {
  const { key_id, key_role, key_per_minute, key_burst, ...lender } = row;
  return {
    keyId: key_id,
    role: key_role as Role,
    lender: toLender(lender),
    keyRateLimit: key_per_minute && key_burst ? { perMinute: key_per_minute, burst: key_burst } : null,
  };
}

/** The active key with that hash and its lender's account, `keyHash` being the placeholder that names it. */
const principalSelect = (keyHash: string) =>
  `select k.id as key_id, k.role as key_role, k.rate_limit_per_minute as key_per_minute, k.rate_limit_burst as key_burst, ${columnsOf('l', LENDER_COLUMNS)}
   from api_keys k join lender_accounts l on l.id = k.lender_id
   where k.key_hash = ${keyHash} and k.revoked_at is null and l.deactivated_at is null limit 1`;

/** Runs on every request (D9: looked up each time, so a revocation takes effect on the next one). */
const PRINCIPAL_BY_KEY_HASH = hotStatement('principal_by_key_hash', principalSelect('?'));

/** What scoring needs of a lender (its jurisdiction, its policy per product type), read on every creation. */
const SCORING_PROFILE = hotStatement(
  'scoring_profile',
  'select l.jurisdiction, p.product_type, p.overrides from lender_accounts l left join lender_policies p on p.lender_id = l.id where l.id = ?',
);

/**
 * PostgreSQL only: the principal of PRINCIPAL_BY_KEY_HASH and `n` requests of the key counted in its
 * two rate-limit windows, in one round trip instead of three per request. The windows are
 * rate-limiter-flexible's rows (key, points, expire), updated as its fixed-window upsert does, by `n`
 * at once. The minute window counts only the requests the burst window allows (`allowed`: those
 * whose place in the burst window is within its limit), and a key that resolves to nothing counts
 * nowhere. $1 key hash, $2 burst row, $3 minute row, $4 burst expiry, $5 minute expiry, $6 now,
 * $7 burst limit, $8 n.
 */
const PRINCIPAL_COUNTING_REQUESTS = hotStatement(
  'principal_counting_requests',
  `with principal as (${principalSelect('$1')}), burst as (
     insert into rate_limits (key, points, expire) select $2, $8::int, $4::bigint from principal
     on conflict (key) do update set
       points = case when rate_limits.expire <= $6::bigint then excluded.points else rate_limits.points + excluded.points end,
       expire = case when rate_limits.expire <= $6::bigint then excluded.expire else rate_limits.expire end
     returning points, expire
   ), allowed as (
     select least($8::int, greatest(0, $7::int - (points - $8::int))) as n from burst
   ), minute as (
     insert into rate_limits (key, points, expire) select $3, n, $5::bigint from allowed where n > 0
     on conflict (key) do update set
       points = case when rate_limits.expire <= $6::bigint then excluded.points else rate_limits.points + excluded.points end,
       expire = case when rate_limits.expire <= $6::bigint then excluded.expire else rate_limits.expire end
     returning points, expire
   )
   select ${columnsOf('p', ['key_id', 'key_role', 'key_per_minute', 'key_burst', ...LENDER_COLUMNS])}, b.points as burst_points, b.expire as burst_expire,
     coalesce(m.points, (select r.points from rate_limits r where r.key = $3 and r.expire > $6::bigint), 0) as minute_points,
     coalesce(m.expire, (select r.expire from rate_limits r where r.key = $3 and r.expire > $6::bigint)) as minute_expire
   from principal p join burst b on true left join minute m on true`,
  { postgresOnly: true },
);

type CountingRow = PrincipalRow & {
  burst_points: number | string;
  burst_expire: number | string;
  minute_points: number | string;
  minute_expire: number | string | null;
};
type Counted = { principal: Principal; counted: CountedWindows } | null;

/** Requests of one key waiting to be counted together, under the same windows. */
interface CountingGroup {
  windows: WindowCounts;
  waiting: Array<{ resolve(found: Counted): void; reject(error: unknown): void }>;
}

/**
 * Each request's own count from a statement that counted `n` requests at once: the i-th of them
 * (from 0) has the place `burst - n + 1 + i` in the burst window, and the j-th of those the burst
 * window allowed has the place `minute - allowed + 1 + j` in the minute window. A request the burst
 * window refused sees the minute window's count so far, as a single request would.
 */
function countedEach(row: CountingRow, n: number, burstLimit: number): Counted[] {
  const { burst_points, burst_expire, minute_points, minute_expire, ...principalRow } = row;
  // bigint arrives as a string from pg.
  const burst = Number(burst_points);
  const minute = Number(minute_points);
  const allowed = Math.min(n, Math.max(0, burstLimit - (burst - n)));
  const principal = toPrincipal(principalRow);
  return Array.from({ length: n }, (_, i) => ({
    principal,
    counted: {
      burstPoints: burst - n + 1 + i,
      burstExpiresAt: Number(burst_expire),
      minutePoints: i < allowed ? minute - allowed + 1 + i : minute,
      minuteExpiresAt: minute_expire === null ? null : Number(minute_expire),
    },
  }));
}

/** The only code that reads or writes lender accounts, policies and keys. */
export class AccountsRepository {
  /** Keys (with their windows) whose requests are being counted now, with the requests waiting for the next statement. */
  private readonly countingInFlight = new Map<string, CountingGroup>();

  /** `hot` serves the per-request key lookup; it defaults to statements through the writer. */
  constructor(
    private readonly knex: Knex,
    private readonly hot: HotStatements = knexHotStatements(knex),
  ) {}

  async insertLender(lender: LenderAccount): Promise<void> {
    await this.knex('lender_accounts').insert({
      id: lender.id,
      name: lender.name,
      plan: lender.plan,
      jurisdiction: lender.jurisdiction,
      rate_limit_per_minute: lender.rateLimitPerMinute,
      rate_limit_burst: lender.rateLimitBurst,
      ip_allowlist: JSON.stringify(lender.ipAllowlist),
      return_origins: JSON.stringify(lender.returnOrigins),
      created_at: lender.createdAt,
      updated_at: lender.updatedAt,
    });
  }

  async findLender(id: string): Promise<LenderAccount | null> {
    const row = await this.knex<LenderRow>('lender_accounts').where({ id }).first();
    return row ? toLender(row) : null;
  }

  async listLenders(): Promise<LenderAccount[]> {
    const rows = await this.knex<LenderRow>('lender_accounts').orderBy([{ column: 'created_at' }, { column: 'id' }]);
    return rows.map(toLender);
  }

  async updateLender(id: string, changes: LenderChanges, updatedAt: string): Promise<LenderAccount | null> {
    const columns: Record<string, unknown> = { updated_at: updatedAt };
    if (changes.name !== undefined) columns.name = changes.name;
    if (changes.plan !== undefined) columns.plan = changes.plan;
    if (changes.jurisdiction !== undefined) columns.jurisdiction = changes.jurisdiction;
    if (changes.rateLimitPerMinute !== undefined) columns.rate_limit_per_minute = changes.rateLimitPerMinute;
    if (changes.rateLimitBurst !== undefined) columns.rate_limit_burst = changes.rateLimitBurst;
    if (changes.ipAllowlist !== undefined) columns.ip_allowlist = JSON.stringify(changes.ipAllowlist);
    if (changes.returnOrigins !== undefined) columns.return_origins = JSON.stringify(changes.returnOrigins);
    const updated = await this.knex('lender_accounts').where({ id }).update(columns);
    return updated === 0 ? null : this.findLender(id);
  }

  async upsertPolicy(lenderId: string, productType: string, overrides: Record<string, unknown>, updatedAt: string): Promise<void> {
    await this.knex('lender_policies')
      .insert({ lender_id: lenderId, product_type: productType, overrides: JSON.stringify(overrides), updated_at: updatedAt })
      .onConflict(['lender_id', 'product_type'])
      .merge(['overrides', 'updated_at']);
  }

  /**
   * Deactivates (a time) or reactivates (null) an account; false when there is no such account.
   * Either way its access epoch moves on, which ends every dashboard session opened before.
   */
  async setLenderDeactivated(id: string, deactivatedAt: string | null, updatedAt: string): Promise<boolean> {
    const updated = await this.knex('lender_accounts')
      .where({ id })
      .update({ deactivated_at: deactivatedAt, updated_at: updatedAt, access_epoch: this.knex.raw('access_epoch + 1') });
    return updated === 1;
  }

  async deletePolicy(lenderId: string, productType: string): Promise<boolean> {
    const deleted = await this.knex('lender_policies').where({ lender_id: lenderId, product_type: productType }).delete();
    return deleted > 0;
  }

  /**
   * The lender's jurisdiction and policy overrides per product type, in one hot statement (every
   * creation reads them): null when there is no such lender.
   */
  async findScoringProfile(lenderId: string): Promise<{ jurisdiction: Jurisdiction; policies: Record<string, Record<string, unknown>> } | null> {
    const rows = await this.hot.rows<{ jurisdiction: Jurisdiction; product_type: string | null; overrides: string | null }>(SCORING_PROFILE, [lenderId]);
    if (rows.length === 0) return null;
    const policies: Record<string, Record<string, unknown>> = {};
    for (const row of rows) if (row.product_type !== null) policies[row.product_type] = JSON.parse(row.overrides!) as Record<string, unknown>;
    return { jurisdiction: rows[0]!.jurisdiction, policies };
  }

  async findPolicies(lenderId: string): Promise<Record<string, Record<string, unknown>>> {
    const rows = await this.knex('lender_policies').where({ lender_id: lenderId }).select('product_type', 'overrides');
    return Object.fromEntries(rows.map((row: { product_type: string; overrides: string }) => [row.product_type, JSON.parse(row.overrides)]));
  }

  async insertKey(key: ApiKeyRecord, keyHash: string): Promise<void> {
    await this.knex('api_keys').insert(keyRow(key, keyHash));
  }

  /** Inserts the key unless a key with this hash exists (the sandbox demo key at every start). */
  async insertKeyIfAbsent(key: ApiKeyRecord, keyHash: string): Promise<void> {
    await this.knex('api_keys').insert(keyRow(key, keyHash)).onConflict('key_hash').ignore();
  }

  async listKeys(lenderId: string): Promise<ApiKeyRecord[]> {
    const rows = await this.knex<KeyRow>('api_keys')
      .where({ lender_id: lenderId })
      .orderBy([{ column: 'created_at' }, { column: 'id' }]);
    return rows.map(toKey);
  }

  /** Records that the key was used at `at` (never moving the time back when processes race). */
  async recordKeyUse(keyId: string, at: string): Promise<void> {
    await this.knex('api_keys')
      .where({ id: keyId })
      .andWhere((q) => {
        void q.whereNull('last_used_at').orWhere('last_used_at', '<', at);
      })
      .update({ last_used_at: at });
  }

  async setKeyRateLimit(keyId: string, limit: { perMinute: number; burst: number } | null): Promise<boolean> {
    const updated = await this.knex('api_keys')
      .where({ id: keyId })
      .update({ rate_limit_per_minute: limit?.perMinute ?? null, rate_limit_burst: limit?.burst ?? null });
    return updated === 1;
  }

  async revokeKey(keyId: string, revokedAt: string): Promise<ApiKeyRecord | null> {
    await this.knex('api_keys').where({ id: keyId }).whereNull('revoked_at').update({ revoked_at: revokedAt });
    const row = await this.knex<KeyRow>('api_keys').where({ id: keyId }).first();
    return row ? toKey(row) : null;
  }

  /** The principal behind an active key, in one indexed query; revoked keys and deactivated accounts' keys resolve to nothing. */
  async findPrincipalByKeyHash(keyHash: string): Promise<Principal | null> {
    const [row] = await this.hot.rows<PrincipalRow>(PRINCIPAL_BY_KEY_HASH, [keyHash]);
    return row ? toPrincipal(row) : null;
  }

  /**
   * PostgreSQL: the same lookup, counting the request in the key's rate-limit windows in the same
   * statement (`windows` names the rows for the quota the caller expects the key to have).
   */
  async findPrincipalCountingRequest(keyHash: string, windows: WindowCounts): Promise<Counted> {
    const groupKey = `${keyHash}\u0000${windows.burstKey}\u0000${windows.minuteKey}\u0000${windows.burst}`;
    return new Promise<Counted>((resolve, reject) => {
      const inFlight = this.countingInFlight.get(groupKey);
      if (inFlight) {
        // A statement for this key is running: this request is counted with the others that arrive
        // meanwhile, in one statement once it ends (under the latest of their clocks), instead of
        // each waiting for the row lock of the one before. Alone, a request goes at once.
        inFlight.windows = windows.now >= inFlight.windows.now ? windows : inFlight.windows;
        inFlight.waiting.push({ resolve, reject });
        return;
      }
      this.countingInFlight.set(groupKey, { windows, waiting: [] });
      void this.countGroup(groupKey, keyHash, windows, [{ resolve, reject }]);
    });
  }

  /** Counts the requests in one statement, then the group that gathered meanwhile, until none did. */
  private async countGroup(groupKey: string, keyHash: string, windows: WindowCounts, requests: CountingGroup['waiting']): Promise<void> {
    for (;;) {
      try {
        const [row] = await this.hot.rows<CountingRow>(PRINCIPAL_COUNTING_REQUESTS, [
          keyHash,
          windows.burstKey,
          windows.minuteKey,
          windows.burstExpiresAt,
          windows.minuteExpiresAt,
          windows.now,
          windows.burst,
          requests.length,
        ]);
        const counted = row ? countedEach(row, requests.length, windows.burst) : null;
        requests.forEach((request, i) => request.resolve(counted ? counted[i]! : null));
      } catch (error) {
        for (const request of requests) request.reject(error);
      }
      const next = this.countingInFlight.get(groupKey)!;
      if (next.waiting.length === 0) {
        this.countingInFlight.delete(groupKey);
        return;
      }
      ({ windows, waiting: requests } = next);
      this.countingInFlight.set(groupKey, { windows, waiting: [] });
    }
  }

  async readSetting(name: string): Promise<string | null> {
    const row = await this.knex<{ name: string; value: string }>('service_settings').where({ name }).first('value');
    return row ? row.value : null;
  }

  /** Stores the value unless one exists, then returns whichever won: safe when processes race. */
  async initialiseSetting(name: string, value: string): Promise<string> {
    await this.knex('service_settings').insert({ name, value }).onConflict('name').ignore();
    return (await this.readSetting(name))!;
  }
}
