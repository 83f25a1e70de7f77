import type { Knex } from 'knex';
import type { Dialect } from '../platform/db/database.ts';
import { whereStatusAmong } from '../platform/db/list-filters.ts';
import { chunks } from '../platform/db/chunks.ts';
import { namedStatement, runNamed } from '../platform/db/named-statements.ts';
import { hotStatement, knexHotStatements, type HotStatements } from '../platform/db/hot-statements.ts';
import { columnsOf, everyColumnOf } from '../platform/db/columns.ts';
import { transactionOf, type UnitOfWork } from '../platform/db/unit-of-work.ts';

export interface WebhookEndpoint {
  id: string;
  lenderId: string;
  url: string;
  events: string[];
  secretCiphertext: string;
  /** A rotated-out secret still signing beside the current one, until `previousSecretExpiresAt`. */
  previousSecretCiphertext: string | null;
  previousSecretExpiresAt: string | null;
  createdAt: string;
  /** Since when the endpoint is disabled (P29); null while it is enabled. */
  disabledAt: string | null;
}

/** What PATCH /webhooks/{id} changes; a field left out keeps its value. */
export interface EndpointChange {
  url?: string;
  events?: string[];
  enabled?: boolean;
}

export type DeliveryStatus = 'pending' | 'sending' | 'succeeded' | 'failed';

export interface DeliveryAttempt {
  attempt: number;
  attemptedAt: string;
  statusCode: number | null;
  durationMs: number;
  error: string | null;
  /** The start of the receiver's answer, for people reading the log. */
  responseSnippet: string | null;
}

export interface Delivery {
  id: string;
  webhookId: string;
  eventId: string;
  eventName: string;
  verificationId: string;
  /** As a lender sees it: a delivery being sent (`sending`, an internal claim) is still `pending`. */
  status: Exclude<DeliveryStatus, 'sending'>;
  attempts: DeliveryAttempt[];
  nextAttemptAt: string | null;
  replayOf: string | null;
  createdAt: string;
}

/** A claimed delivery with what sending it needs: the endpoint and the event's exact body. */
export interface DueDelivery {
  id: string;
  webhookId: string;
  eventName: string;
  attempts: number;
  firstAttemptAt: string | null;
  url: string;
  secretCiphertext: string;
  previousSecretCiphertext: string | null;
  previousSecretExpiresAt: string | null;
  body: string;
}

export interface AttemptRecord {
  deliveryId: string;
  attempt: DeliveryAttempt;
  outcome: { status: 'succeeded' | 'failed' | 'pending'; firstAttemptAt: string; nextAttemptAt: string | null };
}

/** Claimed deliveries that were never sent (their receiver's connections stayed busy): due again at `until`, no attempt spent. */
export interface Deferral {
  deliveryIds: string[];
  until: string;
}

export interface NewDelivery {
  id: string;
  webhookId: string;
  lenderId: string;
  eventId: string;
  eventName: string;
  verificationId: string;
  eventSequence: number;
  replayOf: string | null;
  createdAt: string;
}

/** `raw` answers rows on SQLite and `{rows}` on PostgreSQL. */
const rowsOf = <Row>(result: Row[] | { rows: Row[] }): Row[] => (Array.isArray(result) ? result : result.rows);

interface EndpointRow {
  id: string;
  lender_id: string;
  url: string;
  events: string;
  secret_ciphertext: string;
  previous_secret_ciphertext: string | null;
  previous_secret_expires_at: string | null;
  created_at: string;
  disabled_at: string | null;
}

interface DeliveryRow {
  id: string;
  webhook_id: string;
  lender_id: string;
  event_id: string;
  event_name: string;
  verification_id: string;
  event_sequence: number;
  status: DeliveryStatus;
  next_attempt_at: string | null;
  replay_of: string | null;
  created_at: string;
}

interface AttemptRow {
  delivery_id: string;
  attempt: number;
  attempted_at: string;
  status_code: number | null;
  duration_ms: number;
  error: string | null;
  response_snippet: string | null;
}

interface DueRow {
  id: string;
  webhook_id: string;
  event_name: string;
  attempts: number;
  first_attempt_at: string | null;
  next_attempt_at: string;
  event_sequence: number;
  /** Read by subquery in the claim: null only if the endpoint's or the event's row were missing. */
  url: string | null;
  secret_ciphertext: string;
  previous_secret_ciphertext: string | null;
  previous_secret_expires_at: string | null;
  body: string | null;
}

