import type { components, operations } from '../../generated/api.ts';
import type { RiskTape200 } from '../../generated/tape.ts';
import { checkReturnUrl } from '../accounts/return-origins.ts';
import type { Config } from '../platform/config.ts';
import { sha256Hex } from '../platform/crypto.ts';
import { DomainError } from '../platform/domain-error.ts';
import { newId, randomBase62 } from '../platform/ids.ts';
import { instant, oneCursor } from '../platform/list-query.ts';
import type { UnitOfWork } from '../platform/db/unit-of-work.ts';
import type { JobHandlers } from '../platform/jobs/job-queue.ts';
import { countVerificationMove, monitoringRefreshes } from '../platform/metrics/metrics.ts';
import type { Principal } from '../platform/principal.ts';
import {
  isSyntheticCreator,
  renderTape,
  rendersAsStored,
  TapeVersionUnsupported,
  type PlatformIncome,
  type RenderedTapes,
  type SchemaVersion,
} from '../tape/index.ts';
import type { LifecycleJobPayloads } from './lifecycle-jobs.ts';
import { personalDataIn } from './obligor-reference.ts';
import { sandboxIncome, sandboxSteps, stepDelayMs } from './sandbox.ts';
import { scoreVerification, type ScoredTape, type ScoringProfile } from './scoring.ts';
import { findTransition, IllegalTransition, type FailureReason, type Transition, type VerificationStatus } from './state-machine.ts';
import {
  DEMANDED_REFRESH_SPACING_MS,
  endedMonitoring,
  monitoringSchedule,
  startedMonitoring,
  tapeChanges,
  type MonitoringEndReason,
  type MonitoringRecord,
  type MonitoringSchedule,
} from './monitoring.ts';
import { monitoringEndedEvent, refreshFailedEvent, tapeUpdatedEvent, transitionEvent } from './verification-events.ts';
import {
  toResource,
  type ConnectionStatus,
  type EventFeedFilter,
  type NewVerification,
  type StoredTape,
  type TapeReason,
  type VerificationListFilter,
  type VerificationRecord,
  type VerificationResource,
  type VerificationsRepository,
  type VerificationStore,
} from './verifications-repository.ts';

export type { ScoringProfile } from './scoring.ts';

export const CONSENT_SESSION_MS = 7 * 24 * 60 * 60 * 1000;
export const IDEMPOTENCY_KEY_LIFETIME_MS = 24 * 60 * 60 * 1000;

export type CreateVerificationRequest = operations['createVerification']['requestBody']['content']['application/json'];
export type ListVerificationsQuery = NonNullable<operations['listVerifications']['parameters']['query']>;
export type ListEventsQuery = NonNullable<operations['listEvents']['parameters']['query']>;
export type ListTapesQuery = NonNullable<operations['listVerificationTapes']['parameters']['query']>;

/** How far back the event feed reaches (GET /api/v1/events). */
const EVENT_FEED_DAYS = 30;
export type CreateOverlayRequest = operations['createOverlay']['requestBody']['content']['application/json'];
export type OverlayResource = components['schemas']['Overlay'];

/** At most this many overlays on one tape (P21): more suggests a client attaching in a loop. */
export const MAX_OVERLAYS_PER_TAPE = 50;
/** A provider's payload beyond this is refused (the overlays' 64 KiB limit). */
export const MAX_OVERLAY_DATA_BYTES = 64 * 1024;
export type Platform = VerificationRecord['creatorPlatforms'][number];

/** What collecting a consented verification's income gave: income per requested platform, or the failure. */
export type CollectionOutcome =
  | { kind: 'collected'; platforms: PlatformIncome[] }
  | { kind: 'failed'; reason: Extract<FailureReason, 'platform_error' | 'consent_revoked'>; platform: Platform };

/** Where a consented verification's income comes from: the providers in production, synthetic data in the sandbox. */
export interface IncomeSource {
  collect(verification: VerificationRecord, now: Date): Promise<CollectionOutcome>;
  /** The income again for a monitored verification's refresh number `refresh` (1 for the first), with the grant the creator gave (P33). */
  collectAgain(verification: VerificationRecord, refresh: number, now: Date): Promise<CollectionOutcome>;
}

export interface LifecycleDeps {
  verifications: VerificationsRepository;
  config: Pick<Config, 'mode' | 'publicBaseUrl' | 'sandboxCompleteDelayMs' | 'processingWindowMs'> & Partial<Pick<Config, 'sandboxRefreshIntervalMs'>>;
  now: () => Date;
  /** Read before a unit of work opens: SQLite has one writer connection. */
  scoringProfileOf: (lenderId: string) => Promise<ScoringProfile>;
  incomeSource: IncomeSource;
  /**
   * Other features' data about verifications (connections and tokens, webhook deliveries), erased
   * in the erasure's unit of work before the verifications themselves; each returns its counts.
   */
  dependentData: Array<(unit: UnitOfWork, verificationIds: string[]) => Promise<Record<string, number>>>;
  /** Platforms this deployment cannot connect now (production without their credentials): none by default. */
  unavailablePlatforms?: ReadonlySet<Platform>;
  /**
   * Monitoring ended (P33): the creator's grants are to be revoked at the providers. Run in the
   * unit of work that ends it (the consent feature schedules its revocation job there).
   */
  grantsEnded?: (unit: UnitOfWork, verificationId: string) => Promise<void>;
}

/** What a move needs to start or end a verification's monitoring. */
export interface MonitoringContext {
  schedule: MonitoringSchedule;
  grantsEnded?: (unit: UnitOfWork, verificationId: string) => Promise<void>;
}

/** What an erasure removed, per kind of data. */
export type ErasureCounts = Record<string, number>;

/** Stable across key order and whitespace, so a retried request is recognised as the same payload. */
export function requestFingerprint(body: unknown): string {
  const canonical = (value: unknown): unknown =>
    Array.isArray(value)
      ? value.map(canonical)
      : value !== null && typeof value === 'object'
        ? Object.fromEntries(
            Object.keys(value)
              .sort()
              .map((k) => [k, canonical((value as Record<string, unknown>)[k])]),
          )
        : value;
  return sha256Hex(JSON.stringify(canonical(body)));
}

/** A verification locked in a unit of work, with the moves a command may make on it. */
interface LockedVerification {
  record: VerificationRecord;
  store: VerificationStore;
  /** One row of the state table, with its transition record, tape and event. */
  move: (trigger: Transition['trigger'], change?: { reason?: FailureReason; tape?: ScoredTape; at?: Date }) => Promise<void>;
}

/**
 * The one owner of a verification's lifecycle: every state change goes through these commands, the
 * tape is scored here, and what a change triggers (transition record, event, jobs) commits with it.
 * Other features (consent, the HTTP handlers, and the coming overlays and erasure) call this facade
 * and never the repository's unit of work.
 */
