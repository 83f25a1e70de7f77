import type { Knex } from 'knex';
import type { components } from '../../generated/api.ts';

export type VerificationResource = components['schemas']['Verification'];

interface VerificationRow {
  id: string;
  lender_id: string;
  obligor_reference: string;
  creator_platforms: string;
  lender_name: string;
  product_type: string;
  declared_monthly_obligations_eur: number | null;
  status: string;
  failure_reason: string | null;
  consent_url: string;
  expires_at: string;
  created_at: string;
  updated_at: string;
  completed_at: string | null;
  tape_schema_version: string | null;
}

/** The only code that reads or writes verifications. Every method takes the lender id: tenant isolation is not optional. */
export class VerificationsRepository {
  constructor(private readonly knex: Knex) {}

  async findForLender(lenderId: string, verificationId: string): Promise<VerificationResource | null> {
    const row = await this.knex<VerificationRow>('verifications').where({ id: verificationId, lender_id: lenderId }).first();
    if (!row) return null;
    const connections = await this.knex('platform_connections')
      .where({ verification_id: row.id })
      .select('platform', 'status');
    return toResource(row, new Map(connections.map((c: { platform: string; status: string }) => [c.platform, c.status])));
  }
}

function toResource(row: VerificationRow, connectionStatus: Map<string, string>): VerificationResource {
  const platforms = JSON.parse(row.creator_platforms) as VerificationResource['creator_platforms'];
  const resource: VerificationResource = {
    verification_id: row.id,
    status: row.status as VerificationResource['status'],
    obligor_reference: row.obligor_reference,
    creator_platforms: platforms,
    lender_name: row.lender_name,
    product_type: row.product_type as VerificationResource['product_type'],
    consent_url: row.consent_url,
    expires_at: row.expires_at,
    created_at: row.created_at,
    updated_at: row.updated_at,
    completed_at: row.completed_at,
    failure_reason: row.failure_reason as VerificationResource['failure_reason'],
    platform_connections: platforms.map((platform) => ({
      platform,
      status: (connectionStatus.get(platform) ?? 'not_connected') as VerificationResource['platform_connections'][number]['status'],
    })),
    schema_version: row.tape_schema_version as VerificationResource['schema_version'],
  };
  if (row.declared_monthly_obligations_eur !== null) resource.declared_monthly_obligations_eur = row.declared_monthly_obligations_eur;
  return resource;
}
