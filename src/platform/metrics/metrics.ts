import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Logger } from '../logger.ts';

/**
 * The service's Prometheus instruments (docs/operations.md lists them with the alerts built on them).
 *
 * Labels take values from small closed sets only: operation ids of the spec, HTTP statuses,
 * verification statuses and reasons, job kinds, providers, outcomes. Never a lender, a key, an id
 * or an obligor reference: each distinct label value is a series kept in memory by the service and
 * by Prometheus, and labels are readable by whoever reads the metrics.
 *
 * Instruments counted as things happen live here, one set per process, the way Prometheus counts
 * a process. Gauges read from the database at scrape time are built per service by `databaseGauges`.
 */
export const processRegistry = new Registry();

const PREFIX = 'civ_';

/** Seconds; from a fast cached read to the 10 s a webhook receiver may take. */
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export const httpRequestDuration = new Histogram({
  name: `${PREFIX}http_request_duration_seconds`,
  help: 'HTTP requests by operationId of the spec and status, with their latency; _count is the number of requests.',
  labelNames: ['operation', 'status'] as const,
  buckets: LATENCY_BUCKETS,
  registers: [processRegistry],
});

export const rateLimitRefusals = new Counter({
  name: `${PREFIX}rate_limit_refusals_total`,
  help: 'Requests refused with 429 rate_limited, by whose quota was spent: an API key, or a client address without a valid key.',
  labelNames: ['scope'] as const,
  registers: [processRegistry],
});

export const verificationsCreated = new Counter({
  name: `${PREFIX}verifications_created_total`,
  help: 'Verifications created, by the status they start in (completed for sandbox synthetic creators).',
  labelNames: ['status'] as const,
  registers: [processRegistry],
});

export const verificationsFinished = new Counter({
  name: `${PREFIX}verifications_finished_total`,
  help: 'Verifications that reached a final status, by status and failure reason (none unless failed).',
  labelNames: ['status', 'reason'] as const,
  registers: [processRegistry],
});

export const tapeScoringDuration = new Histogram({
  name: `${PREFIX}tape_scoring_duration_seconds`,
  help: 'Time to score income into a Risk Tape, by product type.',
  labelNames: ['product_type'] as const,
  buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25],
  registers: [processRegistry],
});

export const webhookAttempts = new Histogram({
  name: `${PREFIX}webhook_attempt_duration_seconds`,
  help: 'Webhook delivery attempts by outcome (delivered, retrying, failed: the last attempt failed), with their latency.',
  labelNames: ['outcome'] as const,
  buckets: LATENCY_BUCKETS,
  registers: [processRegistry],
});

export const webhookDeferrals = new Counter({
  name: `${PREFIX}webhook_deferrals_total`,
  help: 'Webhook deliveries not sent because their receiver origin kept all its connections busy for the whole timeout; each is due again a timeout later, with no attempt spent.',
  registers: [processRegistry],
});

export const monitoringRefreshes = new Counter({
  name: `${PREFIX}monitoring_refreshes_total`,
  help: 'Refreshes of monitored verifications (P33), by outcome: done (a new tape), retrying (a provider error, retried later), failed (after its retries), grant_revoked (ended monitoring).',
  labelNames: ['outcome'] as const,
  registers: [processRegistry],
});

export const jobsRun = new Counter({
  name: `${PREFIX}jobs_run_total`,
  help: 'Durable jobs run, by kind and outcome (done, retrying, failed: no attempts left).',
  labelNames: ['kind', 'outcome'] as const,
  registers: [processRegistry],
});

export const providerCalls = new Histogram({
  name: `${PREFIX}provider_call_duration_seconds`,
  help: 'Calls to the income providers (google, stripe) by call and outcome, with their latency.',
  labelNames: ['provider', 'call', 'outcome'] as const,
  buckets: LATENCY_BUCKETS,
  registers: [processRegistry],
});

export const databaseQueryErrors = new Counter({
  name: `${PREFIX}db_query_errors_total`,
  help: 'Database statements that failed, by kind: unavailable (connection, timeout), constraint (a unique or foreign key refused a write) or other.',
  labelNames: ['kind'] as const,
  registers: [processRegistry],
});

/** The final states of the state table (verifications/state-machine.ts; test/metrics.test.ts keeps the two equal). */
export const FINAL_STATUSES: ReadonlySet<string> = new Set(['completed', 'failed', 'expired', 'cancelled']);
const transitionChildren = new Map<string, Array<{ inc(): void }>>();