export class VerificationLifecycle {
  private readonly monitoring: MonitoringContext;

  constructor(private readonly deps: LifecycleDeps) {
    this.monitoring = { schedule: monitoringSchedule(deps.config?.sandboxRefreshIntervalMs ?? null), grantsEnded: deps.grantsEnded };
  }

  // Queries: every lender-facing read takes the lender id (tenant isolation).

  findForLender(lenderId: string, verificationId: string): Promise<VerificationResource | null> {
    return this.deps.verifications.findForLender(lenderId, verificationId);
  }

  async findTapeForLender(lenderId: string, verificationId: string): Promise<{ status: VerificationStatus; tape: RiskTape200 | null } | null> {
    const found = await this.deps.verifications.findTapeForLender(lenderId, verificationId);
    return found && { status: found.status, tape: found.tape?.value ?? null };
  }

  /**
   * GET /verifications/{id}/tape: the tape at a schema version (D5). None before completion, and
   * the refusal says where the verification stands; a product type newer than the version is refused.
   */
  async renderedTapeForLender<V extends SchemaVersion>(lenderId: string, verificationId: string, version: V): Promise<RenderedTapes[V]> {
    return (await this.tapeResponseForLender(lenderId, verificationId, version)).tape;
  }

  /**
   * The same tape with its JSON, as sent and signed (P26). At the stored version (2.0.0) that is the
   * stored text itself, which saveTape wrote as JSON.stringify of the tape: nothing serialised again,
   * and nothing parsed unless `tape` is read (the response validator reads it; a lender's read does not).
   */
  async tapeResponseForLender<V extends SchemaVersion>(
    lenderId: string,
    verificationId: string,
    version: V,
    tapeId?: string,
  ): Promise<{ readonly tape: RenderedTapes[V]; json: string }> {
    const found = await this.deps.verifications.findTapeForLender(lenderId, verificationId);
    if (!found) throw new DomainError('not_found', `No verification ${verificationId}.`);
    const latest = found.tape;
    if (found.status !== 'completed' || !latest) {
      throw new DomainError('not_found', `Verification ${verificationId} is ${found.status}; its tape exists once it is completed.`);
    }
    // Without a tape id the read stays the one hot statement; the latest tape's own id is looked up
    // only when no earlier tape has it.
    let tape: StoredTape = latest;
    if (tapeId !== undefined) {
      const earlier = await this.deps.verifications.earlierTapeForLender(lenderId, verificationId, tapeId);
      if (!earlier && (await this.deps.verifications.latestTapeId(verificationId)) !== tapeId) {
        throw new DomainError('not_found', `Verification ${verificationId} has no tape ${tapeId}.`);
      }
      tape = earlier ?? latest;
    }
    if (rendersAsStored(version)) {
      return {
        json: tape.json,
        get tape() {
          return tape.value as RenderedTapes[V];
        },
      };
    }
    let rendered: RenderedTapes[V];
    try {
      rendered = renderTape(tape.value, version);
    } catch (error) {
      if (error instanceof TapeVersionUnsupported) throw new DomainError('refused', error.message);
      throw error;
    }
    return { tape: rendered, json: JSON.stringify(rendered) };
  }

  /**
   * GET /verifications/{id}/tapes (P33): the verification's tapes newest first, in pages after the
   * cursor's tape. A cursor that is not one of its tapes is refused, as on every list.
   */
  async tapeHistoryForLender(lenderId: string, verificationId: string, query: ListTapesQuery): Promise<components['schemas']['TapeList']> {
    const history = await this.deps.verifications.tapeHistoryForLender(lenderId, verificationId);
    if (!history) throw new DomainError('not_found', `No verification ${verificationId}.`);
    let start = 0;
    if (query.starting_after !== undefined) {
      const at = history.findIndex((t) => t.tape_id === query.starting_after);
      if (at < 0)
        throw new DomainError('invalid', `starting_after: verification ${verificationId} has no tape ${query.starting_after}`, 'query.starting_after');
      start = at + 1;
    }
    const limit = Math.min(Math.max(query.limit ?? 20, 1), 100);
    const page = history.slice(start, start + limit);
    return {
      data: page.map((t) => ({
        tape_id: t.tape_id,
        stored_at: t.stored_at,
        reason: t.reason,
        tape_generated_at: t.generated_at,
        schema_version: t.schema_version,
        tier: t.tier,
        max_advance_eur: t.max_advance_eur,
        latest: t.latest,
      })),
      has_more: start + limit < history.length,
    };
  }

  /**
   * The monthly income the latest tape was scored from, per platform, oldest month first (what the
   * dashboard's chart shows); null when the verification is not the lender's or has no tape.
   */
  async monthlyIncomeForLender(lenderId: string, verificationId: string): Promise<PlatformIncome[] | null> {
    const [owned] = await this.deps.verifications.findOwned(lenderId, [verificationId]);
    if (!owned) return null;
    return this.deps.verifications.scoringInputOf(owned.id);
  }

  /** How one of the lender's verifications got where it is: its transitions and the events they recorded, oldest first. */
  async timelineForLender(
    lenderId: string,
    verificationId: string,
  ): Promise<{
    transitions: Array<{ from: string | null; to: string; trigger: string; reason: string | null; at: string }>;
    events: Array<{ id: string; name: string; occurredAt: string }>;
  } | null> {
    const [owned] = await this.deps.verifications.findOwned(lenderId, [verificationId]);
    if (!owned) return null;
    const events = await this.deps.verifications.eventsOf(owned.id);
    return {
      transitions: await this.deps.verifications.transitionsOf(owned.id),
      events: events.map(({ id, name, occurredAt }) => ({ id, name, occurredAt })),
    };
  }

  /**
   * GET /verifications: a page of the lender's verifications, newest first, filtered. The cursor
   * must be one of the lender's own verifications; anything else is refused rather than answered
   * with an empty page, which a client would take for the end of the list.
   */
  async listForLender(lenderId: string, query: ListVerificationsQuery): Promise<{ data: VerificationResource[]; has_more: boolean }> {
    const filter: VerificationListFilter = {
      status: query.status,
      obligorReference: query.obligor_reference,
      productType: query.product_type,
      createdGte: instant(query.created_gte, 'created_gte'),
      createdLt: instant(query.created_lt, 'created_lt'),
    };
    oneCursor(query);
    if (query.starting_after !== undefined) {
      const after = await this.deps.verifications.listPosition(lenderId, query.starting_after);
      if (!after) throw new DomainError('invalid', `starting_after: no verification ${query.starting_after}`, 'query.starting_after');
      filter.after = after;
    }
    if (query.ending_before !== undefined) {
      const before = await this.deps.verifications.listPosition(lenderId, query.ending_before);
      if (!before) throw new DomainError('invalid', `ending_before: no verification ${query.ending_before}`, 'query.ending_before');
      filter.before = before;
    }
    const limit = Math.min(Math.max(query.limit ?? 20, 1), 100);
    const { verifications, hasMore } = await this.deps.verifications.listForLender(lenderId, filter, limit);
    return { data: verifications, has_more: hasMore };
  }

