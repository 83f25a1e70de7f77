import type { Knex } from 'knex';
import type { OverlayBlock, RiskTape200 } from '../../generated/tape.ts';
import type { PlatformIncome } from '../tape/index.ts';
import type { ScoredTape } from './scoring.ts';
import type { Dialect } from '../platform/db/database.ts';
import { transactionOf, type UnitOfWork } from '../platform/db/unit-of-work.ts';
import { namedStatement, runNamed, type NamedStatement } from '../platform/db/named-statements.ts';
import type { EventBody, EventOutbox, EventName, RecordedEvent } from '../platform/events/outbox.ts';
import type { JobQueue } from '../platform/jobs/job-queue.ts';
import type { LifecycleJobKind, LifecycleJobPayloads } from './lifecycle-jobs.ts';
import type { FailureReason, Transition } from './state-machine.ts';
import type { MonitoringRecord } from './monitoring.ts';
import {
  connectedPlatformsIn,
  incomeIn,
  monitoringColumns,
  overlaysIn,
  resourceIn,
  toRecord,
  type ConnectionStatus,
  type ConsentLinks,
  type IdempotencyRecord,
  type IdempotencyRow,
  type NewVerification,
  type Platform,
  type StoreCollaborators,
  type TapeReason,
  type VerificationRecord,
  type VerificationResource,
  type VerificationRow,
} from './verification-rows-repository.ts';

// The write side of the verifications: one store per unit of work. Builder queries, and the
// creation path's named statements (docs/persistence.md, "Query kinds").

