import type { Knex } from 'knex';
import type { components } from '../../generated/api.ts';
import type { OverlayBlock, RiskTape200 } from '../../generated/tape.ts';
import type { Dialect } from '../platform/db/database.ts';
import type { UnitOfWork } from '../platform/db/unit-of-work.ts';
import { everyColumnOf } from '../platform/db/columns.ts';
import type { EventOutbox } from '../platform/events/outbox.ts';
import type { JobQueue } from '../platform/jobs/job-queue.ts';
import { toMonitoringResource, type MonitoringRecord } from './monitoring.ts';
import type { FailureReason, VerificationStatus } from './state-machine.ts';

// The verifications' rows, and the records and resources made from them: shared by the write store
// (verification-store-repository.ts) and the reads (verifications-repository.ts).

export type VerificationResource = components['schemas']['Verification'];
export type Platform = VerificationResource['creator_platforms'][number];
export type ConnectionStatus = VerificationResource['platform_connections'][number]['status'];

/** A verification as the lifecycle needs it (the resource is built from the same row). */
export interface VerificationRecord {
  id: string;
  lenderId: string;
  obligorReference: string;
  creatorPlatforms: Platform[];
  lenderName: string;
  productType: VerificationResource['product_type'];
  declaredMonthlyObligationsEur: number | null;
  /** Where the creator's pages lead back to, its origin registered by the lender; null when the creation gave none. */
  returnUrl: string | null;
  status: VerificationStatus;
  failureReason: FailureReason | null;
  consentUrl: string;
  expiresAt: string;
  createdAt: string;
  updatedAt: string;
  completedAt: string | null;
  tapeSchemaVersion: string | null;
  /** Ongoing monitoring (P33); null on a one-time verification. */
  monitoring: MonitoringRecord | null;
}

export interface NewVerification extends Omit<VerificationRecord, 'failureReason' | 'updatedAt'> {
  /** The consent link's token: stored only as its hash (to open the link) and sealed (to show the lender the URL again). */
  consentToken: string;
  consentTokenHash: string;
}

/**
 * How the consent link is kept: never as the token or URL in plain text (they let anyone act as the
 * creator), but sealed (encrypted), and opened only to show the lender its URL.
 */
export interface ConsentLinks {
  seal(token: string): string;
  urlOf(sealed: string): string;
}

/** Why a tape was made (the tape history's `reason`). */
export type TapeReason = 'completion' | 'overlay_attached' | 'refresh';

/** Told of every tape saved (a verification completed, or its tape scored again), in the same unit of work. */
export type TapeListener = (unit: UnitOfWork, verification: { id: string; lenderId: string }, tape: RiskTape200, reason: TapeReason) => Promise<void>;

/** What a unit of work's store works with besides its transaction. */
export interface StoreCollaborators {
  dialect: Dialect;
  jobs: JobQueue;
  outbox: EventOutbox;
  links: ConsentLinks;
  tapeListeners: readonly TapeListener[];
}

/** Filters of GET /verifications; timestamps in the stored form (`toISOString`). */
export interface VerificationListFilter {
  /** One or more states. */
  status?: VerificationStatus[];
  obligorReference?: string;
  productType?: VerificationResource['product_type'];
  createdGte?: string;
  createdLt?: string;
  /** The keyset of the previous page's last verification: the verifications created before it. */
  after?: { createdAt: string; id: string };
  /** The keyset of the next page's first verification: the verifications created after it, nearest first. */
  before?: { createdAt: string; id: string };
}

export interface IdempotencyRecord {
  /** The verification the stored answer is about. */
  verificationId: string | null;
  requestFingerprint: string;
  responseStatus: number;
  responseBody: unknown;
  expiresAt: string;
}

export interface IdempotencyRow {
  verification_id: string | null;
  lender_id: string;
  idempotency_key: string;
  request_fingerprint: string;
  response_status: number;
  response_body: string | null;
  expires_at: string;
}

export interface VerificationRow {
  id: string;
  lender_id: string;
  obligor_reference: string;
  creator_platforms: string;
  lender_name: string;
  product_type: string;
  declared_monthly_obligations_eur: number | null;
  return_url: string | null;
  status: string;
  failure_reason: string | null;
  consent_url: string;
  consent_token_sealed: string | null;
  expires_at: string;
  created_at: string;
  updated_at: string;
  completed_at: string | null;
  tape_schema_version: string | null;
  monitoring_months: number | null;
  monitoring_state: string | null;
  monitoring_end_reason: string | null;
  monitoring_starts_at: string | null;
  monitoring_ends_at: string | null;
  last_refresh_at: string | null;
  next_refresh_at: string | null;
  refresh_requested_at: string | null;
  last_demanded_refresh_at: string | null;
  refreshes: number;
  failed_refreshes: number;
}