  /**
   * GET /api/v1/events: the lender's events of the last EVENT_FEED_DAYS days, newest first, each as
   * its webhook's body carries it (the stored bytes, parsed once here to be answered as JSON).
   */
  async listEvents(lenderId: string, query: ListEventsQuery): Promise<components['schemas']['EventList']> {
    const filter: EventFeedFilter = {
      since: new Date(this.deps.now().getTime() - EVENT_FEED_DAYS * 24 * 60 * 60 * 1000).toISOString(),
      type: query.type,
      verificationId: query.verification_id,
    };
    if (query.starting_after !== undefined) {
      const position = await this.deps.verifications.eventPosition(lenderId, query.starting_after);
      if (position === null) throw new DomainError('invalid', `starting_after: no event ${query.starting_after}`, 'query.starting_after');
      filter.beforeSequence = position;
    }
    const pageSize = Math.min(Math.max(query.limit ?? 20, 1), 100);
    const { bodies, hasMore } = await this.deps.verifications.eventFeed(lenderId, filter, pageSize);
    return { data: bodies.map((body) => JSON.parse(body) as components['schemas']['Event']), has_more: hasMore };
  }

  /** The verification a consent link opens, by the hash of its token. */
  findByConsentTokenHash(tokenHash: string): Promise<{ record: VerificationRecord; connections: Map<string, string> } | null> {
    return this.deps.verifications.findByConsentTokenHash(tokenHash);
  }

  /** A data subject's verifications in one lender account, by obligor reference or by id. */
  findForObligor(lenderId: string, obligorReference: string): Promise<VerificationRecord[]> {
    return this.deps.verifications.findForObligor(lenderId, obligorReference);
  }

  findOwned(lenderId: string, verificationIds: string[]): Promise<VerificationRecord[]> {
    return this.deps.verifications.findOwned(lenderId, verificationIds);
  }

  /** Everything the lifecycle holds about one verification, for a data-protection access report. */
  async heldAbout(verification: VerificationRecord) {
    const { verifications } = this.deps;
    return {
      resource: await verifications.resourceOf(verification),
      transitions: await verifications.transitionsOf(verification.id),
      tapes: await verifications.tapesOf(verification.id),
      overlays: await verifications.overlaysOf(verification.id),
      income: await verifications.incomeOf(verification.id),
      events: await verifications.eventsOf(verification.id),
    };
  }

  // Commands.

  /**
   * Erases these verifications of the lender and everything held about them, in one unit of work:
   * other features' data first (`dependentData`), then the lifecycle's own, then `alsoInUnit` (for
   * example the audit record). Locks them first: a collection or sandbox step in flight finds
   * nothing afterwards, so no late tape or event follows. Null when none is left to erase (a
   * concurrent erasure got there first).
   */
  async erase(
    lenderId: string,
    verificationIds: string[],
    alsoInUnit: (unit: UnitOfWork, counts: ErasureCounts) => Promise<void>,
  ): Promise<ErasureCounts | null> {
    return this.deps.verifications.transaction(async (store) => {
      const locked = await store.lockOwned(lenderId, verificationIds);
      if (locked.length === 0) return null;
      const ids = locked.map((v) => v.id);
      const counts: ErasureCounts = {};
      for (const eraseDependents of this.deps.dependentData) Object.assign(counts, await eraseDependents(store.unit, ids));
      Object.assign(counts, await store.erase(ids));
      await alsoInUnit(store.unit, counts);
      return counts;
    });
  }

  /**
   * POST /verifications (4.1): creates exactly one verification per lender and Idempotency-Key.
   * The key claim, the verification, its first transition, jobs and event, and the stored answer all
   * commit in one unit of work, so concurrent requests with one key create one verification.
   */
  async create(principal: Principal, idempotencyKey: string, request: CreateVerificationRequest): Promise<{ body: VerificationResource; replayed: boolean }> {
    const fingerprint = requestFingerprint(request);
    // Refused before anything is claimed or written: personal data as a reference, or an
    // unregistered origin, creates nothing.
    const personalData = personalDataIn(request.obligor_reference);
    if (personalData) throw new DomainError('invalid', `obligor_reference: ${personalData}`, 'body.obligor_reference');
    // A link on which the creator could connect nothing would wait out its seven days in silence (P32).
    const unavailable = this.deps.unavailablePlatforms;
    if (unavailable && request.creator_platforms.every((platform) => unavailable.has(platform))) {
      throw new DomainError(
        'refused',
        `creator_platforms: this deployment cannot connect ${request.creator_platforms.join(' or ')} at the moment (its operator has not configured ${request.creator_platforms.length > 1 ? 'them' : 'it'}), so the creator could connect nothing; nothing was created`,
        'body.creator_platforms',
      );
    }
    const returnUrl = returnUrlOf(principal, request);
    const profile = await this.deps.scoringProfileOf(principal.lender.id);
    return this.deps.verifications.transaction(async (store) => {
      // Read once the unit of work has begun (on SQLite, once the writer is this transaction's), not
      // before its wait for the writer: the verification's times and its event's occurred_at are
      // when it is written (and on SQLite's one writer, in the order of the writes; docs/performance.md).
      const now = this.deps.now();
      // Stored by the creation below from a VerificationResource (D1: a replay answers the original
      // body), without the consent URL: its token is a secret, kept sealed with the verification.
      const previous = await claimIdempotencyKey<VerificationResource>(store, principal.lender.id, idempotencyKey, fingerprint, now);
      if (previous) {
        const verification = previous.verificationId ? await store.lock(previous.verificationId) : null;
        return { body: { ...previous.body, consent_url: verification?.consentUrl ?? previous.body.consent_url }, replayed: true };
      }
      const resource = await this.insertNew(store, principal, request, profile, now, returnUrl);
      await store.storeIdempotentResponse(principal.lender.id, idempotencyKey.toLowerCase(), 201, { ...resource, consent_url: '' }, resource.verification_id);
      return { body: resource, replayed: false };
    });
  }

