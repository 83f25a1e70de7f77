import type { Role } from '../platform/principal.ts';

export { JURISDICTIONS, PLANS, ROLES, type Jurisdiction, type LenderAccount, type Plan, type Principal, type Role } from '../platform/principal.ts';

export interface ApiKeyRecord {
  id: string;
  lenderId: string;
  role: Role;
  keyPrefix: string;
  createdAt: string;
  revokedAt: string | null;
  /** Within a minute or so (recorded at most once a minute per key and process); null if never used. */
  lastUsedAt?: string | null;
  /** An operator's limit for this one key (D8), when it has one. */
  rateLimit?: { perMinute: number; burst: number } | null;
}
