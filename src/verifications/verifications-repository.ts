import type { Knex } from 'knex';
import type { OverlayBlock, RiskTape200 } from '../../generated/tape.ts';
import { inUnitOfWork } from '../platform/db/unit-of-work.ts';
import { hotStatement, knexHotStatements, type HotStatements } from '../platform/db/hot-statements.ts';
import { columnsOf } from '../platform/db/columns.ts';
import { whereStatusAmong } from '../platform/db/list-filters.ts';
import type { PlatformIncome } from '../tape/index.ts';
import type { VerificationStatus } from './state-machine.ts';
import { VerificationStore } from './verification-store-repository.ts';
import {
  VERIFICATION_COLUMNS,
  connectionsOf,
  overlaysIn,
  connectedPlatformsIn,
  incomeIn,
  resourceIn,
  rowsOf,
  storedTape,
  toRecord,
  toResource,
  type ConsentLinks,
  type StoreCollaborators,
  type StoredTape,
  type VerificationListFilter,
  type VerificationRecord,
  type VerificationResource,
  type VerificationRow,
  type VerificationWithConnectionRow,
} from './verification-rows-repository.ts';

export { VerificationStore } from './verification-store-repository.ts';
export {
  toResource,
  type ConnectionStatus,
  type ConsentLinks,
  type IdempotencyRecord,
  type NewVerification,
  type Platform,
  type StoreCollaborators,
  type StoredTape,
  type TapeListener,
  type TapeReason,
  type VerificationListFilter,
  type VerificationRecord,
  type VerificationResource,
} from './verification-rows-repository.ts';

/** One tape of a verification's history, as GET /verifications/{id}/tapes lists it. */
export interface TapeSummaryRow {
  tape_id: string;
  reason: string;
  stored_at: string;
  generated_at: string;
  tier: RiskTape200['eligibility']['tier'];
  max_advance_eur: number;
  schema_version: RiskTape200['schema_version'];
  latest: boolean;
}

/** What a page of the event feed is filtered by: events at or after `since`, older than `beforeSequence`. */
export interface EventFeedFilter {
  since: string;
  type?: string;
  verificationId?: string;
  beforeSequence?: number;
}

// The read side of the verifications: the lender's reads (one verification, the list, the tape),
// the consent link's lookup and the data-protection report's reads. Builder queries, and the two
// hot statements of a polling lender (docs/persistence.md, "Query kinds").