  /**
   * POST /verifications/{id}/overlays (4.9, D20): attaches a third-party block to a completed
   * verification's tape, scores the tape again with every overlay so far (from the same income, as
   * of its original computation: P21), and announces it with `tape.updated`, all in one unit of
   * work. An optional Idempotency-Key behaves as for creation (D1).
   */
  async attachOverlay(
    principal: Principal,
    verificationId: string,
    request: CreateOverlayRequest,
    idempotencyKey: string | undefined,
  ): Promise<{ body: OverlayResource; replayed: boolean }> {
    const data = request.data ?? {};
    if (Buffer.byteLength(JSON.stringify(data)) > MAX_OVERLAY_DATA_BYTES) {
      throw new DomainError('invalid', `the provider payload is larger than ${MAX_OVERLAY_DATA_BYTES / 1024} KiB`, 'body.data');
    }
    const lenderId = principal.lender.id;
    const profile = await this.deps.scoringProfileOf(lenderId);
    const fingerprint = requestFingerprint({ operation: 'createOverlay', verification_id: verificationId, body: request });
    return this.deps.verifications.transaction(async (store) => {
      // As for creation: the time of the write, not of the request's arrival.
      const now = this.deps.now();
      if (idempotencyKey) {
        // Stored below from an OverlayResource.
        const previous = await claimIdempotencyKey<OverlayResource>(store, lenderId, idempotencyKey, fingerprint, now);
        if (previous) return { body: previous.body, replayed: true };
      }
      const [record] = await store.lockOwned(lenderId, [verificationId]);
      if (!record) throw new DomainError('not_found', `No verification ${verificationId}.`);
      if (record.status !== 'completed') {
        throw new DomainError('refused', `Verification ${verificationId} is ${record.status}; overlays attach to the tape of a completed verification.`);
      }
      const existing = await store.overlaysOf(record.id);
      if (existing.length >= MAX_OVERLAYS_PER_TAPE) {
        throw new DomainError('refused', `A tape carries at most ${MAX_OVERLAYS_PER_TAPE} overlays; verification ${verificationId} has ${existing.length}.`);
      }
      const overlay = {
        overlay_id: newId('ovl'),
        type: request.type,
        provider: request.provider,
        reference: request.reference ?? null,
        status: request.status,
        observed_at: request.observed_at,
        data,
        created_at: now.toISOString(),
      };
      await store.insertOverlay(record.id, overlay);
      const stored = (await store.tapeForRescoring(record.id))!;
      const scoredAt = new Date(stored.tape.tape_generated_at);
      const platforms = stored.platforms ?? (await this.incomeScoredBefore(store, record, stored.tape));
      const rescored = scoreVerification(record, platforms, profile, scoredAt, [...existing, overlay]);
      await replaceTape(store, record, stored.tape, rescored, {
        generatedAt: stored.tape.tape_generated_at,
        reason: 'overlay_attached',
        at: now.toISOString(),
      });
      const body: OverlayResource = { ...overlay, verification_id: record.id };
      if (idempotencyKey) await store.storeIdempotentResponse(lenderId, idempotencyKey.toLowerCase(), 201, body, record.id);
      return { body, replayed: false };
    });
  }

  /**
   * The income a tape stored before its scoring input was kept was scored from: the collected
   * income in production, the (deterministic) synthetic income in the sandbox. When each platform
   * was connected is not in the income rows: the tape itself says it. Read in the overlay's unit of
   * work, whose lock it runs under (a read outside it waited for SQLite's one writer for ever).
   */
  private async incomeScoredBefore(store: VerificationStore, record: VerificationRecord, tape: RiskTape200): Promise<PlatformIncome[]> {
    const scoredAt = new Date(tape.tape_generated_at);
    if (this.deps.config.mode === 'sandbox') return sandboxIncome(record, scoredAt, await store.connectedPlatforms(record.id));
    const income = await store.incomeOf(record.id);
    const shown = (platform: string) => tape.platform_connections.find((c) => c.platform === platform);
    // Of a month's records in several currencies, the one listed last names the platform's currency
    // (the engine's rule for source_currency): the rows come sorted by currency, so the tape's own is
    // put last again.
    const last = (currency: string | null | undefined) => (a: { month: string; sourceCurrency: string }, b: { month: string; sourceCurrency: string }) =>
      a.month.localeCompare(b.month) || Number(a.sourceCurrency === currency) - Number(b.sourceCurrency === currency);
    const connectedAt = (platform: string) => shown(platform)?.connected_at ?? null;
    return record.creatorPlatforms.map((platform) => {
      const months = income.filter((r) => r.platform === platform).sort(last(shown(platform)?.source_currency));
      return months.length > 0
        ? {
            platform,
            status: 'connected' as const,
            connectedAt: connectedAt(platform),
            months: months.map((m) => ({ month: m.month, sourceCurrency: m.sourceCurrency, sourceAmount: m.sourceAmount, amountEur: m.amountEur })),
          }
        : { platform, status: 'not_connected' as const, months: [] };
    });
  }

  /** The creator gave consent: `processing`, with the collection and its window (D18) scheduled. False when the link is no longer open. */
  async recordConsent(verificationId: string): Promise<boolean> {
    const now = this.deps.now();
    return this.onLocked(
      verificationId,
      (v) => v.status === 'pending_consent',
      async ({ record, store, move }) => {
        await move('consent_completed');
        await store.schedule('verification.collect_income', record.id, now, { lenderId: record.lenderId }, now);
        await store.schedule('verification.processing_window', record.id, new Date(now.getTime() + this.deps.config.processingWindowMs), {}, now);
      },
      now,
    );
  }

  /**
   * The creator connected a platform on the consent page. Recorded under the verification's lock,
   * so a connection cannot land on a verification cancelled, declined, erased or expired meanwhile;
   * `saveGrant` stores the consent feature's side (account and tokens) in the same unit of work.
   * False, with nothing stored, when the verification no longer waits for consent or did not ask
   * for the platform.
   */
  async connectPlatform(verificationId: string, platform: Platform, saveGrant: (unit: UnitOfWork, at: string) => Promise<void>): Promise<boolean> {
    const now = this.deps.now();
    return this.onLocked(
      verificationId,
      (v) => v.status === 'pending_consent' && new Date(v.expiresAt) > now && v.creatorPlatforms.includes(platform),
      async ({ record, store }) => {
        await store.setConnections(record.id, [{ platform, status: 'connected' }], now.toISOString());
        await saveGrant(store.unit, now.toISOString());
      },
      now,
    );
  }

  /**
   * POST /verifications/{id}/cancel: the lender withdraws a verification still waiting for consent.
   * Cancelling a cancelled one answers it again without a second event (a retried request is
   * safe); any other state is refused. The consent link reads the status, so from the commit on it
   * says the request was withdrawn; the expiry job and sandbox steps find nothing left to move.
   */
  async cancel(lenderId: string, verificationId: string): Promise<VerificationResource> {
    return this.deps.verifications.transaction(async (store) => {
      const now = this.deps.now();
      const [record] = await store.lockOwned(lenderId, [verificationId]);
      if (!record) throw new DomainError('not_found', `No verification ${verificationId}.`);
      if (record.status === 'pending_consent') {
        await moveVerification(store, record, 'cancelled_by_lender', { at: now }, this.monitoring);
      } else if (record.status !== 'cancelled') {
        throw new DomainError('refused', `Verification ${verificationId} is ${record.status}; only a pending_consent verification can be cancelled.`);
      }
      return store.resourceOf((await store.lock(record.id))!);
    });
  }