/** A verification's columns as the prepared read names them (docs/persistence.md says why not `v.*`). */
export const VERIFICATION_COLUMNS = everyColumnOf<VerificationRow>()(
  'id',
  'lender_id',
  'obligor_reference',
  'creator_platforms',
  'lender_name',
  'product_type',
  'declared_monthly_obligations_eur',
  'return_url',
  'status',
  'failure_reason',
  'consent_url',
  'consent_token_sealed',
  'expires_at',
  'created_at',
  'updated_at',
  'completed_at',
  'tape_schema_version',
  'monitoring_months',
  'monitoring_state',
  'monitoring_end_reason',
  'monitoring_starts_at',
  'monitoring_ends_at',
  'last_refresh_at',
  'next_refresh_at',
  'refresh_requested_at',
  'last_demanded_refresh_at',
  'refreshes',
  'failed_refreshes',
);

export interface OverlayRow {
  id: string;
  verification_id: string;
  type: OverlayBlock['type'];
  provider: string;
  reference: string | null;
  status: string;
  observed_at: string;
  data: string;
  created_at: string;
}

/** The resource of a verification whose row is already read: its connections added. */
export async function resourceIn(knex: Knex, record: VerificationRecord): Promise<VerificationResource> {
  const connections = await knex<{ verification_id: string; platform: string; status: string }>('platform_connections')
    .where({ verification_id: record.id })
    .select('platform', 'status');
  return toResource(record, new Map(connections.map((c) => [c.platform, c.status])));
}

/** A verification's income records, as collected, by platform and month. */
export async function incomeIn(
  knex: Knex,
  verificationId: string,
): Promise<Array<{ platform: string; month: string; sourceCurrency: string; sourceAmount: number; amountEur: number | null }>> {
  type Row = { verification_id: string; platform: string; month: string; source_currency: string; source_amount: number; amount_eur: number | null };
  const rows = await knex<Row>('income_records').where({ verification_id: verificationId }).orderBy(['platform', 'month', 'source_currency']);
  return rows.map((r) => ({
    platform: r.platform,
    month: r.month,
    sourceCurrency: r.source_currency,
    sourceAmount: Number(r.source_amount),
    amountEur: r.amount_eur === null ? null : Number(r.amount_eur),
  }));
}

/** The platforms connected, each with when it was connected (null until known). */
export async function connectedPlatformsIn(knex: Knex, verificationId: string): Promise<Map<string, string | null>> {
  const rows = await knex<{ verification_id: string; platform: string; status: string; connected_at: string | null }>('platform_connections')
    .where({ verification_id: verificationId, status: 'connected' })
    .select('platform', 'connected_at');
  return new Map(rows.map((r) => [r.platform, r.connected_at]));
}

/** A verification's overlays, oldest first, as the tape shows them. */
export async function overlaysIn(knex: Knex, verificationId: string): Promise<OverlayBlock[]> {
  const rows = await knex<OverlayRow>('overlays')
    .where({ verification_id: verificationId })
    .orderBy([{ column: 'created_at' }, { column: 'id' }]);
  return rows.map((r) => ({
    overlay_id: r.id,
    type: r.type,
    provider: r.provider,
    reference: r.reference,
    status: r.status,
    observed_at: r.observed_at,
    data: JSON.parse(r.data) as Record<string, unknown>,
    created_at: r.created_at,
  }));
}

/** `raw` answers rows on SQLite and `{rows}` on PostgreSQL. */
export const rowsOf = <Row>(result: Row[] | { rows: Row[] }): Row[] => (Array.isArray(result) ? result : result.rows);

export type VerificationWithConnectionRow = VerificationRow & { connection_platform: string | null; connection_status: string | null };

export const connectionsOf = (rows: VerificationWithConnectionRow[]): Map<string, string> =>
  new Map(rows.flatMap((r) => (r.connection_platform && r.connection_status ? [[r.connection_platform, r.connection_status] as const] : [])));

