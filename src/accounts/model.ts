import type { Role } from '../platform/principal.ts';

export { JURISDICTIONS, PLANS, ROLES, type Jurisdiction, type LenderAccount, type Plan, type Principal, type Role } from '../platform/principal.ts';

export interface ApiKeyRecord {
  id: string;
  lenderId: string;
  role: Role;
  keyPrefix: string;
  createdAt: string;
  revokedAt: string | null;
}