  /**
   * POST /verifications/{id}/refresh (P33): a refresh of an active monitoring, run by a job; at most
   * one on demand a day (`too_soon`, with when the next is possible), one waiting at a time.
   */
  async requestRefresh(lenderId: string, verificationId: string): Promise<VerificationResource> {
    return this.deps.verifications.transaction(async (store) => {
      const now = this.deps.now();
      const [record] = await store.lockOwned(lenderId, [verificationId]);
      if (!record) throw new DomainError('not_found', `No verification ${verificationId}.`);
      const monitoring = record.monitoring;
      if (!monitoring || monitoring.state !== 'active') {
        throw new DomainError(
          'refused',
          !monitoring
            ? `Verification ${verificationId} was created without monitoring; only a monitored verification is refreshed.`
            : `The monitoring of verification ${verificationId} is ${monitoring.state}${monitoring.endReason ? ` (${monitoring.endReason})` : ''}; only active monitoring is refreshed.`,
        );
      }
      if (monitoring.refreshRequestedAt) {
        throw new DomainError(
          'conflict',
          `A refresh of verification ${verificationId} is already queued (asked at ${monitoring.refreshRequestedAt}); its tape.updated event follows when it is done.`,
        );
      }
      if (monitoring.lastDemandedRefreshAt) {
        const nextAllowed = new Date(monitoring.lastDemandedRefreshAt).getTime() + DEMANDED_REFRESH_SPACING_MS;
        if (now.getTime() < nextAllowed) {
          const seconds = Math.ceil((nextAllowed - now.getTime()) / 1000);
          throw new DomainError(
            'too_soon',
            `Verification ${verificationId} was refreshed on demand at ${monitoring.lastDemandedRefreshAt}; the next refresh on demand is possible from ${new Date(nextAllowed).toISOString()} (retry in ${seconds} seconds).`,
            undefined,
            seconds,
          );
        }
      }
      const at = now.toISOString();
      await store.saveMonitoring(record.id, { ...monitoring, refreshRequestedAt: at, lastDemandedRefreshAt: at }, at);
      // The sandbox takes its outcome delay, as a provider takes its time: the refresh is seen waiting.
      const runAt = new Date(now.getTime() + (this.deps.config.mode === 'sandbox' ? this.deps.config.sandboxCompleteDelayMs : 0));
      await store.schedule('verification.refresh', record.id, runAt, { mark: null, attempt: 0, due: at }, now);
      return store.resourceOf((await store.lock(record.id))!);
    });
  }

  /**
   * POST /verifications/{id}/monitoring/stop (P33): the lender ends monitoring that is pending or
   * active. Monitoring already ended is answered as it stands, without a second event.
   */
  async stopMonitoring(lenderId: string, verificationId: string): Promise<VerificationResource> {
    return this.deps.verifications.transaction(async (store) => {
      const now = this.deps.now();
      const [record] = await store.lockOwned(lenderId, [verificationId]);
      if (!record) throw new DomainError('not_found', `No verification ${verificationId}.`);
      if (!record.monitoring) throw new DomainError('refused', `Verification ${verificationId} was created without monitoring; there is nothing to stop.`);
      if (record.monitoring.state !== 'ended') {
        await endMonitoring(store, { ...record, monitoring: record.monitoring }, 'stopped_by_lender', now, this.monitoring);
      }
      return store.resourceOf((await store.lock(record.id))!);
    });
  }

  /** The creator stopped sharing from the consent link (P33). False when there was nothing left to stop. */
  async stopByCreator(verificationId: string): Promise<boolean> {
    const now = this.deps.now();
    return this.onLocked(
      verificationId,
      (v) => v.monitoring !== null && v.monitoring.state !== 'ended',
      ({ record, store }) => endMonitoring(store, { ...record, monitoring: record.monitoring! }, 'stopped_by_creator', now, this.monitoring),
      now,
    );
  }

  /**
   * Job (P33): one refresh of a monitored verification, a monthly one (`mark`) or one asked for on
   * demand. The income is read outside any unit of work (providers can be slow), then, under the
   * lock, the tape is scored again or the failure recorded: a failed read is retried on the
   * schedule's delays, then counted and announced; a refused grant ends monitoring. The last
   * monthly refresh ends the window whatever it found.
   */
  async refresh(verificationId: string, payload: LifecycleJobPayloads['verification.refresh'], now: Date): Promise<void> {
    const due = (v: VerificationRecord) =>
      v.status === 'completed' &&
      v.monitoring?.state === 'active' &&
      (payload.mark === null ? v.monitoring.refreshRequestedAt === payload.due : v.monitoring.nextRefreshAt === payload.due);
    const found = await this.deps.verifications.find(verificationId);
    if (!found || !due(found)) return;
    const outcome = await this.deps.incomeSource.collectAgain(found, found.monitoring!.refreshes + 1, now);
    const profile = await this.deps.scoringProfileOf(found.lenderId);
    const { schedule } = this.monitoring;
    await this.onLocked(verificationId, due, async ({ record, store }) => {
      const monitoring = record.monitoring!;
      const at = this.deps.now();
      const atIso = at.toISOString();
      const monitored = { ...record, monitoring };
      const lastMark = payload.mark !== null && payload.mark >= monitoring.months;
      let next: MonitoringRecord = { ...monitoring };
      let failedForGood = false;
      if (outcome.kind === 'collected') {
        const previous = (await store.tapeForRescoring(record.id))!.tape;
        await store.replaceIncome(record.id, incomeRecordsOf(outcome.platforms));
        const rescored = scoreVerification(record, outcome.platforms, profile, at, await store.overlaysOf(record.id));
        await replaceTape(store, record, previous, rescored, { generatedAt: atIso, reason: 'refresh', at: atIso });
        next = { ...next, lastRefreshAt: atIso, refreshes: monitoring.refreshes + 1, failedRefreshes: 0 };
        await store.saveMonitoring(record.id, next, atIso, rescored.tape.schema_version);
      } else if (outcome.reason === 'consent_revoked') {
        await store.setConnections(record.id, [{ platform: outcome.platform, status: 'revoked' }], atIso);
        store.unit.afterCommit(() => monitoringRefreshes.labels('grant_revoked').inc());
        return endMonitoring(store, monitored, 'grant_revoked', at, this.monitoring);
      } else if (payload.attempt < schedule.retryDelaysMs.length && !lastMark) {
        // Retried on the schedule's delays; the last tape stays the latest meanwhile.
        const retryAt = new Date(at.getTime() + schedule.retryDelaysMs[payload.attempt]!);
        const retryDue = payload.mark === null ? payload.due : retryAt.toISOString();
        if (payload.mark !== null) next.nextRefreshAt = retryDue;
        await store.saveMonitoring(record.id, next, atIso);
        await store.schedule('verification.refresh', record.id, retryAt, { mark: payload.mark, attempt: payload.attempt + 1, due: retryDue }, at);
        store.unit.afterCommit(() => monitoringRefreshes.labels('retrying').inc());
        return;
      } else {
        failedForGood = true;
        next.failedRefreshes = monitoring.failedRefreshes + 1;
      }
      if (payload.mark === null) next.refreshRequestedAt = null;
      else if (!lastMark) {
        next.nextRefreshAt = schedule.markAt(monitoring.startsAt!, payload.mark + 1).toISOString();
        await scheduleMark(store, record.id, payload.mark + 1, next.nextRefreshAt, at);
      }
      await store.saveMonitoring(record.id, next, atIso);
      store.unit.afterCommit(() => monitoringRefreshes.labels(failedForGood ? 'failed' : 'done').inc());
      if (failedForGood) {
        const eventId = newId('evt');
        await store.recordEvent({
          id: eventId,
          lenderId: record.lenderId,
          verificationId: record.id,
          name: 'verification.refresh_failed',
          body: refreshFailedEvent(
            eventId,
            { verificationId: record.id, obligorReference: record.obligorReference },
            next.failedRefreshes,
            lastMark ? null : next.nextRefreshAt,
            atIso,
          ),
          occurredAt: atIso,
        });
      }
      if (lastMark) await endMonitoring(store, monitored, 'window_over', at, this.monitoring, next);
    });
  }