// A creation's statements, named (docs/persistence.md, "Named statements").
const INSERT_VERIFICATION = namedStatement(
  'insert_verification',
  `insert into "verifications" ("id", "lender_id", "obligor_reference", "creator_platforms", "lender_name", "product_type",
    "declared_monthly_obligations_eur", "return_url", "status", "consent_token_hash", "consent_url", "consent_token_sealed", "expires_at",
    "created_at", "updated_at", "completed_at", "tape_schema_version", "monitoring_months", "monitoring_state", "monitoring_starts_at",
    "monitoring_ends_at", "next_refresh_at")
  values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
);
const INSERT_TRANSITION = namedStatement(
  'insert_transition',
  `insert into "verification_transitions" ("verification_id", "from_status", "to_status", "trigger", "reason", "at") values (?, ?, ?, ?, ?, ?)`,
);
const INSERT_EVENT = namedStatement(
  'insert_event',
  `insert into "events" ("id", "lender_id", "verification_id", "name", "payload", "occurred_at") values (?, ?, ?, ?, ?, ?) returning "sequence"`,
);
const UPSERT_TAPE = namedStatement(
  'upsert_tape',
  `insert into "tapes" ("verification_id", "tape", "generated_at", "scoring_input", "tape_id", "reason", "stored_at") values (?, ?, ?, ?, ?, ?, ?)
  on conflict ("verification_id") do update set "tape" = excluded."tape", "generated_at" = excluded."generated_at",
    "scoring_input" = excluded."scoring_input", "tape_id" = excluded."tape_id", "reason" = excluded."reason", "stored_at" = excluded."stored_at"`,
);
const CLAIM_IDEMPOTENCY_KEY = namedStatement(
  'claim_idempotency_key',
  `insert into "idempotency_keys" ("lender_id", "idempotency_key", "request_fingerprint", "created_at", "expires_at") values (?, ?, ?, ?, ?)
  on conflict ("lender_id", "idempotency_key") do nothing returning "idempotency_key"`,
);
const STORE_IDEMPOTENT_RESPONSE = namedStatement(
  'store_idempotent_response',
  `update "idempotency_keys" set "response_status" = ?, "response_body" = ?, "verification_id" = ? where "lender_id" = ? and "idempotency_key" = ?`,
);

/**
 * A creation's rows as one statement, on PostgreSQL: the verification, its platform connections, its
 * first transition and, for a creation that completes at once (a synthetic creator's), its tape and
 * its event. A data-modifying WITH written as one statement on purpose: these were five of a
 * creation's seventeen round trips, and each costs the event loop a socket write and a wake of the
 * server (docs/persistence.md, "Named statements"). It fails as one statement, at its `await`,
 * with PostgreSQL's `table` and `constraint` of the row refused. SQLite has no data-modifying WITH:
 * there the same statements run one by one. One statement per number of platforms.
 */
function creationStatement(platforms: number, completed: boolean): NamedStatement {
  const connections = `insert into "platform_connections" ("verification_id", "platform", "status", "updated_at", "revoked_at") values ${Array.from({ length: platforms }, () => '(?, ?, ?, ?, ?)').join(', ')}`;
  const steps = [`"verification" as (${INSERT_VERIFICATION.sql})`, `"connections" as (${connections})`];
  if (completed) steps.push(`"tape" as (${UPSERT_TAPE.sql})`, `"transition" as (${INSERT_TRANSITION.sql})`);
  return namedStatement(
    `insert_${completed ? 'completed_' : ''}creation_${platforms}`,
    `with ${steps.join(', ')} ${completed ? INSERT_EVENT.sql : INSERT_TRANSITION.sql}`,
  );
}

const CREATION_STATEMENTS = new Map(
  [1, 2].flatMap((platforms) => [false, true].map((completed) => [`${platforms}:${completed}`, creationStatement(platforms, completed)] as const)),
);

/** What a creation writes (`VerificationStore.insertCreation`). */
export interface Creation {
  /** In the state its creation move leads to, with that move's columns (`completed_at`, `tape_schema_version`). */
  verification: NewVerification;
  connections: Array<{ platform: Platform; status: ConnectionStatus }>;
  transition: Transition;
  at: string;
  /** A creation that completes at once: its tape and its event. */
  completion?: { tape: ScoredTape; tapeId: string; event: { id: string; name: EventName; body: EventBody<EventName> } };
}

/**
 * Reads and writes of one unit of work. Everything a state change triggers (transition row, event,
 * tape, jobs) goes through one store so it commits or rolls back together.
 */
export class VerificationStore {
  private readonly dialect: Dialect;
  private readonly jobs: JobQueue;
  private readonly outbox: EventOutbox;
  private readonly links: ConsentLinks;

  constructor(
    /** The unit of work this store writes in, for other features' writes that must commit with it. */
    readonly unit: UnitOfWork,
    private readonly collaborators: StoreCollaborators,
  ) {
    ({ dialect: this.dialect, jobs: this.jobs, outbox: this.outbox, links: this.links } = collaborators);
  }

  /** The unit's transaction, at each statement: a store kept past its unit refuses to write. */
  private get trx(): Knex.Transaction {
    return transactionOf(this.unit);
  }

  /**
   * A new verification with its platform connections, its first transition and, when it completes
   * at once, its tape and event (`Creation`); then the tape's listeners and the event's subscribers
   * are told, as for any tape and event.
   */
  async insertCreation(creation: Creation): Promise<void> {
    const { verification, connections, transition, at, completion } = creation;
    const row = [
      verification.id,
      verification.lenderId,
      verification.obligorReference,
      JSON.stringify(verification.creatorPlatforms),
      verification.lenderName,
      verification.productType,
      verification.declaredMonthlyObligationsEur,
      verification.returnUrl,
      verification.status,
      verification.consentTokenHash,
      '',
      this.links.seal(verification.consentToken),
      verification.expiresAt,
      verification.createdAt,
      verification.createdAt,
      verification.completedAt,
      verification.tapeSchemaVersion,
      verification.monitoring?.months ?? null,
      verification.monitoring?.state ?? null,
      verification.monitoring?.startsAt ?? null,
      verification.monitoring?.endsAt ?? null,
      verification.monitoring?.nextRefreshAt ?? null,
    ];
    const tape = completion && [
      verification.id,
      JSON.stringify(completion.tape.tape),
      at,
      JSON.stringify(completion.tape.platforms),
      completion.tapeId,
      'completion',
      at,
    ];
    const transitionRow = [verification.id, transition.from, transition.to, transition.trigger, null, at];
    const eventBody = completion && JSON.stringify(completion.event.body);
    const eventRow = completion && [completion.event.id, verification.lenderId, verification.id, completion.event.name, eventBody!, at];
    let sequence: number | string | undefined;
    const statement = this.dialect === 'postgres' ? CREATION_STATEMENTS.get(`${connections.length}:${completion !== undefined}`) : undefined;
    if (statement) {
      const connectionRows = connections.flatMap((c) => [verification.id, c.platform, c.status, verification.createdAt, null]);
      const [inserted] = await runNamed<{ sequence: number | string }>(this.trx, statement, [
        ...row,
        ...connectionRows,
        ...(tape ?? []),
        ...(completion ? transitionRow : []),
        ...(eventRow ?? transitionRow),
      ]);
      sequence = inserted?.sequence;
    } else {
      await runNamed(this.trx, INSERT_VERIFICATION, row);
      await this.setConnections(verification.id, connections, verification.createdAt);
      if (tape) await runNamed(this.trx, UPSERT_TAPE, tape);
      await runNamed(this.trx, INSERT_TRANSITION, transitionRow);
      if (eventRow) sequence = (await runNamed<{ sequence: number | string }>(this.trx, INSERT_EVENT, eventRow))[0]?.sequence;
    }
    if (!completion) return;
    for (const listener of this.collaborators.tapeListeners) await listener(this.unit, verification, completion.tape.tape, 'completion');
    await this.outbox.publish(
      {
        id: completion.event.id,
        lenderId: verification.lenderId,
        verificationId: verification.id,
        name: completion.event.name,
        sequence: Number(sequence),
        occurredAt: at,
        body: eventBody!,
      },
      this.unit,
    );
  }

  async setConnections(verificationId: string, connections: Array<{ platform: Platform; status: ConnectionStatus }>, at: string): Promise<void> {
    if (connections.length === 0) return;
    await this.trx('platform_connections')
      .insert(
        // When access ended (revoked_at), for the data-protection report.
        connections.map((c) => ({
          verification_id: verificationId,
          platform: c.platform,
          status: c.status,
          updated_at: at,
          revoked_at: c.status === 'revoked' || c.status === 'error' ? at : null,
        })),
      )
      .onConflict(['verification_id', 'platform'])
      .merge(['status', 'updated_at', 'revoked_at']);
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
    // The tapes a later one replaced are tapes too: the receipt counts them with the latest.
    const tapes =
      (await this.trx('tape_history').whereIn('verification_id', ids).delete()) + (await this.trx('tapes').whereIn('verification_id', ids).delete());
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
    // A creation's transition is written with its row (insertCreation).
    if (transition.from === null) throw new Error(`the creation of ${verificationId} is written by insertCreation`);
    const columns: Record<string, unknown> = { status: transition.to, updated_at: change.at };
    if (transition.to === 'completed') columns.completed_at = change.at;
    if (transition.to === 'failed') columns.failure_reason = change.reason;
    if (change.tapeSchemaVersion) columns.tape_schema_version = change.tapeSchemaVersion;
    // Compare-and-set on the status: a concurrent move that got there first makes this one fail loudly.
    const updated = await this.trx('verifications').where({ id: verificationId, status: transition.from }).update(columns);
    if (updated !== 1) throw new Error(`verification ${verificationId} is no longer ${transition.from}`);
    await runNamed(this.trx, INSERT_TRANSITION, [verificationId, transition.from, transition.to, transition.trigger, change.reason, change.at]);
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
    const [inserted] = await runNamed<{ sequence: number | string }>(this.trx, INSERT_EVENT, [
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

  /**
   * Stores the tape with the income it was scored from as the verification's latest, and tells the
   * tape listeners (peer benchmarks). A tape it replaces must have been retired first (retireTape).
   */
  async saveTape(
    verification: { id: string; lenderId: string },
    scored: ScoredTape,
    generatedAt: string,
    stored: { tapeId: string; reason: TapeReason; at: string },
  ): Promise<void> {
    await runNamed(this.trx, UPSERT_TAPE, [
      verification.id,
      JSON.stringify(scored.tape),
      generatedAt,
      JSON.stringify(scored.platforms),
      stored.tapeId,
      stored.reason,
      stored.at,
    ]);
    for (const listener of this.collaborators.tapeListeners) await listener(this.unit, verification, scored.tape, stored.reason);
  }

  /** The verification's income records, read in this unit of work (incomeIn). */
  incomeOf(verificationId: string): ReturnType<typeof incomeIn> {
    return incomeIn(this.trx, verificationId);
  }

  /** The platforms connected and when, read in this unit of work (connectedPlatformsIn). */
  connectedPlatforms(verificationId: string): Promise<Map<string, string | null>> {
    return connectedPlatformsIn(this.trx, verificationId);
  }

  /** The stored tape with what scoring it again needs: when it was computed, and from which income (null for tapes stored before it was kept). */
  async tapeForRescoring(verificationId: string): Promise<{ tape: RiskTape200; platforms: PlatformIncome[] | null } | null> {
    const row = await this.trx<{ verification_id: string; tape: string; scoring_input: string | null }>('tapes')
      .where({ verification_id: verificationId })
      .first();
    if (!row) return null;
    return { tape: JSON.parse(row.tape) as RiskTape200, platforms: row.scoring_input ? (JSON.parse(row.scoring_input) as PlatformIncome[]) : null };
  }

  /** Moves the verification's latest tape into its history, before a new one replaces it (P33). */
  async retireTape(verificationId: string): Promise<void> {
    const row = await this.trx<{ tape: string; generated_at: string; tape_id: string; reason: string; stored_at: string }>('tapes')
      .where('verification_id', verificationId)
      .first();
    if (!row) return;
    const tape = JSON.parse(row.tape) as RiskTape200;
    await this.trx('tape_history').insert({
      tape_id: row.tape_id,
      verification_id: verificationId,
      tape: row.tape,
      generated_at: row.generated_at,
      reason: row.reason,
      stored_at: row.stored_at,
      tier: tape.eligibility.tier,
      max_advance_eur: tape.eligibility.max_advance_eur,
    });
  }

  /** Writes the verification's monitoring (P33), and the time the resource changed. */
  async saveMonitoring(verificationId: string, monitoring: MonitoringRecord, at: string, tapeSchemaVersion?: string): Promise<void> {
    const columns: Partial<VerificationRow> = { ...monitoringColumns(monitoring), updated_at: at };
    if (tapeSchemaVersion) columns.tape_schema_version = tapeSchemaVersion;
    await this.trx('verifications').where({ id: verificationId }).update(columns);
  }

  /** The income a refresh read replaces what was read before: the tape history keeps the earlier tapes, not their months. */
  async replaceIncome(verificationId: string, records: Parameters<VerificationStore['saveIncome']>[1]): Promise<void> {
    await this.trx('income_records').where({ verification_id: verificationId }).delete();
    await this.saveIncome(verificationId, records);
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
    const insert = () => runNamed(this.trx, CLAIM_IDEMPOTENCY_KEY, [lenderId, key, fingerprint, now, expiresAt]);
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
    await runNamed(this.trx, STORE_IDEMPOTENT_RESPONSE, [status, JSON.stringify(body), verificationId, lenderId, key]);
  }
}