// The two reads a polling lender makes (hot-statements.ts): hand-written, prepared once. Each finds
// the verification by its primary key and then checks the lender: `v.lender_id || ''` is not a
// column, so no index on lender_id can serve it. With statistics gathered (ANALYZE) on a million
// verifications, SQLite otherwise read the tape's verification from an index of the lender's rows
// (verifications_list_status_idx covers the columns the tape read needs), 47,000 entries per read:
// a tape read 10 times slower at 10^6 rows (docs/performance.md, "Scale").
const VERIFICATION_FOR_LENDER = hotStatement(
  'verification_for_lender',
  `select ${columnsOf('v', VERIFICATION_COLUMNS)}, c.platform as connection_platform, c.status as connection_status
   from verifications v left join platform_connections c on c.verification_id = v.id
   where v.id = ? and v.lender_id || '' = ?`,
);
const TAPE_FOR_LENDER = hotStatement(
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
    return inUnitOfWork(this.knex, (unit) => work(new VerificationStore(unit, this.collaborators)));
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

  /** For the metrics: verifications whose monitoring is active, and those whose last refresh failed. */
  async monitoringCounts(): Promise<{ active: number; failing: number }> {
    const [row] = await this.knex<VerificationRow>('verifications')
      .where({ monitoring_state: 'active' })
      .select(this.knex.raw('count(*) as active'), this.knex.raw('sum(case when failed_refreshes > 0 then 1 else 0 end) as failing'));
    const counts = row as unknown as { active: number | string; failing: number | string | null };
    return { active: Number(counts.active), failing: Number(counts.failing ?? 0) };
  }

  /** The income the latest tape was scored from; null without a tape (or one stored before its input was kept). */
  async scoringInputOf(verificationId: string): Promise<PlatformIncome[] | null> {
    const row = await this.knex<{ verification_id: string; scoring_input: string | null }>('tapes')
      .where({ verification_id: verificationId })
      .first('scoring_input');
    return row?.scoring_input ? (JSON.parse(row.scoring_input) as PlatformIncome[]) : null;
  }

  /** Every tape of the verification, the ones a later tape replaced first (oldest first), then the latest. */
  async tapesOf(verificationId: string): Promise<RiskTape200[]> {
    const earlier = await this.knex<{ verification_id: string; tape: string; stored_at: string; tape_id: string }>('tape_history')
      .where({ verification_id: verificationId })
      .orderBy([{ column: 'stored_at' }, { column: 'tape_id' }])
      .select('tape');
    const rows = await this.knex<{ verification_id: string; tape: string }>('tapes').where({ verification_id: verificationId }).select('tape');
    return [...earlier, ...rows].map((r) => JSON.parse(r.tape) as RiskTape200);
  }

  /**
   * The lender's verification's tapes, newest first (P33): the latest from `tapes`, the ones it
   * replaced from `tape_history`. Null when the verification is not the lender's. A verification
   * has one tape per refresh or overlay, so the whole list is read and paged here.
   */
  async tapeHistoryForLender(lenderId: string, verificationId: string): Promise<TapeSummaryRow[] | null> {
    const owned = await this.knex<VerificationRow>('verifications').where({ id: verificationId, lender_id: lenderId }).first('id');
    if (!owned) return null;
    const latest = await this.knex<{ verification_id: string; tape: string; tape_id: string; reason: string; stored_at: string; generated_at: string }>('tapes')
      .where({ verification_id: verificationId })
      .first();
    const earlier = await this.knex<TapeSummaryRow & { verification_id: string }>('tape_history')
      .where({ verification_id: verificationId })
      .orderBy([
        { column: 'stored_at', order: 'desc' },
        { column: 'tape_id', order: 'desc' },
      ])
      .select('tape_id', 'reason', 'stored_at', 'generated_at', 'tier', 'max_advance_eur');
    if (!latest) return [];
    const tape = JSON.parse(latest.tape) as RiskTape200;
    const summaries: TapeSummaryRow[] = [
      {
        tape_id: latest.tape_id,
        reason: latest.reason,
        stored_at: latest.stored_at,
        generated_at: latest.generated_at,
        tier: tape.eligibility.tier,
        max_advance_eur: tape.eligibility.max_advance_eur,
        schema_version: tape.schema_version,
        latest: true,
      },
    ];
    // An earlier tape's schema version is the stored one's: tapes are stored at the newest version.
    for (const row of earlier) summaries.push({ ...row, max_advance_eur: Number(row.max_advance_eur), schema_version: tape.schema_version, latest: false });
    return summaries;
  }

  /** The id of a verification's latest tape (the caller has found it the lender's); null without one. */
  async latestTapeId(verificationId: string): Promise<string | null> {
    const row = await this.knex<{ verification_id: string; tape_id: string }>('tapes').where({ verification_id: verificationId }).first('tape_id');
    return row?.tape_id ?? null;
  }

  /** An earlier tape of the lender's verification, by its id in the tape history (P33). */
  async earlierTapeForLender(lenderId: string, verificationId: string, tapeId: string): Promise<StoredTape | null> {
    const row = await this.knex('tape_history as h')
      .join('verifications as v', 'v.id', 'h.verification_id')
      .where({ 'h.tape_id': tapeId, 'h.verification_id': verificationId, 'v.lender_id': lenderId })
      .first<{ tape: string } | undefined>('h.tape');
    return row ? storedTape(row.tape) : null;
  }

  async incomeOf(verificationId: string): ReturnType<typeof incomeIn> {
    return incomeIn(this.knex, verificationId);
  }

  /** The platforms connected, each with when it was connected (null until known). */
  async connectedPlatforms(verificationId: string): Promise<Map<string, string | null>> {
    return connectedPlatformsIn(this.knex, verificationId);
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
    // A page before a cursor is read nearest first, oldest of them first: shown newest first.
    const page = filter.before ? rows.slice(0, limit).reverse() : rows.slice(0, limit);
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

  /**
   * A page of the lender's events, newest first (GET /api/v1/events): each one's body as stored, the
   * bytes its webhook carries. One range of `events_lender_sequence_idx` (or of the verification's
   * own index when filtered by it), never a sort.
   */
  async eventFeed(lenderId: string, filter: EventFeedFilter, limit: number): Promise<{ bodies: string[]; hasMore: boolean }> {
    const query = this.reader('events').where({ lender_id: lenderId }).andWhere('occurred_at', '>=', filter.since);
    if (filter.type) void query.andWhere('name', filter.type);
    if (filter.verificationId) void query.andWhere('verification_id', filter.verificationId);
    if (filter.beforeSequence !== undefined) void query.andWhere('sequence', '<', filter.beforeSequence);
    const rows = await query
      .orderBy('sequence', 'desc')
      .limit(limit + 1)
      .select<Array<{ payload: string }>>('payload');
    return { bodies: rows.slice(0, limit).map((row) => row.payload), hasMore: rows.length > limit };
  }

  /** Where the lender's event `eventId` stands in its feed, or null when it has no such event. */
  async eventPosition(lenderId: string, eventId: string): Promise<number | null> {
    const row: { sequence: number | string } | undefined = await this.reader('events').where({ lender_id: lenderId, id: eventId }).first('sequence');
    return row ? Number(row.sequence) : null;
  }

  /** The SQL of a page query, for the test that reads its plan (no scan, no sort) on both databases. */
  listSql(lenderId: string, filter: VerificationListFilter, limit: number): { sql: string; bindings: readonly unknown[] } {
    const { sql, bindings } = this.listBuilder(lenderId, filter, limit).toSQL();
    return { sql, bindings };
  }

  private listBuilder(lenderId: string, filter: VerificationListFilter, limit: number) {
    const query = this.reader<VerificationRow>('verifications').where({ lender_id: lenderId });
    // One state reads its own index (lender, status, created_at, id) in list order. Several would
    // read it once per state and sort the lot, a sort that grows with the lender's rows.
    if (filter.status?.length === 1) void query.andWhere('status', filter.status[0]!);
    else if (filter.status) whereStatusAmong(query, filter.status);
    if (filter.obligorReference) void query.andWhere('obligor_reference', filter.obligorReference);
    if (filter.productType) void query.andWhere('product_type', filter.productType);
    if (filter.createdGte) void query.andWhere('created_at', '>=', filter.createdGte);
    if (filter.createdLt) void query.andWhere('created_at', '<', filter.createdLt);
    // A row-value comparison, which both databases answer as one range of the index.
    if (filter.after) void query.andWhereRaw('(created_at, id) < (?, ?)', [filter.after.createdAt, filter.after.id]);
    if (filter.before) void query.andWhereRaw('(created_at, id) > (?, ?)', [filter.before.createdAt, filter.before.id]);
    const order = filter.before ? 'asc' : 'desc';
    return query
      .orderBy([
        { column: 'created_at', order },
        { column: 'id', order },
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