  /**
   * The creator declined on the consent page: `failed` with `consent_declined` and its
   * `verification.failed` event, nothing read. Only an open consent session can be declined (not
   * one past its expiry that the expiry job has not reached yet). False when the link is no longer open.
   */
  async decline(verificationId: string): Promise<boolean> {
    const now = this.deps.now();
    return this.onLocked(
      verificationId,
      (v) => v.status === 'pending_consent' && new Date(v.expiresAt) > now,
      ({ move }) => move('consent_declined', { reason: 'consent_declined' }),
      now,
    );
  }

  /** Job: fetch the income of a consented verification (outside any unit of work: providers can be slow), then record it. */
  async collectIncome(verificationId: string, now: Date): Promise<void> {
    const verification = await this.deps.verifications.find(verificationId);
    if (!verification || verification.status !== 'processing') return;
    await this.recordCollection(verification, await this.deps.incomeSource.collect(verification, now), now);
  }

  /** Job: the 7-day consent session ended (section 3). No-op unless the verification still waits for consent. */
  async expire(verificationId: string, now: Date): Promise<void> {
    await this.onLocked(
      verificationId,
      (v) => v.status === 'pending_consent' && new Date(v.expiresAt) <= now,
      ({ move }) => move('consent_expired'),
      now,
    );
  }

  /** Job: D18, the processing window ended; a verification still processing fails with `timeout`. */
  async enforceProcessingWindow(verificationId: string, now: Date): Promise<void> {
    await this.onLocked(
      verificationId,
      (v) => v.status === 'processing',
      ({ move }) => move('collection_failed', { reason: 'timeout' }),
      now,
    );
  }

  /** Job: one step of a `test-` scenario (D11); schedules the next. Steps that no longer apply are skipped. */
  async runSandboxStep(verificationId: string, lenderId: string, stepIndex: number, now: Date): Promise<void> {
    const profile = await this.deps.scoringProfileOf(lenderId);
    const stepOf = (v: VerificationRecord) => sandboxSteps(v.obligorReference)?.[stepIndex];
    await this.onLocked(
      verificationId,
      (v) => {
        const step = stepOf(v);
        return step !== undefined && findTransition(v.status, step.trigger) !== undefined;
      },
      async ({ record, store, move }) => {
        const steps = sandboxSteps(record.obligorReference)!;
        const step = steps[stepIndex]!;
        // The simulated creator connects every platform at consent; a failure marks them as the reason says.
        const connectionStatus =
          step.trigger === 'consent_completed'
            ? 'connected'
            : step.reason === 'platform_error'
              ? 'error'
              : step.reason === 'consent_revoked'
                ? 'revoked'
                : null;
        if (connectionStatus) {
          await store.setConnections(
            record.id,
            record.creatorPlatforms.map((platform) => ({ platform, status: connectionStatus })),
            now.toISOString(),
          );
        }
        const tape = step.trigger === 'tape_computed' ? scoreVerification(record, sandboxIncome(record, now), profile, now) : undefined;
        await move(step.trigger, { reason: step.reason, tape });
        const next = steps[stepIndex + 1];
        if (next) {
          // Timed from creation, so steps missed while the service was down all run as soon as it is back.
          const runAt = new Date(new Date(record.createdAt).getTime() + stepDelayMs(next, this.deps.config.sandboxCompleteDelayMs));
          await store.schedule('verification.sandbox_step', record.id, runAt, { step: stepIndex + 1, lenderId: record.lenderId }, now);
        }
      },
      now,
    );
  }

  /** The handlers of the lifecycle's job kinds, for the job runner. */
  jobHandlers(): JobHandlers<LifecycleJobPayloads> {
    return {
      'verification.expire_consent': (job, now) => this.expire(job.subjectId, now),
      'verification.sandbox_step': (job, now) => this.runSandboxStep(job.subjectId, job.payload.lenderId, job.payload.step, now),
      'verification.collect_income': (job, now) => this.collectIncome(job.subjectId, now),
      'verification.processing_window': (job, now) => this.enforceProcessingWindow(job.subjectId, now),
      'verification.refresh': (job, now) => this.refresh(job.subjectId, job.payload, now),
    };
  }

  // The routine every command shares.

  /**
   * Locks the verification in a unit of work; stops (returning false) unless `actsOn` accepts its
   * current state; otherwise runs `work`, whose moves and jobs commit together. A move the state
   * table does not allow throws IllegalTransition and the whole unit rolls back.
   */
  private async onLocked(
    verificationId: string,
    actsOn: (verification: VerificationRecord) => boolean,
    work: (locked: LockedVerification) => Promise<void>,
    at: Date = this.deps.now(),
  ): Promise<boolean> {
    return this.deps.verifications.transaction(async (store) => {
      const record = await store.lock(verificationId);
      if (!record || !actsOn(record)) return false;
      await work({
        record,
        store,
        move: async (trigger, change = {}) => {
          await moveVerification(store, record, trigger, { at, ...change }, this.monitoring);
        },
      });
      return true;
    });
  }

