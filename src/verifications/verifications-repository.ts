import type { Knex } from 'knex';
import type { components } from '../../generated/api.ts';
import type { OverlayBlock, RiskTape200 } from '../../generated/tape.ts';
import type { PlatformIncome } from '../tape/index.ts';
import type { ScoredTape } from './scoring.ts';
import type { Dialect } from '../platform/db/database.ts';
import { inUnitOfWork, type UnitOfWork } from '../platform/db/unit-of-work.ts';
import { hotStatement, knexHotStatements, type HotStatements } from '../platform/db/hot-statements.ts';
import { columnsOf, everyColumnOf } from '../platform/db/prepared-sql.ts';
import { fixedInsertOf, fixedStatement, runFixed } from '../platform/db/fixed-statements.ts';
import { writeWithNextStatement } from '../platform/db/writes-with-next-statement.ts';
import type { EventBody, EventOutbox, EventName, RecordedEvent } from '../platform/events/outbox.ts';
import type { JobQueue } from '../platform/jobs/job-queue.ts';
import type { LifecycleJobKind, LifecycleJobPayloads } from './lifecycle-jobs.ts';
import type { FailureReason, Transition, VerificationStatus } from './state-machine.ts';

export type VerificationResource = components['schemas']['Verification'];
type Platform = VerificationResource['creator_platforms'][number];
type ConnectionStatus = VerificationResource['platform_connections'][number]['status'];

/** A verification as the lifecycle needs it (the resource is built from the same row). */
export interface VerificationRecord {
  id: string;
  lenderId: string;
  obligorReference: string;
  creatorPlatforms: Platform[];
  lenderName: string;
  productType: VerificationResource['product_type'];
  declaredMonthlyObligationsEur: number | null;
  status: VerificationStatus;
  failureReason: FailureReason | null;
  consentUrl: string;
  expiresAt: string;
  createdAt: string;
  updatedAt: string;
  completedAt: string | null;
  tapeSchemaVersion: string | null;
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

/** Told of every tape saved (a verification completed, or its tape scored again), in the same unit of work. */
export type TapeListener = (unit: UnitOfWork, verification: { id: string; lenderId: string }, tape: RiskTape200) => Promise<void>;

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
  status?: VerificationStatus;
  obligorReference?: string;
  productType?: VerificationResource['product_type'];
  createdGte?: string;
  createdLt?: string;
  /** The keyset of the previous page's last verification. */
  after?: { createdAt: string; id: string };
}

export interface IdempotencyRecord {
  /** The verification the stored answer is about. */
  verificationId: string | null;
  requestFingerprint: string;
  responseStatus: number;
  responseBody: unknown;
  expiresAt: string;
}

interface IdempotencyRow {
  verification_id: string | null;
  lender_id: string;
  idempotency_key: string;
  request_fingerprint: string;
  response_status: number;
  response_body: string | null;
  expires_at: string;
}

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
  consent_token_sealed: string | null;
  expires_at: string;
  created_at: string;
  updated_at: string;
  completed_at: string | null;
  tape_schema_version: string | null;
}

/** A verification's columns as the prepared read names them (prepared-sql.ts says why not `v.*`). */
const VERIFICATION_COLUMNS = everyColumnOf<VerificationRow>()(
  'id',
  'lender_id',
  'obligor_reference',
  'creator_platforms',
  'lender_name',
  'product_type',
  'declared_monthly_obligations_eur',
  'status',
  'failure_reason',
  'consent_url',
  'consent_token_sealed',
  'expires_at',
  'created_at',
  'updated_at',
  'completed_at',
  'tape_schema_version',
);

