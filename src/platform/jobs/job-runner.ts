import { randomUUID } from 'node:crypto';
import type { Clock } from '../clock.ts';
import { isDatabaseUnavailable } from '../db/database.ts';
import type { Logger } from '../logger.ts';
import { jobsRun } from '../metrics/metrics.ts';
import type { Job, JobQueue, RunnableJobHandlers } from './job-queue.ts';

export interface JobRunnerOptions {
  batchSize?: number;
  leaseMs?: number;
  maxAttempts?: number;
  /** Where a pass that failed because the database is down is reported, once per outage (database-outage-log.ts). */
  databaseOutage?: { absorbs(error: unknown): boolean } | null;
}

/** The longest wait between two attempts of a job that keeps failing because the database is down. */
const MAX_RETRY_DELAY_MS = 5 * 60_000;

/**
 * Runs due jobs. Handlers must be idempotent: a job can run again after a crash between its effect
 * and its completion (at-least-once), so each handler re-checks the state it acts on.
 */
export class JobRunner {
  readonly workerId = `worker-${randomUUID()}`;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<number> | undefined;

  constructor(
    private readonly queue: JobQueue,
    private readonly handlers: RunnableJobHandlers,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly options: JobRunnerOptions = {},
  ) {}

  /** Runs every job due now, batch after batch, and returns how many ran. Tests call this directly. */
  async runDue(): Promise<number> {
    let ran = 0;
    for (;;) {
      const jobs = await this.queue.claimDue(this.workerId, this.clock.now(), this.options.batchSize ?? 20, this.options.leaseMs ?? 60_000);
      if (jobs.length === 0) return ran;
      for (const job of jobs) {
        await this.runOne(job);
        ran++;
      }
    }
  }

  private async runOne(job: Job): Promise<void> {
    const handler = this.handlers[job.kind];
    try {
      if (!handler) throw new Error(`no handler for job kind ${job.kind}`);
      // The kind selected the handler, and its enqueuer wrote the payload that kind declares.
      await handler(job as never, this.clock.now());
      await this.queue.complete(job.id);
      jobsRun.labels(job.kind, 'done').inc();
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      // A job that failed because the database was down is not at fault and is never given up:
      // a refresh of ongoing monitoring given up would leave its monthly chain, and the end of its
      // window (with the revocation of the creator's grants), waiting for ever.
      const outage = isDatabaseUnavailable(error);
      const retry = outage || job.attempts < (this.options.maxAttempts ?? 5);
      const retryAt = retry ? new Date(this.clock.now().getTime() + Math.min(2 ** Math.min(job.attempts, 20) * 1000, MAX_RETRY_DELAY_MS)) : null;
      this.logger.error(
        { jobId: job.id, kind: job.kind, attempts: job.attempts, err: error },
        outage ? 'job failed: the database is unavailable; will retry' : retry ? 'job failed; will retry' : 'job failed for good',
      );
      await this.queue.fail(job.id, message, retryAt);
      jobsRun.labels(job.kind, retry ? 'retrying' : 'failed').inc();
    }
  }

  /** Polls until stopped; one pass at a time, so a slow pass never overlaps the next. */
  start(intervalMs: number): void {
    // Never rejects: a failed pass is logged here.
    const tick = async () => {
      try {
        this.running = this.runDue();
        await this.running;
      } catch (error) {
        if (!this.options.databaseOutage?.absorbs(error)) this.logger.warn({ err: error }, 'job pass failed');
      } finally {
        this.running = undefined;
        if (this.timer) this.timer = setTimeout(() => void tick(), intervalMs);
      }
    };
    this.timer = setTimeout(() => void tick(), 0);
  }

  async stop(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.running?.catch(() => undefined);
  }
}