type SendableRow = DueRow & { url: string; body: string };

const toEndpoint = (row: EndpointRow): WebhookEndpoint => ({
  id: row.id,
  lenderId: row.lender_id,
  url: row.url,
  events: JSON.parse(row.events) as string[],
  secretCiphertext: row.secret_ciphertext,
  previousSecretCiphertext: row.previous_secret_ciphertext,
  previousSecretExpiresAt: row.previous_secret_expires_at,
  createdAt: row.created_at,
  disabledAt: row.disabled_at,
});

/** Where a page of an endpoint's delivery log starts: after this delivery, in the log's order. */
/** What a page of an endpoint's delivery log is filtered by. */
export interface DeliveryLogFilter {
  status?: string[];
  createdGte?: string;
  createdLt?: string;
  /** The previous page's last delivery: the deliveries made before it. */
  after?: DeliveryLogPosition;
  /** The next page's first delivery: the deliveries made after it, nearest first. */
  before?: DeliveryLogPosition;
}

export interface DeliveryLogPosition {
  createdAt: string;
  id: string;
}

/**
 * Whether any delivery is due now, by the claim's own condition without its order: read before a
 * claim, on SQLite's read connection, which does not wait for the writer. About half the sender's
 * claims found nothing (each pass ends on one, and the passes a burst of commits wakes find their
 * deliveries taken), and each took a turn on SQLite's single writer and committed its open group
 * early (docs/performance.md). A later event held back behind an earlier one still being sent is
 * due by this condition, so the claim still runs while one waits. Each condition in its own
 * `exists`, each a range of the (status, next_attempt_at) index that stops at its first row: an
 * `or` in one scan may be planned as a bitmap scan or a read of the whole table on PostgreSQL.
 */
const ANY_DELIVERY_DUE = hotStatement(
  'any_delivery_due',
  `select 1 as due where exists (select 1 from webhook_deliveries where status = 'pending' and next_attempt_at <= ?)
     or exists (select 1 from webhook_deliveries where status = 'sending' and locked_until < ?)`,
);

/** An endpoint's columns as the prepared read names them (docs/persistence.md says why not `*`). */
const ENDPOINT_COLUMNS = everyColumnOf<EndpointRow>()(
  'id',
  'lender_id',
  'url',
  'events',
  'secret_ciphertext',
  'previous_secret_ciphertext',
  'previous_secret_expires_at',
  'created_at',
  'disabled_at',
);

// Every event a state change records runs these (docs/persistence.md, "Named statements").
const LIVE_ENDPOINTS_OF_LENDER = namedStatement(
  'live_endpoints_of_lender',
  `select ${columnsOf('w', ENDPOINT_COLUMNS)} from "webhook_endpoints" w where w.lender_id = ? and w.deleted_at is null`,
);
const INSERT_EVENT_BODY = namedStatement('insert_event_body', 'insert into "webhook_events" ("event_id", "lender_id", "body") values (?, ?, ?)');

/** The only code that reads or writes webhook endpoints and deliveries. */
export class WebhooksRepository {
  /** `hot` serves the sender's look before each claim; it defaults to statements through the writer. */
  constructor(
    private readonly knex: Knex,
    private readonly dialect: Dialect,
    private readonly hot: HotStatements = knexHotStatements(knex),
  ) {}

  /**
   * Inserts the endpoint unless its lender has `max` live ones already (false then). The count and
   * the insert are one transaction, and a lender's registrations take turns: SQLite runs one write
   * transaction at a time, PostgreSQL holds an advisory lock per lender until the commit. Counted
   * apart, registrations sent at once all saw room and all got in.
   */
  async insertEndpointWithin(endpoint: WebhookEndpoint, max: number): Promise<boolean> {
    return this.knex.transaction(async (trx): Promise<boolean> => {
      if (this.dialect === 'postgres') {
        await trx.raw('select pg_advisory_xact_lock(hashtextextended(?, 0))', [`webhook_endpoints:${endpoint.lenderId}`]);
      }
      const row = await trx('webhook_endpoints')
        .where({ lender_id: endpoint.lenderId })
        .whereNull('deleted_at')
        .count<{ n: number | string }>({ n: '*' })
        .first();
      if (Number(row?.n ?? 0) >= max) return false;
      await trx('webhook_endpoints').insert({
        id: endpoint.id,
        lender_id: endpoint.lenderId,
        url: endpoint.url,
        events: JSON.stringify(endpoint.events),
        secret_ciphertext: endpoint.secretCiphertext,
        created_at: endpoint.createdAt,
      });
      return true;
    });
  }