export const toRecord = (row: VerificationRow, links: ConsentLinks): VerificationRecord => ({
  id: row.id,
  lenderId: row.lender_id,
  obligorReference: row.obligor_reference,
  creatorPlatforms: JSON.parse(row.creator_platforms) as Platform[],
  lenderName: row.lender_name,
  productType: row.product_type as VerificationRecord['productType'],
  declaredMonthlyObligationsEur: row.declared_monthly_obligations_eur === null ? null : Number(row.declared_monthly_obligations_eur),
  returnUrl: row.return_url,
  status: row.status as VerificationStatus,
  failureReason: row.failure_reason as FailureReason | null,
  // Rows from before links were sealed keep their URL until the start-up sealing reaches them.
  consentUrl: row.consent_token_sealed ? links.urlOf(row.consent_token_sealed) : row.consent_url,
  expiresAt: row.expires_at,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
  completedAt: row.completed_at,
  tapeSchemaVersion: row.tape_schema_version,
  monitoring: monitoringOf(row),
});

function monitoringOf(row: VerificationRow): MonitoringRecord | null {
  if (row.monitoring_months === null || row.monitoring_state === null) return null;
  return {
    months: Number(row.monitoring_months),
    state: row.monitoring_state as MonitoringRecord['state'],
    endReason: row.monitoring_end_reason as MonitoringRecord['endReason'],
    startsAt: row.monitoring_starts_at,
    endsAt: row.monitoring_ends_at,
    lastRefreshAt: row.last_refresh_at,
    nextRefreshAt: row.next_refresh_at,
    refreshRequestedAt: row.refresh_requested_at,
    lastDemandedRefreshAt: row.last_demanded_refresh_at,
    refreshes: Number(row.refreshes),
    failedRefreshes: Number(row.failed_refreshes),
  };
}

/** The columns of a verification's monitoring, as an update writes them. */
export function monitoringColumns(monitoring: MonitoringRecord): Partial<VerificationRow> {
  return {
    monitoring_months: monitoring.months,
    monitoring_state: monitoring.state,
    monitoring_end_reason: monitoring.endReason,
    monitoring_starts_at: monitoring.startsAt,
    monitoring_ends_at: monitoring.endsAt,
    last_refresh_at: monitoring.lastRefreshAt,
    next_refresh_at: monitoring.nextRefreshAt,
    refresh_requested_at: monitoring.refreshRequestedAt,
    last_demanded_refresh_at: monitoring.lastDemandedRefreshAt,
    refreshes: monitoring.refreshes,
    failed_refreshes: monitoring.failedRefreshes,
  };
}

export function toResource(record: VerificationRecord, connectionStatus: ReadonlyMap<string, string>): VerificationResource {
  const resource: VerificationResource = {
    verification_id: record.id,
    status: record.status,
    obligor_reference: record.obligorReference,
    creator_platforms: record.creatorPlatforms,
    lender_name: record.lenderName,
    product_type: record.productType,
    consent_url: record.consentUrl,
    expires_at: record.expiresAt,
    created_at: record.createdAt,
    updated_at: record.updatedAt,
    completed_at: record.completedAt,
    failure_reason: record.failureReason,
    platform_connections: record.creatorPlatforms.map((platform) => ({
      platform,
      status: (connectionStatus.get(platform) ?? 'not_connected') as ConnectionStatus,
    })),
    schema_version: record.tapeSchemaVersion as VerificationResource['schema_version'],
  };
  if (record.declaredMonthlyObligationsEur !== null) resource.declared_monthly_obligations_eur = record.declaredMonthlyObligationsEur;
  if (record.returnUrl !== null) resource.return_url = record.returnUrl;
  if (record.monitoring !== null) resource.monitoring = toMonitoringResource(record.monitoring);
  return resource;
}

/** A stored tape: its text as saveTape wrote it, and the tape, parsed from it on first read. */
export interface StoredTape {
  readonly value: RiskTape200;
  readonly json: string;
}

/**
 * The tape is parsed only when something reads `value`: a tape read at the stored version sends the
 * stored text as it is, and parsing it cost 3.5 % of that read's time under load (docs/performance.md).
 */
export function storedTape(json: string): StoredTape {
  let value: RiskTape200 | undefined;
  return {
    json,
    get value() {
      return (value ??= JSON.parse(json) as RiskTape200);
    },
  };
}