interface OverlayRow {
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
async function resourceIn(knex: Knex, record: VerificationRecord): Promise<VerificationResource> {
  const connections = await knex<{ verification_id: string; platform: string; status: string }>('platform_connections')
    .where({ verification_id: record.id })
    .select('platform', 'status');
  return toResource(record, new Map(connections.map((c) => [c.platform, c.status])));
}

/** A verification's overlays, oldest first, as the tape shows them. */
async function overlaysIn(knex: Knex, verificationId: string): Promise<OverlayBlock[]> {
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
const rowsOf = <Row>(result: Row[] | { rows: Row[] }): Row[] => (Array.isArray(result) ? result : result.rows);

type VerificationWithConnectionRow = VerificationRow & { connection_platform: string | null; connection_status: string | null };

const connectionsOf = (rows: VerificationWithConnectionRow[]): Map<string, string> =>
  new Map(rows.flatMap((r) => (r.connection_platform && r.connection_status ? [[r.connection_platform, r.connection_status] as const] : [])));

const toRecord = (row: VerificationRow, links: ConsentLinks): VerificationRecord => ({
  id: row.id,
  lenderId: row.lender_id,
  obligorReference: row.obligor_reference,
  creatorPlatforms: JSON.parse(row.creator_platforms) as Platform[],
  lenderName: row.lender_name,
  productType: row.product_type as VerificationRecord['productType'],
  declaredMonthlyObligationsEur: row.declared_monthly_obligations_eur === null ? null : Number(row.declared_monthly_obligations_eur),
  status: row.status as VerificationStatus,
  failureReason: row.failure_reason as FailureReason | null,
  // Rows from before links were sealed keep their URL until the start-up sealing reaches them.
  consentUrl: row.consent_token_sealed ? links.urlOf(row.consent_token_sealed) : row.consent_url,
  expiresAt: row.expires_at,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
  completedAt: row.completed_at,
  tapeSchemaVersion: row.tape_schema_version,
});

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
  return resource;
}

// A creation's statements, written out once (fixed-statements.ts says why).
const INSERT_VERIFICATION = fixedStatement(`
  insert into "verifications" ("id", "lender_id", "obligor_reference", "creator_platforms", "lender_name", "product_type",
    "declared_monthly_obligations_eur", "status", "consent_token_hash", "consent_url", "consent_token_sealed", "expires_at",
    "created_at", "updated_at", "completed_at", "tape_schema_version")
  values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
const UPSERT_CONNECTIONS = fixedInsertOf(
  'platform_connections',
  ['verification_id', 'platform', 'status', 'updated_at', 'revoked_at'],
  'on conflict ("verification_id", "platform") do update set "status" = excluded."status", "updated_at" = excluded."updated_at", "revoked_at" = excluded."revoked_at"',
);
const INSERT_TRANSITION = fixedStatement(`
  insert into "verification_transitions" ("verification_id", "from_status", "to_status", "trigger", "reason", "at") values (?, ?, ?, ?, ?, ?)`);
const INSERT_EVENT = fixedStatement(`
  insert into "events" ("id", "lender_id", "verification_id", "name", "payload", "occurred_at") values (?, ?, ?, ?, ?, ?) returning "sequence"`);
const UPSERT_TAPE = fixedStatement(`
  insert into "tapes" ("verification_id", "tape", "generated_at", "scoring_input") values (?, ?, ?, ?)
  on conflict ("verification_id") do update set "tape" = excluded."tape", "generated_at" = excluded."generated_at", "scoring_input" = excluded."scoring_input"`);
const CLAIM_IDEMPOTENCY_KEY = fixedStatement(`
  insert into "idempotency_keys" ("lender_id", "idempotency_key", "request_fingerprint", "created_at", "expires_at") values (?, ?, ?, ?, ?)
  on conflict ("lender_id", "idempotency_key") do nothing returning "idempotency_key"`);
const STORE_IDEMPOTENT_RESPONSE = fixedStatement(`
  update "idempotency_keys" set "response_status" = ?, "response_body" = ?, "verification_id" = ? where "lender_id" = ? and "idempotency_key" = ?`);

/**
 * Reads and writes of one unit of work. Everything a state change triggers (transition row, event,
 * tape, jobs) goes through one store so it commits or rolls back together.
 */
export class VerificationStore {
  private readonly dialect: Dialect;
  private readonly jobs: JobQueue;
  private readonly outbox: EventOutbox;
  private readonly links: ConsentLinks;
  /** The verifications this unit inserted, with the status each was inserted in. */
  private readonly insertedHere = new Map<string, VerificationStatus>();

  constructor(
    private readonly trx: Knex.Transaction,
    /** The unit of work this store writes in, for other features' writes that must commit with it. */
    readonly unit: UnitOfWork,
    private readonly collaborators: StoreCollaborators,
  ) {
    ({ dialect: this.dialect, jobs: this.jobs, outbox: this.outbox, links: this.links } = collaborators);
  }

  /**
   * Inserts a new verification in the state its creation move leads to, with that move's columns
   * (`completed_at`, `tape_schema_version`), so the move (applyStatus) need not update the row again.
   */
  async insert(verification: NewVerification, connections: Array<{ platform: Platform; status: ConnectionStatus }>): Promise<void> {
    this.insertedHere.set(verification.id, verification.status);
    await writeWithNextStatement(this.trx, {
      fixed: INSERT_VERIFICATION,
      bindings: [
        verification.id,
        verification.lenderId,
        verification.obligorReference,
        JSON.stringify(verification.creatorPlatforms),
        verification.lenderName,
        verification.productType,
        verification.declaredMonthlyObligationsEur,
        verification.status,
        verification.consentTokenHash,
        '',
        this.links.seal(verification.consentToken),
        verification.expiresAt,
        verification.createdAt,
        verification.createdAt,
        verification.completedAt,
        verification.tapeSchemaVersion,
      ],
    });
    await this.setConnections(verification.id, connections, verification.createdAt);
  }

  async setConnections(verificationId: string, connections: Array<{ platform: Platform; status: ConnectionStatus }>, at: string): Promise<void> {
    if (connections.length === 0) return;
    await writeWithNextStatement(this.trx, {
      fixed: UPSERT_CONNECTIONS(connections.length),
      // When access ended (revoked_at), for the data-protection report.
      bindings: connections.flatMap((c) => [verificationId, c.platform, c.status, at, c.status === 'revoked' || c.status === 'error' ? at : null]),
    });
  }

  /** The lender's verifications among `ids`, locked (on PostgreSQL) until the transaction ends. */
  async lockOwned(lenderId: string, ids: string[]): Promise<VerificationRecord[]> {
    if (ids.length === 0) return [];
    const query = this.trx<VerificationRow>('verifications').where({ lender_id: lenderId }).whereIn('id', ids).orderBy('id');
    const rows = this.dialect === 'postgres' ? await query.forUpdate() : await query;
    return rows.map((row) => toRecord(row, this.links));
  }

  /**
   * Erases the verifications and everything this feature holds about them: events, transitions,
   * tapes, income, stored idempotent answers, scheduled jobs. Other features erase theirs first in
   * the same unit of work.
   */
  async erase(ids: string[]): Promise<{
    verifications: number;
    tapes: number;
    overlays: number;
    income_records: number;
    webhook_events: number;
    idempotency_records: number;
    pending_jobs: number;
  }> {
    const overlays = await this.trx('overlays').whereIn('verification_id', ids).delete();
    const tapes = await this.trx('tapes').whereIn('verification_id', ids).delete();
    const income = await this.trx('income_records').whereIn('verification_id', ids).delete();
    const events = await this.trx('events').whereIn('verification_id', ids).delete();
    await this.trx('verification_transitions').whereIn('verification_id', ids).delete();
    const idempotency = await this.trx('idempotency_keys').whereIn('verification_id', ids).delete();
    const jobs = await this.jobs.cancelForSubjects(this.trx, ids);
    const verifications = await this.trx('verifications').whereIn('id', ids).delete();
    return { verifications, tapes, overlays, income_records: income, webhook_events: events, idempotency_records: idempotency, pending_jobs: jobs };
  }

  /** Reads the verification and, on PostgreSQL, locks its row until the transaction ends. */
  async lock(verificationId: string): Promise<VerificationRecord | null> {
    const query = this.trx<VerificationRow>('verifications').where({ id: verificationId }).first();
    const row = this.dialect === 'postgres' ? await query.forUpdate() : await query;
    return row ? toRecord(row, this.links) : null;
  }

  /** The resource as this unit of work sees it (after its own writes). */
  async resourceOf(record: VerificationRecord): Promise<VerificationResource> {
    return resourceIn(this.trx, record);
  }

  async applyStatus(
    verificationId: string,
    transition: Transition,
    change: { at: string; reason: FailureReason | null; tapeSchemaVersion?: string },
  ): Promise<void> {
    if (transition.from === null) {
      // A creation: insert() wrote the row in this unit, in the state and with the columns of this
      // move, and no other unit can see it yet.
      const inserted = this.insertedHere.get(verificationId);
      if (inserted !== transition.to) throw new Error(`verification ${verificationId} was not inserted ${transition.to} in this unit of work`);
    } else {
      const columns: Record<string, unknown> = { status: transition.to, updated_at: change.at };
      if (transition.to === 'completed') columns.completed_at = change.at;
      if (transition.to === 'failed') columns.failure_reason = change.reason;
      if (change.tapeSchemaVersion) columns.tape_schema_version = change.tapeSchemaVersion;
      // Compare-and-set on the status: a concurrent move that got there first makes this one fail loudly.
      const updated = await this.trx('verifications').where({ id: verificationId, status: transition.from }).update(columns);
      if (updated !== 1) throw new Error(`verification ${verificationId} is no longer ${transition.from}`);
    }
    await writeWithNextStatement(this.trx, {
      fixed: INSERT_TRANSITION,
      bindings: [verificationId, transition.from, transition.to, transition.trigger, change.reason, change.at],
    });
  }

  /** Stores the event with its exact body bytes (what is signed and sent) and publishes it to the outbox's subscribers. */
  async recordEvent<Name extends EventName>(event: {
    id: string;
    lenderId: string;
    verificationId: string;
    name: Name;
    body: EventBody<Name>;
    occurredAt: string;
  }): Promise<void> {
    const body = JSON.stringify(event.body);
    const [inserted] = await runFixed<{ sequence: number | string }>(this.trx, INSERT_EVENT, [
      event.id,
      event.lenderId,
      event.verificationId,
      event.name,
      body,
      event.occurredAt,
    ]);
    const sequence = Number(inserted!.sequence);
    const recorded: RecordedEvent = {
      id: event.id,
      lenderId: event.lenderId,
      verificationId: event.verificationId,
      name: event.name,
      sequence,
      occurredAt: event.occurredAt,
      body,
    };
    await this.outbox.publish(recorded, this.unit);
  }

  /** Stores the tape with the income it was scored from, and tells the tape listeners (peer benchmarks). */
  async saveTape(verification: { id: string; lenderId: string }, scored: ScoredTape, generatedAt: string): Promise<void> {
    await writeWithNextStatement(this.trx, {
      fixed: UPSERT_TAPE,
      bindings: [verification.id, JSON.stringify(scored.tape), generatedAt, JSON.stringify(scored.platforms)],
    });
    for (const listener of this.collaborators.tapeListeners) await listener(this.unit, verification, scored.tape);
  }

  /** The stored tape with what scoring it again needs: when it was computed, and from which income (null for tapes stored before it was kept). */
  async tapeForRescoring(verificationId: string): Promise<{ tape: RiskTape200; platforms: PlatformIncome[] | null } | null> {
    const row = await this.trx<{ verification_id: string; tape: string; scoring_input: string | null }>('tapes')
      .where({ verification_id: verificationId })
      .first();
    if (!row) return null;
    return { tape: JSON.parse(row.tape) as RiskTape200, platforms: row.scoring_input ? (JSON.parse(row.scoring_input) as PlatformIncome[]) : null };
  }

  async insertOverlay(verificationId: string, overlay: OverlayBlock): Promise<void> {
    await this.trx('overlays').insert({
      id: overlay.overlay_id,
      verification_id: verificationId,
      type: overlay.type,
      provider: overlay.provider,
      reference: overlay.reference ?? null,
      status: overlay.status,
      observed_at: overlay.observed_at,
      data: JSON.stringify(overlay.data),
      created_at: overlay.created_at,
    });
  }

  async overlaysOf(verificationId: string): Promise<OverlayBlock[]> {
    return overlaysIn(this.trx, verificationId);
  }

  async saveIncome(
    verificationId: string,
    records: Array<{ platform: string; month: string; sourceCurrency: string; sourceAmount: number; amountEur: number | null }>,
  ): Promise<void> {
    if (records.length === 0) return;
    await this.trx('income_records')
      .insert(
        records.map((r) => ({
          verification_id: verificationId,
          platform: r.platform,
          month: r.month,
          source_currency: r.sourceCurrency,
          source_amount: r.sourceAmount,
          amount_eur: r.amountEur,
        })),
      )
      .onConflict(['verification_id', 'platform', 'month', 'source_currency'])
      .merge();
  }

  /** A lifecycle job, committed with the change that needs it. */
  async schedule<Kind extends LifecycleJobKind>(kind: Kind, subjectId: string, runAt: Date, payload: LifecycleJobPayloads[Kind], now: Date): Promise<void> {
    await this.jobs.enqueue(this.trx, { kind, subjectId, runAt, payload }, now);
  }

  /**
   * Claims an Idempotency-Key for this request. Returns the stored answer when the key is taken; on
   * PostgreSQL a concurrent request with the same key waits here until the first one commits.
   */
  async claimIdempotencyKey(lenderId: string, key: string, fingerprint: string, now: string, expiresAt: string): Promise<IdempotencyRecord | null> {
    const insert = () => runFixed(this.trx, CLAIM_IDEMPOTENCY_KEY, [lenderId, key, fingerprint, now, expiresAt]);
    if ((await insert()).length === 1) return null;
    const row = await this.trx<IdempotencyRow>('idempotency_keys').where({ lender_id: lenderId, idempotency_key: key }).first();
    if (!row) throw new Error(`idempotency key ${key} vanished while claimed`);
    if (row.expires_at <= now) {
      // The key lived its 24 hours: it is free again (section 8).
      await this.trx('idempotency_keys').where({ lender_id: lenderId, idempotency_key: key }).delete();
      if ((await insert()).length === 1) return null;
      throw new Error(`idempotency key ${key} was claimed concurrently`);
    }
    return {
      verificationId: row.verification_id,
      requestFingerprint: row.request_fingerprint,
      responseStatus: row.response_status,
      responseBody: row.response_body === null ? null : (JSON.parse(row.response_body) as unknown),
      expiresAt: row.expires_at,
    };
  }

  async storeIdempotentResponse(lenderId: string, key: string, status: number, body: unknown, verificationId: string): Promise<void> {
    await writeWithNextStatement(this.trx, { fixed: STORE_IDEMPOTENT_RESPONSE, bindings: [status, JSON.stringify(body), verificationId, lenderId, key] });
  }
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
function storedTape(json: string): StoredTape {
  let value: RiskTape200 | undefined;
  return {
    json,
    get value() {
      return (value ??= JSON.parse(json) as RiskTape200);
    },
  };
}

// The two reads a polling lender makes (hot-statements.ts): hand-written, prepared once. Each finds
// the verification by its primary key and then checks the lender: `v.lender_id || ''` is not a
// column, so no index on lender_id can serve it. With statistics gathered (ANALYZE) on a million
// verifications, SQLite otherwise read the tape's verification from an index of the lender's rows
// (verifications_list_status_idx covers the columns the tape read needs), 47,000 entries per read:
// a tape read 10 times slower at 10^6 rows (docs/performance.md, "Scale").
export const VERIFICATION_FOR_LENDER = hotStatement(
  'verification_for_lender',
  `select ${columnsOf('v', VERIFICATION_COLUMNS)}, c.platform as connection_platform, c.status as connection_status
   from verifications v left join platform_connections c on c.verification_id = v.id
   where v.id = ? and v.lender_id || '' = ?`,
);
export const TAPE_FOR_LENDER = hotStatement(
  'tape_for_lender',
  `select v.status, t.tape from verifications v left join tapes t on t.verification_id = v.id where v.id = ? and v.lender_id || '' = ?`,
);

/** The only code that reads or writes verifications. Every lender-facing read takes the lender id. */
export class VerificationsRepository {
  private readonly links: ConsentLinks;

  constructor(
    private readonly knex: Knex,
    private readonly collaborators: StoreCollaborators,
    /** Serves the lender-facing reads; it defaults to the writer. */
    private readonly reader: Knex = knex,
    /** Serves the reads on every polling request's path; it defaults to statements through the reader. */
    private readonly hot: HotStatements = knexHotStatements(reader),
  ) {
    this.links = collaborators.links;
  }

  /**
   * Consent links stored before they were sealed kept the whole URL, token included, in plain text:
   * seal their tokens and clear the URLs. Runs at start-up; a second run finds nothing to do.
   */
  async sealPlainConsentLinks(): Promise<number> {
    const rows = await this.knex<VerificationRow>('verifications').whereNull('consent_token_sealed').whereNot('consent_url', '').select('id', 'consent_url');
    for (const row of rows) {
      const token = row.consent_url.split('/').pop() ?? '';
      await this.knex<VerificationRow>('verifications')
        .where({ id: row.id })
        .update({ consent_url: '', consent_token_sealed: this.links.seal(token) });
    }
    return rows.length;
  }

  async transaction<T>(work: (store: VerificationStore) => Promise<T>): Promise<T> {
    return inUnitOfWork(this.knex, (unit, trx) => work(new VerificationStore(trx, unit, this.collaborators)));
  }

  /** A verification read outside any unit of work (commands re-read it locked before changing it). */
  async find(verificationId: string): Promise<VerificationRecord | null> {
    const row = await this.knex<VerificationRow>('verifications').where({ id: verificationId }).first();
    return row ? toRecord(row, this.links) : null;
  }

  /** The lender's verifications for an obligor reference (a data-protection request's `obligor_id`). */
  async findForObligor(lenderId: string, obligorReference: string): Promise<VerificationRecord[]> {
    const rows = await this.knex<VerificationRow>('verifications').where({ lender_id: lenderId, obligor_reference: obligorReference }).orderBy('created_at');
    return rows.map((row) => toRecord(row, this.links));
  }

  /** The lender's verifications among `ids`. */
  async findOwned(lenderId: string, ids: string[]): Promise<VerificationRecord[]> {
    if (ids.length === 0) return [];
    const rows = await this.knex<VerificationRow>('verifications').where({ lender_id: lenderId }).whereIn('id', ids).orderBy('created_at');
    return rows.map((row) => toRecord(row, this.links));
  }

  async resourceOf(record: VerificationRecord): Promise<VerificationResource> {
    return resourceIn(this.knex, record);
  }

  async overlaysOf(verificationId: string): Promise<OverlayBlock[]> {
    return overlaysIn(this.knex, verificationId);
  }

  async tapesOf(verificationId: string): Promise<RiskTape200[]> {
    const rows = await this.knex<{ verification_id: string; tape: string }>('tapes').where({ verification_id: verificationId }).select('tape');
    return rows.map((r) => JSON.parse(r.tape) as RiskTape200);
  }

  async incomeOf(
    verificationId: string,
  ): Promise<Array<{ platform: string; month: string; sourceCurrency: string; sourceAmount: number; amountEur: number | null }>> {
    type Row = { verification_id: string; platform: string; month: string; source_currency: string; source_amount: number; amount_eur: number | null };
    const rows = await this.knex<Row>('income_records').where({ verification_id: verificationId }).orderBy(['platform', 'month', 'source_currency']);
    return rows.map((r) => ({
      platform: r.platform,
      month: r.month,
      sourceCurrency: r.source_currency,
      sourceAmount: Number(r.source_amount),
      amountEur: r.amount_eur === null ? null : Number(r.amount_eur),
    }));
  }

  /** The platforms a verification has connected so far. */
  async connectedPlatforms(verificationId: string): Promise<Set<string>> {
    const rows = await this.knex<{ verification_id: string; platform: string; status: string }>('platform_connections')
      .where({ verification_id: verificationId, status: 'connected' })
      .select('platform');
    return new Set(rows.map((r) => r.platform));
  }

  /** One query: the verification with its connections (a row per connection, or one without). */
  async findForLender(lenderId: string, verificationId: string): Promise<VerificationResource | null> {
    const rows = await this.hot.rows<VerificationWithConnectionRow>(VERIFICATION_FOR_LENDER, [verificationId, lenderId]);
    const [first] = rows;
    return first ? toResource(toRecord(first, this.links), connectionsOf(rows)) : null;
  }

  /**
   * A page of the lender's verifications, newest first, from the keyset `after` on. Each filter
   * combination reads one index of migration 012 in list order (see `listSql`).
   */
  async listForLender(lenderId: string, filter: VerificationListFilter, limit: number): Promise<{ verifications: VerificationResource[]; hasMore: boolean }> {
    const rows: VerificationRow[] = await this.listBuilder(lenderId, filter, limit + 1);
    const page = rows.slice(0, limit);
    const connections =
      page.length === 0
        ? []
        : await this.reader<{ verification_id: string; platform: string; status: string }>('platform_connections')
            .whereIn(
              'verification_id',
              page.map((r) => r.id),
            )
            .select('verification_id', 'platform', 'status');
    const byVerification = new Map<string, Map<string, string>>();
    for (const c of connections) {
      const map = byVerification.get(c.verification_id) ?? new Map<string, string>();
      map.set(c.platform, c.status);
      byVerification.set(c.verification_id, map);
    }
    return {
      verifications: page.map((row) => toResource(toRecord(row, this.links), byVerification.get(row.id) ?? new Map())),
      hasMore: rows.length > limit,
    };
  }

  /** Where a page cursor stands in the list order; null unless it is one of the lender's verifications. */
  async listPosition(lenderId: string, verificationId: string): Promise<{ createdAt: string; id: string } | null> {
    const row = await this.reader<VerificationRow>('verifications').where({ lender_id: lenderId, id: verificationId }).first('created_at', 'id');
    return row ? { createdAt: row.created_at, id: row.id } : null;
  }

  /** The SQL of a page query, for the test that reads its plan (no scan, no sort) on both databases. */
  listSql(lenderId: string, filter: VerificationListFilter, limit: number): { sql: string; bindings: readonly unknown[] } {
    const { sql, bindings } = this.listBuilder(lenderId, filter, limit).toSQL();
    return { sql, bindings };
  }

  private listBuilder(lenderId: string, filter: VerificationListFilter, limit: number) {
    const query = this.reader<VerificationRow>('verifications').where({ lender_id: lenderId });
    if (filter.status) void query.andWhere('status', filter.status);
    if (filter.obligorReference) void query.andWhere('obligor_reference', filter.obligorReference);
    if (filter.productType) void query.andWhere('product_type', filter.productType);
    if (filter.createdGte) void query.andWhere('created_at', '>=', filter.createdGte);
    if (filter.createdLt) void query.andWhere('created_at', '<', filter.createdLt);
    // A row-value comparison, which both databases answer as one range of the index.
    if (filter.after) void query.andWhereRaw('(created_at, id) < (?, ?)', [filter.after.createdAt, filter.after.id]);
    return query
      .orderBy([
        { column: 'created_at', order: 'desc' },
        { column: 'id', order: 'desc' },
      ])
      .limit(limit);
  }

  /** The verification a consent link opens, found by the hash of its token (the token is never stored). */
  async findByConsentTokenHash(tokenHash: string): Promise<{ record: VerificationRecord; connections: Map<string, string> } | null> {
    const rows = rowsOf(
      await this.knex.raw<VerificationWithConnectionRow[] | { rows: VerificationWithConnectionRow[] }>(
        `select ${columnsOf('v', VERIFICATION_COLUMNS)}, c.platform as connection_platform, c.status as connection_status
         from verifications v left join platform_connections c on c.verification_id = v.id
         where v.consent_token_hash = ?`,
        [tokenHash],
      ),
    );
    const [first] = rows;
    return first ? { record: toRecord(first, this.links), connections: connectionsOf(rows) } : null;
  }

  /** The tape with its text as saveTape stored it (`json`), or null before there is one. */
  async findTapeForLender(lenderId: string, verificationId: string): Promise<{ status: VerificationStatus; tape: StoredTape | null } | null> {
    const [row] = await this.hot.rows<{ status: VerificationStatus; tape: string | null }>(TAPE_FOR_LENDER, [verificationId, lenderId]);
    if (!row) return null;
    return { status: row.status, tape: row.tape === null ? null : storedTape(row.tape) };
  }

  async transitionsOf(verificationId: string): Promise<Array<{ from: string | null; to: string; trigger: string; reason: string | null; at: string }>> {
    type Row = { verification_id: string; id: number; from_status: string | null; to_status: string; trigger: string; reason: string | null; at: string };
    const rows = await this.knex<Row>('verification_transitions').where({ verification_id: verificationId }).orderBy('id');
    return rows.map((r) => ({ from: r.from_status, to: r.to_status, trigger: r.trigger, reason: r.reason, at: r.at }));
  }

  async eventsOf(verificationId: string): Promise<Array<{ id: string; name: string; payload: unknown; occurredAt: string }>> {
    type Row = { verification_id: string; sequence: number; id: string; name: string; payload: string; occurred_at: string };
    const rows = await this.knex<Row>('events').where({ verification_id: verificationId }).orderBy('sequence');
    return rows.map((r) => ({ id: r.id, name: r.name, payload: JSON.parse(r.payload) as unknown, occurredAt: r.occurred_at }));
  }
}
