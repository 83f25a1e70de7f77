import type { components } from '../../generated/api.ts';
import type { EventBody } from '../platform/events/outbox.ts';
import type { RiskTape200 } from '../../generated/tape.ts';

// Ongoing monitoring (P33): when a monitored verification's income is read again, and what a
// refresh changed. Pure: the lifecycle (verification-lifecycle.ts) applies it.

export type MonitoringResource = components['schemas']['Monitoring'];
export type MonitoringState = MonitoringResource['state'];
export type MonitoringEndReason = NonNullable<MonitoringResource['end_reason']>;

/** A verification's monitoring as stored; null on a one-time verification. */
export interface MonitoringRecord {
  months: number;
  state: MonitoringState;
  endReason: MonitoringEndReason | null;
  startsAt: string | null;
  endsAt: string | null;
  lastRefreshAt: string | null;
  nextRefreshAt: string | null;
  /** A refresh on demand waiting to run: when it was asked for. */
  refreshRequestedAt: string | null;
  /** The last refresh on demand asked for (the one-a-day limit). */
  lastDemandedRefreshAt: string | null;
  /** Successful refreshes so far (the sandbox's new months count them). */
  refreshes: number;
  failedRefreshes: number;
}

/** At most one refresh on demand per verification in this time (the contract's "one a day"). */
export const DEMANDED_REFRESH_SPACING_MS = 24 * 60 * 60 * 1000;

/**
 * When the months of a monitoring window fall: `markAt(startsAt, k)` is the k-th monthly refresh,
 * the window ending at the last. Calendar months in UTC (the 31st of January's next mark is the
 * last day of February), or the sandbox's fixed interval (SANDBOX_REFRESH_INTERVAL_MS).
 */
export interface MonitoringSchedule {
  markAt(startsAt: string, k: number): Date;
  /** The waits before each retry of a refresh that failed; their number is the retries. */
  retryDelaysMs: readonly number[];
}

const HOUR_MS = 60 * 60 * 1000;

export function monitoringSchedule(sandboxIntervalMs: number | null): MonitoringSchedule {
  if (sandboxIntervalMs !== null) {
    return {
      markAt: (startsAt, k) => new Date(new Date(startsAt).getTime() + k * sandboxIntervalMs),
      // Each retry a tenth of the sandbox's month: every branch can be seen well within one.
      retryDelaysMs: [sandboxIntervalMs / 10, sandboxIntervalMs / 10, sandboxIntervalMs / 10].map(Math.round),
    };
  }
  return {
    markAt: (startsAt, k) => addMonths(new Date(startsAt), k),
    // A provider's bad hour, a bad morning, a bad day; then the next month's refresh.
    retryDelaysMs: [HOUR_MS, 6 * HOUR_MS, 24 * HOUR_MS],
  };
}

/** `date` plus `months` calendar months in UTC, the day kept or, in a shorter month, its last day. */
function addMonths(date: Date, months: number): Date {
  const target = new Date(date.getTime());
  const day = target.getUTCDate();
  target.setUTCDate(1);
  target.setUTCMonth(target.getUTCMonth() + months);
  const lastDay = new Date(Date.UTC(target.getUTCFullYear(), target.getUTCMonth() + 1, 0)).getUTCDate();
  target.setUTCDate(Math.min(day, lastDay));
  return target;
}

/** Monitoring as it starts with the first tape: active, its window and its first monthly refresh. */
export function startedMonitoring(monitoring: MonitoringRecord, at: string, schedule: MonitoringSchedule): MonitoringRecord {
  return {
    ...monitoring,
    state: 'active',
    startsAt: at,
    endsAt: schedule.markAt(at, monitoring.months).toISOString(),
    nextRefreshAt: schedule.markAt(at, 1).toISOString(),
  };
}

/** Monitoring ended for `reason`: nothing scheduled or waiting any more. */
export function endedMonitoring(monitoring: MonitoringRecord, reason: MonitoringEndReason): MonitoringRecord {
  return { ...monitoring, state: 'ended', endReason: reason, nextRefreshAt: null, refreshRequestedAt: null };
}

export function toMonitoringResource(monitoring: MonitoringRecord): MonitoringResource {
  return {
    months: monitoring.months,
    state: monitoring.state,
    end_reason: monitoring.endReason,
    starts_at: monitoring.startsAt,
    ends_at: monitoring.endsAt,
    last_refresh_at: monitoring.lastRefreshAt,
    next_refresh_at: monitoring.nextRefreshAt,
    refresh_requested_at: monitoring.refreshRequestedAt,
    failed_refreshes: monitoring.failedRefreshes,
  };
}

export type TapeChanges = NonNullable<EventBody<'tape.updated'>['changes']>;

/** What a reader acts on, before and after a tape changed (tape.updated's `changes`). */
export function tapeChanges(before: RiskTape200, after: RiskTape200): TapeChanges {
  return {
    tier: { before: before.eligibility.tier, after: after.eligibility.tier },
    max_advance_eur: { before: before.eligibility.max_advance_eur, after: after.eligibility.max_advance_eur },
    income_trend: { before: before.eligibility.income_trend ?? null, after: after.eligibility.income_trend ?? null },
  };
}