  async countEndpoints(lenderId: string): Promise<number> {
    const row = await this.knex('webhook_endpoints').where({ lender_id: lenderId }).whereNull('deleted_at').count<{ n: number | string }>({ n: '*' }).first();
    return Number(row?.n ?? 0);
  }

  /** A page of the lender's endpoints, oldest first, after the keyset `after` (at most 20 exist: P14). */
  async listEndpoints(lenderId: string, limit: number, after?: { createdAt: string; id: string }): Promise<{ endpoints: WebhookEndpoint[]; hasMore: boolean }> {
    const query = this.knex<EndpointRow>('webhook_endpoints').where({ lender_id: lenderId }).whereNull('deleted_at');
    if (after) void query.andWhereRaw('(created_at, id) > (?, ?)', [after.createdAt, after.id]);
    const rows = await query.orderBy([{ column: 'created_at' }, { column: 'id' }]).limit(limit + 1);
    return { endpoints: rows.slice(0, limit).map(toEndpoint), hasMore: rows.length > limit };
  }

  /** Replaces the secret; the current one keeps signing until `previousExpiresAt` (null: it stops at once). */
  async rotateSecret(
    lenderId: string,
    webhookId: string,
    change: { secretCiphertext: string; previousSecretCiphertext: string | null; previousSecretExpiresAt: string | null },
  ): Promise<boolean> {
    const updated = await this.knex('webhook_endpoints').where({ id: webhookId, lender_id: lenderId }).whereNull('deleted_at').update({
      secret_ciphertext: change.secretCiphertext,
      previous_secret_ciphertext: change.previousSecretCiphertext,
      previous_secret_expires_at: change.previousSecretExpiresAt,
    });
    return updated === 1;
  }

  /**
   * Changes the endpoint's url, events or state in one transaction, and with the state its pending
   * deliveries (P29): disabling holds them (pending, `next_attempt_at` null, which no claim
   * selects), enabling makes the held ones due at `at`, the time of the change. The endpoint's row
   * is updated first, so a concurrent change or replay waits for this one's commit on PostgreSQL
   * (its row lock) and SQLite (its single writer). The endpoint as changed, or null when the lender
   * has no such live endpoint.
   */
  async updateEndpoint(lenderId: string, webhookId: string, change: EndpointChange, at: string): Promise<WebhookEndpoint | null> {
    return this.knex.transaction(async (trx) => {
      const updated = await trx('webhook_endpoints')
        .where({ id: webhookId, lender_id: lenderId })
        .whereNull('deleted_at')
        .update({
          // An update of no column is no statement: the id is set to itself when nothing else changes.
          id: webhookId,
          ...(change.url === undefined ? {} : { url: change.url }),
          ...(change.events === undefined ? {} : { events: JSON.stringify(change.events) }),
          // Disabled again while disabled: it stays disabled since the first time.
          ...(change.enabled === undefined ? {} : { disabled_at: change.enabled ? null : trx.raw('coalesce(disabled_at, ?)', [at]) }),
        });
      if (updated === 0) return null;
      const pending = trx('webhook_deliveries').where({ webhook_id: webhookId, status: 'pending' });
      if (change.enabled === false) await pending.update({ next_attempt_at: null });
      if (change.enabled === true) await pending.whereNull('next_attempt_at').update({ next_attempt_at: at });
      return toEndpoint((await trx<EndpointRow>('webhook_endpoints').where({ id: webhookId }).first())!);
    });
  }

  async findEndpoint(lenderId: string, webhookId: string): Promise<WebhookEndpoint | null> {
    const row = await this.knex<EndpointRow>('webhook_endpoints').where({ id: webhookId, lender_id: lenderId }).whereNull('deleted_at').first();
    return row ? toEndpoint(row) : null;
  }