  private async insertNew(
    store: VerificationStore,
    principal: Principal,
    request: CreateVerificationRequest,
    profile: ScoringProfile,
    now: Date,
    returnUrl: string | null,
  ): Promise<VerificationResource> {
    const consentToken = randomBase62(43);
    const record: VerificationRecord = {
      id: newId('vrf'),
      lenderId: principal.lender.id,
      obligorReference: request.obligor_reference,
      creatorPlatforms: request.creator_platforms,
      lenderName: request.lender_name ?? principal.lender.name,
      productType: request.product_type ?? 'rbf',
      declaredMonthlyObligationsEur: request.declared_monthly_obligations_eur ?? null,
      returnUrl,
      status: 'pending_consent',
      failureReason: null,
      // The URL carries an unguessable token, never the verification id; the token is stored only
      // hashed (to open the link) and sealed (to show the URL again).
      consentUrl: `${this.deps.config.publicBaseUrl}/consent/${consentToken}`,
      expiresAt: new Date(now.getTime() + CONSENT_SESSION_MS).toISOString(),
      createdAt: now.toISOString(),
      updatedAt: now.toISOString(),
      completedAt: null,
      tapeSchemaVersion: null,
      monitoring: request.monitoring
        ? {
            months: request.monitoring.months,
            state: 'pending',
            endReason: null,
            startsAt: null,
            endsAt: null,
            lastRefreshAt: null,
            nextRefreshAt: null,
            refreshRequestedAt: null,
            lastDemandedRefreshAt: null,
            refreshes: 0,
            failedRefreshes: 0,
          }
        : null,
    };
    const sandbox = this.deps.config.mode === 'sandbox';
    const insertAs = async (
      inserted: VerificationRecord,
      connections: 'connected' | 'not_connected',
      trigger: 'created' | 'created_synthetic',
      tape?: ScoredTape,
    ) => {
      await createVerification(store, { ...inserted, consentToken, consentTokenHash: sha256Hex(consentToken) }, trigger, {
        at: now,
        connections: record.creatorPlatforms.map((platform) => ({ platform, status: connections })),
        tape,
      });
      return new Map(record.creatorPlatforms.map((platform) => [platform, connections]));
    };

    if (sandbox && isSyntheticCreator(record.obligorReference)) {
      // Section 3: a synthetic creator completes at creation, with its tape and its event.
      const tape = scoreVerification(record, sandboxIncome(record, now), profile, now);
      const completed: VerificationRecord = {
        ...record,
        status: 'completed',
        completedAt: record.createdAt,
        tapeSchemaVersion: tape.tape.schema_version,
        // Its first tape is made now, so its monitoring starts now.
        monitoring: record.monitoring && startedMonitoring(record.monitoring, record.createdAt, this.monitoring.schedule),
      };
      const connections = await insertAs(completed, 'connected', 'created_synthetic', tape);
      if (completed.monitoring) await scheduleMark(store, completed.id, 1, completed.monitoring.nextRefreshAt!, now);
      // What the creation stored, answered without reading it back (the creation's hot path).
      return toResource(completed, connections);
    }
    const connections = await insertAs(record, 'not_connected', 'created');
    const steps = sandbox ? sandboxSteps(record.obligorReference) : null;
    if (steps) {
      const runAt = new Date(now.getTime() + stepDelayMs(steps[0]!, this.deps.config.sandboxCompleteDelayMs));
      await store.schedule('verification.sandbox_step', record.id, runAt, { step: 0, lenderId: record.lenderId }, now);
    }
    await store.schedule('verification.expire_consent', record.id, new Date(record.expiresAt), {}, now);
    return toResource(record, connections);
  }

  /**
   * The income of a `processing` verification arrived (or its collection failed): the tape is
   * scored and the verification completes, or it fails with the reason. A result that arrives after
   * the processing window closed does not make a late tape (D18).
   */
  private async recordCollection(verification: VerificationRecord, outcome: CollectionOutcome, collectedAt: Date): Promise<void> {
    const profile = await this.deps.scoringProfileOf(verification.lenderId);
    await this.onLocked(
      verification.id,
      (v) => v.status === 'processing',
      async ({ record, store, move }) => {
        if (this.deps.now().getTime() >= new Date(record.updatedAt).getTime() + this.deps.config.processingWindowMs) {
          return move('collection_failed', { reason: 'timeout', at: this.deps.now() });
        }
        if (outcome.kind === 'failed') {
          const status = outcome.reason === 'consent_revoked' ? 'revoked' : 'error';
          await store.setConnections(record.id, [{ platform: outcome.platform, status }], collectedAt.toISOString());
          return move('collection_failed', { reason: outcome.reason });
        }
        await store.saveIncome(record.id, incomeRecordsOf(outcome.platforms));
        await move('tape_computed', { tape: scoreVerification(record, outcome.platforms, profile, collectedAt) });
      },
      collectedAt,
    );
  }
}

/** The months of income a collection read, as the income records keep them. */
function incomeRecordsOf(platforms: PlatformIncome[]) {
  return platforms.flatMap((p) =>
    p.months.map((m) => ({ platform: p.platform, month: m.month, sourceCurrency: m.sourceCurrency, sourceAmount: m.sourceAmount, amountEur: m.amountEur })),
  );
}

/**
 * D1: claims the lender's Idempotency-Key for this request in the store's unit of work. Returns the
 * answer stored for an earlier identical request, null for a first request; a different request
 * with the key is a conflict. The caller stores its answer with the key before the unit commits.
 */
async function claimIdempotencyKey<Answer>(
  store: VerificationStore,
  lenderId: string,
  idempotencyKey: string,
  fingerprint: string,
  now: Date,
): Promise<{ body: Answer; verificationId: string | null } | null> {
  const expiresAt = new Date(now.getTime() + IDEMPOTENCY_KEY_LIFETIME_MS).toISOString();
  const previous = await store.claimIdempotencyKey(lenderId, idempotencyKey.toLowerCase(), fingerprint, now.toISOString(), expiresAt);
  if (!previous) return null;
  if (previous.requestFingerprint !== fingerprint) {
    throw new DomainError('conflict', `Idempotency-Key ${idempotencyKey} was already used with a different payload.`);
  }
  return { body: previous.responseBody as Answer, verificationId: previous.verificationId };
}

/**
 * The creation's `return_url` as its pages will link it, or null without one; a URL whose origin the
 * lender has not registered is a `validation_error` (accounts/return-origins.ts).
 */
function returnUrlOf(principal: Principal, request: CreateVerificationRequest): string | null {
  if (request.return_url === undefined) return null;
  const checked = checkReturnUrl(request.return_url, principal.lender.returnOrigins);
  if ('refused' in checked) throw new DomainError('invalid', `return_url: ${checked.refused}`, 'body.return_url');
  return checked.url;
}

/**
 * The first move of a verification, its creation: the row, inserted in the state the move leads to
 * with that move's columns, its platform connections, the transition and, when the move emits one,
 * its event and tape, written together (`VerificationStore.insertCreation`). A trigger that is no
 * creation throws IllegalTransition. Only the lifecycle calls it.
 */