/** Counts a committed move of a verification: a creation (no `from`), a finish (a final `to`), or both. */
export function countVerificationMove(from: string | null, to: string, reason: string | null): void {
  const key = `${from === null ? '' : 'moved'}|${to}|${reason ?? ''}`;
  let children = transitionChildren.get(key);
  if (!children) {
    children = [];
    if (from === null) children.push(verificationsCreated.labels(to));
    if (FINAL_STATUSES.has(to)) children.push(verificationsFinished.labels(to, reason ?? 'none'));
    transitionChildren.set(key, children);
  }
  for (const child of children) child.inc();
}

let defaultsCollected = false;

/** Node's process metrics (CPU, memory, event loop lag, GC), registered once the endpoint exists. */
export function collectProcessMetrics(): void {
  if (defaultsCollected) return;
  defaultsCollected = true;
  collectDefaultMetrics({ register: processRegistry });
}

/** What the database says at scrape time; each service reads its own. */
export interface DatabaseGaugeSources {
  /** Queued (pending or running) jobs and how late the oldest due one is, by kind. */
  jobs(): Promise<Array<{ kind: string; queued: number; lagSeconds: number }>>;
  /** Job kinds with handlers, reported as 0 when none is queued rather than disappearing. */
  jobKinds: readonly string[];
  webhooks(): Promise<{ awaitingFirstAttempt: number; awaitingRetry: number; oldestPendingAgeSeconds: number; oldestDueLagSeconds: number }>;
  /** Verifications whose monitoring is active, and those of them whose last refresh failed (P33). */
  monitoring(): Promise<{ active: number; failing: number }>;
  pool(): { used: number; free: number; pendingAcquires: number; max: number };
}

/** One scrape's reads of the database; a read that failed is null. */
interface DatabaseSnapshot {
  jobs: Awaited<ReturnType<DatabaseGaugeSources['jobs']>> | null;
  webhooks: Awaited<ReturnType<DatabaseGaugeSources['webhooks']>> | null;
  monitoring: Awaited<ReturnType<DatabaseGaugeSources['monitoring']>> | null;
}

/**
 * Gauges computed from the database when Prometheus scrapes. Every process of a deployment reports
 * the same backlog (they share one database): aggregate them with max(), not sum(). The processes of
 * one cluster (WEB_CONCURRENCY) are aggregated so already, by the primary.
 */
export function databaseGauges(sources: DatabaseGaugeSources, logger: Logger): Registry {
  const registry = new Registry();
  const snapshot = sharedSnapshot(sources, logger);
  // Registered in the order a scrape lists them.
  reachabilityGauge(registry, snapshot);
  jobGauge(registry, snapshot, sources.jobKinds, {
    name: `${PREFIX}jobs_queued`,
    help: 'Durable jobs pending or running, by kind (all processes share the queue).',
    valueOf: (row) => row.queued,
  });
  monitoringGauge(registry, snapshot);
  jobGauge(registry, snapshot, sources.jobKinds, {
    name: `${PREFIX}jobs_lag_seconds`,
    help: 'How long the oldest due job of each kind has waited past its run time (0: none waiting).',
    valueOf: (row) => row.lagSeconds,
  });
  webhookGauges(registry, snapshot);
  poolGauge(registry, sources);
  return registry;
}

/** The gauges of one scrape are collected concurrently; they share one read of the database. */
function sharedSnapshot(sources: DatabaseGaugeSources, logger: Logger): () => Promise<DatabaseSnapshot> {
  const attempt = async <T>(what: string, read: () => Promise<T>): Promise<T | null> => {
    try {
      return await read();
    } catch (error) {
      logger.warn({ err: error }, `metrics: ${what} unreadable`);
      return null;
    }
  };
  let reading: Promise<DatabaseSnapshot> | null = null;
  return () =>
    (reading ??= (async () => {
      const [jobs, webhooks, monitoring] = await Promise.all([
        attempt('job queue', () => sources.jobs()),
        attempt('webhook backlog', () => sources.webhooks()),
        attempt('monitoring', () => sources.monitoring()),
      ]);
      return { jobs, webhooks, monitoring };
    })().finally(() => {
      reading = null;
    }));
}