  /** Removes the endpoint; deliveries still waiting for it are marked failed, never sent (section 4.7). */
  async deleteEndpoint(lenderId: string, webhookId: string, at: string): Promise<boolean> {
    return this.knex.transaction(async (trx) => {
      const deleted = await trx('webhook_endpoints').where({ id: webhookId, lender_id: lenderId }).whereNull('deleted_at').update({ deleted_at: at });
      if (deleted === 0) return false;
      await trx('webhook_deliveries')
        .where({ webhook_id: webhookId })
        .whereIn('status', ['pending', 'sending'])
        .update({ status: 'failed', next_attempt_at: null, locked_by: null, locked_until: null });
      return true;
    });
  }

  /**
   * Endpoints of the lender subscribed to the event, read in the unit of work that records it; a
   * disabled one is not (P29: no delivery, ever, for an event recorded while it is disabled).
   */
  async subscribedEndpoints(unit: UnitOfWork, lenderId: string, eventName: string): Promise<WebhookEndpoint[]> {
    const rows = await runNamed<EndpointRow>(transactionOf(unit), LIVE_ENDPOINTS_OF_LENDER, [lenderId]);
    return rows.map(toEndpoint).filter((endpoint) => endpoint.disabledAt === null && endpoint.events.includes(eventName));
  }

  /** The event's exact body and its first deliveries, in the unit of work of the state change (D14). */
  async insertEventDeliveries(
    unit: UnitOfWork,
    event: { id: string; lenderId: string; body: string },
    deliveries: NewDelivery[],
    nextAttemptAt: string,
  ): Promise<void> {
    const trx = transactionOf(unit);
    await runNamed(trx, INSERT_EVENT_BODY, [event.id, event.lenderId, event.body]);
    await this.insertDeliveries(trx, deliveries, nextAttemptAt);
  }

  private async insertDeliveries(trx: Knex, deliveries: NewDelivery[], nextAttemptAt: string | null): Promise<void> {
    if (deliveries.length === 0) return;
    await trx('webhook_deliveries').insert(
      deliveries.map((d) => ({
        id: d.id,
        webhook_id: d.webhookId,
        lender_id: d.lenderId,
        event_id: d.eventId,
        event_name: d.eventName,
        verification_id: d.verificationId,
        event_sequence: d.eventSequence,
        status: 'pending',
        attempts: 0,
        next_attempt_at: nextAttemptAt,
        replay_of: d.replayOf,
        created_at: d.createdAt,
      })),
    );
  }

  /**
   * Claims due deliveries. A delivery waits while an earlier event of the same verification to the
   * same endpoint is still pending, which keeps the order of section 6.1. A delivery whose sender
   * died (lease over) is claimed again: at least once. On PostgreSQL SKIP LOCKED lets several
   * processes claim side by side without taking the same row.
   */
  async claimDue(claimant: string, now: Date, limit: number, leaseMs: number): Promise<DueDelivery[]> {
    const at = now.toISOString();
    const lockedUntil = new Date(now.getTime() + leaseMs).toISOString();
    // Committed rows only: deliveries of a transaction still open are claimed after its commit, which
    // wakes the sender again.
    if ((await this.hot.rows(ANY_DELIVERY_DUE, [at, at])).length === 0) return [];
    const skipLocked = this.dialect === 'postgres' ? 'for update of d skip locked' : '';
    // One statement claims the deliveries and returns what sending them needs (the endpoint's and the
    // event's columns by their primary keys): a second read after the claim waited for the writer's
    // next turn again on SQLite, behind a queued creation's transaction.
    const endpoint = (column: string) => `(select w.${column} from webhook_endpoints w where w.id = webhook_deliveries.webhook_id) as ${column}`;
    const rows = rowsOf(
      await this.knex.raw<DueRow[] | { rows: DueRow[] }>(
        `update webhook_deliveries set status = 'sending', locked_by = ?, locked_until = ?
         where id in (
           select d.id from webhook_deliveries d
           where ((d.status = 'pending' and d.next_attempt_at <= ?) or (d.status = 'sending' and d.locked_until < ?))
             -- A disabled endpoint's deliveries wait (P29). Disabling, and recording an attempt that
             -- was under way, hold them out of this range already; this catches the rest: one put
             -- off unsent at that moment, and one made by an event committed alongside the PATCH.
             and not exists (select 1 from webhook_endpoints w where w.id = d.webhook_id and w.disabled_at is not null)
             and not exists (
               select 1 from webhook_deliveries e
               where e.webhook_id = d.webhook_id and e.verification_id = d.verification_id
                 and e.event_sequence < d.event_sequence and e.status in ('pending', 'sending')
             )
           order by d.next_attempt_at, d.event_sequence
           limit ? ${skipLocked}
         )
         returning id, webhook_id, event_name, attempts, first_attempt_at, next_attempt_at, event_sequence,
           ${['url', 'secret_ciphertext', 'previous_secret_ciphertext', 'previous_secret_expires_at'].map(endpoint).join(', ')},
           (select e.body from webhook_events e where e.event_id = webhook_deliveries.event_id) as body`,
        [claimant, lockedUntil, at, at, limit],
      ),
    );
    return rows
      .filter((r): r is SendableRow => r.url !== null && r.body !== null)
      .sort((a, b) => a.next_attempt_at.localeCompare(b.next_attempt_at) || a.event_sequence - b.event_sequence)
      .map((r) => ({
        id: r.id,
        webhookId: r.webhook_id,
        eventName: r.event_name,
        attempts: r.attempts,
        firstAttemptAt: r.first_attempt_at,
        url: r.url,
        secretCiphertext: r.secret_ciphertext,
        previousSecretCiphertext: r.previous_secret_ciphertext,
        previousSecretExpiresAt: r.previous_secret_expires_at,
        body: r.body,
      }));
  }