export async function createVerification(
  store: VerificationStore,
  verification: NewVerification,
  trigger: 'created' | 'created_synthetic',
  change: { at: Date; connections: Array<{ platform: Platform; status: ConnectionStatus }>; tape?: ScoredTape },
): Promise<void> {
  const transition = findTransition(null, trigger);
  if (!transition) throw new IllegalTransition(null, trigger);
  if (transition.to !== verification.status) throw new Error(`a ${trigger} creation is inserted ${transition.to}, not ${verification.status}`);
  if ((transition.emits === null) !== (change.tape === undefined)) throw new Error(`a ${trigger} creation ${change.tape ? 'has no' : 'needs a'} tape`);
  const at = change.at.toISOString();
  const eventId = newId('evt');
  await store.insertCreation({
    verification,
    connections: change.connections,
    transition,
    at,
    completion:
      transition.emits && change.tape
        ? {
            tape: change.tape,
            tapeId: newId('tap'),
            event: {
              id: eventId,
              name: transition.emits,
              body: transitionEvent(
                transition.emits,
                eventId,
                { verificationId: verification.id, obligorReference: verification.obligorReference },
                at,
                undefined,
              ),
            },
          }
        : undefined,
  });
  store.unit.afterCommit(() => countVerificationMove(transition.from, transition.to, null));
}

/**
 * Moves a verification along one row of the state table, with everything the move triggers (the
 * transition record, the tape, the event) in the store's unit of work. A move the table does not
 * allow throws IllegalTransition and the unit rolls back. Only the lifecycle calls it; it is
 * exported for the test that proves an illegal move changes nothing.
 */
export async function moveVerification(
  store: VerificationStore,
  verification: Pick<VerificationRecord, 'id' | 'lenderId' | 'obligorReference' | 'status' | 'monitoring'>,
  trigger: Transition['trigger'],
  change: { at: Date; reason?: FailureReason; tape?: ScoredTape },
  monitoring?: MonitoringContext,
): Promise<Transition> {
  const transition = findTransition(verification.status, trigger);
  if (!transition) throw new IllegalTransition(verification.status, trigger);
  // A failure carries one of its row's reasons, or the row's event would announce another move.
  if (transition.to === 'failed' && !(change.reason && transition.reasons?.includes(change.reason))) {
    throw new Error(`move ${trigger} to failed with reason ${change.reason ?? 'none'}, not one of ${transition.reasons?.join(', ') ?? 'none'}`);
  }
  const at = change.at.toISOString();
  if (change.tape) await store.saveTape(verification, change.tape, at, { tapeId: newId('tap'), reason: 'completion', at });
  await store.applyStatus(verification.id, transition, { at, reason: change.reason ?? null, tapeSchemaVersion: change.tape?.tape.schema_version });
  store.unit.afterCommit(() => countVerificationMove(transition.from, transition.to, change.reason ?? null));
  if (transition.emits) {
    const eventId = newId('evt');
    await store.recordEvent({
      id: eventId,
      lenderId: verification.lenderId,
      verificationId: verification.id,
      name: transition.emits,
      body: transitionEvent(transition.emits, eventId, { verificationId: verification.id, obligorReference: verification.obligorReference }, at, change.reason),
      occurredAt: at,
    });
  }
  if (verification.monitoring?.state === 'pending') {
    if (!monitoring) throw new Error(`moving monitored verification ${verification.id} needs its monitoring context`);
    if (transition.to === 'completed') {
      // The first tape starts the window the creator agreed to.
      const started = startedMonitoring(verification.monitoring, at, monitoring.schedule);
      await store.saveMonitoring(verification.id, started, at);
      await scheduleMark(store, verification.id, 1, started.nextRefreshAt!, change.at);
    } else if (FINAL_STATUSES.has(transition.to)) {
      await endMonitoring(
        store,
        verification as MonitoredVerification,
        trigger === 'cancelled_by_lender' ? 'cancelled_by_lender' : 'not_completed',
        change.at,
        monitoring,
      );
    }
  }
  return transition;
}

const FINAL_STATUSES: ReadonlySet<VerificationStatus> = new Set(['failed', 'expired', 'cancelled']);

type MonitoredVerification = Pick<VerificationRecord, 'id' | 'lenderId' | 'obligorReference'> & { monitoring: MonitoringRecord };

/** The monthly refresh number `mark`, due at `due` (the monitoring's `next_refresh_at`). */
async function scheduleMark(store: VerificationStore, verificationId: string, mark: number, due: string, now: Date): Promise<void> {
  await store.schedule('verification.refresh', verificationId, new Date(due), { mark, attempt: 0, due }, now);
}

/**
 * Ends a verification's monitoring for `reason` (P33), once: nothing more is read, the creator's
 * grants go to be revoked, and `verification.monitoring_ended` tells the lender. Jobs still queued
 * find it ended and do nothing.
 */
async function endMonitoring(
  store: VerificationStore,
  verification: MonitoredVerification,
  reason: MonitoringEndReason,
  at: Date,
  context: MonitoringContext,
  monitoring: MonitoringRecord = verification.monitoring,
): Promise<void> {
  const atIso = at.toISOString();
  await store.saveMonitoring(verification.id, endedMonitoring(monitoring, reason), atIso);
  await context.grantsEnded?.(store.unit, verification.id);
  const eventId = newId('evt');
  await store.recordEvent({
    id: eventId,
    lenderId: verification.lenderId,
    verificationId: verification.id,
    name: 'verification.monitoring_ended',
    body: monitoringEndedEvent(eventId, { verificationId: verification.id, obligorReference: verification.obligorReference }, reason, atIso),
    occurredAt: atIso,
  });
}

/**
 * A completed verification's tape scored again (an overlay, a refresh): the latest tape moves into
 * the history, the new one takes its place, and `tape.updated` says what changed.
 */
async function replaceTape(
  store: VerificationStore,
  record: VerificationRecord,
  previous: RiskTape200,
  rescored: ScoredTape,
  stored: { generatedAt: string; reason: Exclude<TapeReason, 'completion'>; at: string },
): Promise<string> {
  const tapeId = newId('tap');
  await store.retireTape(record.id);
  await store.saveTape(record, rescored, stored.generatedAt, { tapeId, reason: stored.reason, at: stored.at });
  const eventId = newId('evt');
  await store.recordEvent({
    id: eventId,
    lenderId: record.lenderId,
    verificationId: record.id,
    name: 'tape.updated',
    body: tapeUpdatedEvent(
      eventId,
      { verificationId: record.id, obligorReference: record.obligorReference },
      rescored.tape.schema_version,
      stored.reason,
      stored.at,
      {
        tapeId,
        changes: tapeChanges(previous, rescored.tape),
      },
    ),
    occurredAt: stored.at,
  });
  return tapeId;
}