function reachabilityGauge(registry: Registry, snapshot: () => Promise<DatabaseSnapshot>): void {
  // A scrape while the database is unreachable still answers, with the process's own series and
  // civ_db_reachable 0; the backlog series are left out rather than reported stale.
  const reachable = new Gauge({
    name: `${PREFIX}db_reachable`,
    help: 'Whether the database answered the reads of this scrape (1) or not (0).',
    registers: [registry],
    // Across the server processes of one cluster (WEB_CONCURRENCY): reachable only if it was for all.
    aggregator: 'min',
    async collect() {
      const { jobs, webhooks, monitoring } = await snapshot();
      reachable.set(jobs && webhooks && monitoring ? 1 : 0);
    },
  });
}

type JobRow = NonNullable<DatabaseSnapshot['jobs']>[number];

function jobGauge(
  registry: Registry,
  snapshot: () => Promise<DatabaseSnapshot>,
  jobKinds: readonly string[],
  { name, help, valueOf }: { name: string; help: string; valueOf: (row: JobRow) => number },
): void {
  const gauge = new Gauge({
    name,
    help,
    labelNames: ['kind'] as const,
    registers: [registry],
    aggregator: 'max',
    async collect() {
      const { jobs } = await snapshot();
      gauge.reset();
      if (!jobs) return;
      for (const kind of jobKinds) gauge.set({ kind }, 0);
      for (const row of jobs) gauge.set({ kind: row.kind }, valueOf(row));
    },
  });
}

function monitoringGauge(registry: Registry, snapshot: () => Promise<DatabaseSnapshot>): void {
  const gauge = new Gauge({
    name: `${PREFIX}monitoring_verifications`,
    help: 'Verifications whose ongoing monitoring is active (state active), and those of them whose last refresh failed (state failing).',
    labelNames: ['state'] as const,
    registers: [registry],
    aggregator: 'max',
    async collect() {
      const { monitoring } = await snapshot();
      gauge.reset();
      if (!monitoring) return;
      gauge.set({ state: 'active' }, monitoring.active);
      gauge.set({ state: 'failing' }, monitoring.failing);
    },
  });
}

function webhookGauges(registry: Registry, snapshot: () => Promise<DatabaseSnapshot>): void {
  const webhookGauge = <Label extends string>(
    configuration: { name: string; help: string; labelNames?: readonly Label[] },
    fill: (gauge: Gauge<Label>, stats: NonNullable<DatabaseSnapshot['webhooks']>) => void,
  ) => {
    const gauge: Gauge<Label> = new Gauge<Label>({
      ...configuration,
      registers: [registry],
      aggregator: 'max',
      async collect() {
        const { webhooks } = await snapshot();
        gauge.reset();
        if (webhooks) fill(gauge, webhooks);
      },
    });
  };
  webhookGauge(
    {
      name: `${PREFIX}webhook_backlog`,
      help: 'Webhook deliveries neither acknowledged nor failed, by phase: first_attempt (never tried) or retry (tried, failed, rescheduled).',
      labelNames: ['phase'] as const,
    },
    (gauge, stats) => {
      gauge.set({ phase: 'first_attempt' }, stats.awaitingFirstAttempt);
      gauge.set({ phase: 'retry' }, stats.awaitingRetry);
    },
  );
  webhookGauge(
    {
      name: `${PREFIX}webhook_oldest_pending_age_seconds`,
      help: 'Age of the oldest webhook delivery still pending (0: none); retries keep one pending up to the last offset of WEBHOOK_RETRY_SCHEDULE.',
    },
    (gauge, stats) => gauge.set(stats.oldestPendingAgeSeconds),
  );
  webhookGauge(
    {
      name: `${PREFIX}webhook_oldest_due_lag_seconds`,
      help: 'How long the oldest delivery due now has waited past its attempt time (0: the sender keeps up).',
    },
    (gauge, stats) => gauge.set(stats.oldestDueLagSeconds),
  );
}

/** This process's own connections, read from the pool rather than the database. */
function poolGauge(registry: Registry, sources: Pick<DatabaseGaugeSources, 'pool'>): void {
  const pool = new Gauge({
    name: `${PREFIX}db_pool_connections`,
    help: 'Database connections of this process by state: used, free, max; and pending (requests waiting for one).',
    labelNames: ['state'] as const,
    registers: [registry],
    collect() {
      const stats = sources.pool();
      pool.set({ state: 'used' }, stats.used);
      pool.set({ state: 'free' }, stats.free);
      pool.set({ state: 'pending' }, stats.pendingAcquires);
      pool.set({ state: 'max' }, stats.max);
    },
  });
}