  /** Logs attempts and moves each delivery on: done, or waiting for `nextAttemptAt`, or failed. */
  async recordAttempts(claimant: string, records: AttemptRecord[], deferral?: Deferral): Promise<void> {
    if (records.length === 0 && !deferral?.deliveryIds.length) return;
    await this.knex.transaction(async (trx) => {
      // Back to pending as they were (attempts, first attempt), only later: they were claimed, not sent.
      if (deferral)
        for (const chunk of chunks(deferral.deliveryIds, 500))
          await trx('webhook_deliveries')
            .where('locked_by', claimant)
            .whereIn('id', chunk)
            .update({ status: 'pending', next_attempt_at: deferral.until, locked_by: null, locked_until: null });
      if (records.length === 0) return;
      // A delivery erased while it was in flight (a data-protection erasure) leaves no attempt behind.
      const remaining = new Set(
        (
          await trx<DeliveryRow>('webhook_deliveries')
            .whereIn(
              'id',
              records.map((r) => r.deliveryId),
            )
            .select('id')
        ).map((r) => r.id),
      );
      records = records.filter((r) => remaining.has(r.deliveryId));
      if (records.length === 0) return;
      await trx('webhook_delivery_attempts').insert(
        records.map(({ deliveryId, attempt }) => ({
          delivery_id: deliveryId,
          attempt: attempt.attempt,
          attempted_at: attempt.attemptedAt,
          status_code: attempt.statusCode,
          duration_ms: attempt.durationMs,
          error: attempt.error,
          response_snippet: attempt.responseSnippet,
        })),
      );
      // One statement moves the whole batch on (one per delivery held SQLite's single writer for
      // as long as a batch of creations takes), each delivery to its own values, chunked under
      // SQLite's limit of bound values. Only the claimant records: if its lease ran out and another
      // worker took over, it stands aside.
      for (const chunk of chunks(records, 500)) {
        const each = (value: (record: AttemptRecord) => string | number | null, cast = '?') => ({
          sql: `case id ${chunk.map(() => `when ? then ${cast}`).join(' ')} end`,
          bindings: chunk.flatMap((record) => [record.deliveryId, value(record)]),
        });
        const next = each((r) => r.outcome.nextAttemptAt);
        const columns = {
          status: each((r) => r.outcome.status),
          attempts: each((r) => r.attempt.attempt, 'cast(? as integer)'),
          first_attempt_at: each((r) => r.outcome.firstAttemptAt),
          // An attempt that was under way when its endpoint was disabled: its retry is held like
          // the endpoint's other pending deliveries (P29), not scheduled.
          next_attempt_at: {
            sql: `case when exists (select 1 from webhook_endpoints w where w.id = webhook_deliveries.webhook_id and w.disabled_at is not null) then null else ${next.sql} end`,
            bindings: next.bindings,
          },
        };
        await trx.raw(
          `update webhook_deliveries set ${Object.entries(columns)
            .map(([column, { sql }]) => `${column} = ${sql}`)
            .join(', ')}, locked_by = null, locked_until = null
           where locked_by = ? and id in (${chunk.map(() => '?').join(', ')})`,
          [...Object.values(columns).flatMap(({ bindings }) => bindings), claimant, ...chunk.map((r) => r.deliveryId)],
        );
      }
    });
  }

  /** Every delivery about these verifications, for a data-protection access report. */
  /** The sender's backlog across every endpoint (metrics): what waits, and for how long. */
  async backlog(now: Date): Promise<{ awaitingFirstAttempt: number; awaitingRetry: number; oldestPendingAgeSeconds: number; oldestDueLagSeconds: number }> {
    const at = now.toISOString();
    type BacklogRow = { first_attempt: number | string; retry: number | string; oldest: string | null; oldest_due: string | null };
    const rows: BacklogRow[] = await this.knex('webhook_deliveries')
      .whereIn('status', ['pending', 'sending'])
      .select(
        this.knex.raw('coalesce(sum(case when attempts = 0 then 1 else 0 end), 0) as first_attempt'),
        this.knex.raw('coalesce(sum(case when attempts > 0 then 1 else 0 end), 0) as retry'),
        this.knex.raw('min(created_at) as oldest'),
        this.knex.raw(
          "min(case when status = 'pending' and next_attempt_at <= ? then next_attempt_at when status = 'sending' and locked_until < ? then locked_until end) as oldest_due",
          [at, at],
        ),
      );
    // An aggregate without group by: always exactly one row.
    const row = rows[0]!;
    const secondsSince = (iso: string | null) => (iso ? Math.max(0, (now.getTime() - Date.parse(iso)) / 1000) : 0);
    return {
      awaitingFirstAttempt: Number(row.first_attempt),
      awaitingRetry: Number(row.retry),
      oldestPendingAgeSeconds: secondsSince(row.oldest),
      oldestDueLagSeconds: secondsSince(row.oldest_due),
    };
  }

  async deliveriesOf(verificationIds: string[]): Promise<Array<Delivery & { verificationId: string }>> {
    if (verificationIds.length === 0) return [];
    const rows = await this.knex<DeliveryRow>('webhook_deliveries')
      .whereIn('verification_id', verificationIds)
      .orderBy([{ column: 'created_at' }, { column: 'id' }]);
    return this.withAttempts(rows);
  }

  /** Erases what webhooks hold about these verifications (event copies, deliveries, attempts) in the erasure's unit of work. */
  async erase(unit: UnitOfWork, verificationIds: string[]): Promise<{ webhook_deliveries: number }> {
    const trx = transactionOf(unit);
    const deliveries = trx('webhook_deliveries').whereIn('verification_id', verificationIds).select('id');
    await trx('webhook_delivery_attempts').whereIn('delivery_id', deliveries).delete();
    const eventIds = trx('webhook_deliveries').whereIn('verification_id', verificationIds).select('event_id');
    await trx('webhook_events').whereIn('event_id', eventIds).delete();
    const deleted = await trx('webhook_deliveries').whereIn('verification_id', verificationIds).delete();
    return { webhook_deliveries: deleted };
  }

  /**
   * A page of one endpoint's log, newest first; null when a cursor is not a delivery of that
   * endpoint (`refused` names which).
   */
  async listDeliveries(
    webhookId: string,
    limit: number,
    query: { startingAfter?: string; endingBefore?: string; status?: string[]; createdGte?: string; createdLt?: string },
  ): Promise<{ deliveries: Delivery[]; hasMore: boolean } | { refused: 'starting_after' | 'ending_before' }> {
    const positionOf = async (id: string): Promise<DeliveryLogPosition | undefined> => {
      const cursor = await this.knex<DeliveryRow>('webhook_deliveries').where({ webhook_id: webhookId, id }).first('created_at', 'id');
      return cursor && { createdAt: cursor.created_at, id: cursor.id };
    };
    const filter: DeliveryLogFilter = { status: query.status, createdGte: query.createdGte, createdLt: query.createdLt };
    if (query.startingAfter !== undefined) {
      filter.after = await positionOf(query.startingAfter);
      if (!filter.after) return { refused: 'starting_after' };
    }
    if (query.endingBefore !== undefined) {
      filter.before = await positionOf(query.endingBefore);
      if (!filter.before) return { refused: 'ending_before' };
    }
    const rows: DeliveryRow[] = await this.deliveryLogPage(webhookId, filter, limit + 1);
    // A page before a cursor is read nearest first: shown newest first.
    const page = filter.before ? rows.slice(0, limit).reverse() : rows.slice(0, limit);
    return { deliveries: await this.withAttempts(page), hasMore: rows.length > limit };
  }

  /** The SQL of a delivery-log page, for the test that reads its plan (no scan, no sort) on both databases. */
  deliveryLogSql(webhookId: string, filter: DeliveryLogFilter, limit: number): { sql: string; bindings: readonly unknown[] } {
    const { sql, bindings } = this.deliveryLogPage(webhookId, filter, limit).toSQL();
    return { sql, bindings };
  }

  /** One range of webhook_deliveries_log_idx (migration 019), in its order, from a cursor on. */
  private deliveryLogPage(webhookId: string, filter: DeliveryLogFilter, limit: number) {
    const query = this.knex<DeliveryRow>('webhook_deliveries').where({ webhook_id: webhookId });
    // Not through the (status, next_attempt_at) index: the log's index, read in its order, filtered.
    if (filter.status) whereStatusAmong(query, filter.status);
    if (filter.createdGte) void query.andWhere('created_at', '>=', filter.createdGte);
    if (filter.createdLt) void query.andWhere('created_at', '<', filter.createdLt);
    // Row-value comparisons, which both databases answer as one range of the index.
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

  async findDelivery(webhookId: string, deliveryId: string): Promise<(Delivery & { lenderId: string; eventSequence: number }) | null> {
    const row = await this.knex<DeliveryRow>('webhook_deliveries').where({ webhook_id: webhookId, id: deliveryId }).first();
    if (!row) return null;
    const [delivery] = await this.withAttempts([row]);
    return { ...delivery!, lenderId: row.lender_id, eventSequence: row.event_sequence };
  }

  private async withAttempts(rows: DeliveryRow[]): Promise<Delivery[]> {
    const attempts =
      rows.length === 0
        ? []
        : await this.knex<AttemptRow>('webhook_delivery_attempts')
            .whereIn(
              'delivery_id',
              rows.map((r) => r.id),
            )
            .orderBy('id');
    return rows.map((row) => ({
      id: row.id,
      webhookId: row.webhook_id,
      eventId: row.event_id,
      eventName: row.event_name,
      verificationId: row.verification_id,
      status: row.status === 'sending' ? 'pending' : row.status,
      attempts: attempts
        .filter((a) => a.delivery_id === row.id)
        .map((a) => ({
          attempt: a.attempt,
          attemptedAt: a.attempted_at,
          statusCode: a.status_code,
          durationMs: a.duration_ms,
          error: a.error,
          responseSnippet: a.response_snippet,
        })),
      nextAttemptAt: row.status === 'pending' || row.status === 'sending' ? row.next_attempt_at : null,
      replayOf: row.replay_of,
      createdAt: row.created_at,
    }));
  }

  /**
   * A replay sends the event's stored body again, so only the delivery is new. For a disabled
   * endpoint it is held like the endpoint's other pending deliveries (P29); the endpoint's row is
   * read under a share lock on PostgreSQL, so a change of its state commits before or after, never
   * between the read and the insert. Whether it was held.
   */
  async insertReplay(delivery: NewDelivery, nextAttemptAt: string): Promise<{ held: boolean }> {
    return this.knex.transaction(async (trx) => {
      const endpoint = trx<EndpointRow>('webhook_endpoints').where({ id: delivery.webhookId }).first('disabled_at');
      if (this.dialect === 'postgres') void endpoint.forShare();
      const held = Boolean((await endpoint)?.disabled_at);
      await this.insertDeliveries(trx, [delivery], held ? null : nextAttemptAt);
      return { held };
    });
  }
}
