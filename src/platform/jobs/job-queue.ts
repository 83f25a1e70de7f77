import type { Knex } from 'knex';
import type { Dialect } from '../db/database.ts';

/** A job as claimed; its payload is what the feature that enqueued it wrote for that kind. */
export interface Job<Kind extends string = string, Payload extends object = object> {
  id: number;
  kind: Kind;
  subjectId: string;
  payload: Payload;
  runAt: string;
  attempts: number;
}

export interface NewJob<Kind extends string = string, Payload extends object = object> {
  kind: Kind;
  subjectId: string;
  runAt: Date;
  payload: Payload;
}

/**
 * A feature's job kinds with their handlers, keyed by kind: `Payloads` maps each kind to the payload
 * its enqueuer writes, so a handler reads typed fields instead of casting `job.payload.x`.
 */
export type JobHandlers<Payloads extends Record<string, object>> = {
  [Kind in keyof Payloads & string]: (job: Job<Kind, Payloads[Kind]>, now: Date) => Promise<void>;
};

/** Handlers of any features' kinds, as the runner holds them: which kind a job is is known only at run time. */
export type RunnableJobHandlers = Record<string, (job: never, now: Date) => Promise<void>>;

interface JobRow {
  id: number;
  kind: string;
  subject_id: string;
  payload: string;
  run_at: string;
  attempts: number;
}

const toJob = (row: JobRow): Job => ({
  id: row.id,
  kind: row.kind,
  subjectId: row.subject_id,
  payload: JSON.parse(row.payload) as object,
  runAt: row.run_at,
  attempts: row.attempts,
});

/**
 * Durable jobs in the service's own database, so they survive restarts and need no other server.
 * Claiming sets a lease: a job whose process died is claimed again once its lease ends. On
 * PostgreSQL `FOR UPDATE SKIP LOCKED` lets several processes claim from one table without ever
 * claiming the same job twice; SQLite serialises writers, so the plain update is already exclusive.
 */
export class JobQueue {
  constructor(
    private readonly knex: Knex,
    private readonly dialect: Dialect,
  ) {}

  /** Enqueue inside the caller's transaction, so a job exists exactly when the change that needs it commits. */
  async enqueue(trx: Knex, job: NewJob, createdAt: Date): Promise<void> {
    await trx('jobs').insert({
      kind: job.kind,
      subject_id: job.subjectId,
      payload: JSON.stringify(job.payload),
      run_at: job.runAt.toISOString(),
      status: 'pending',
      attempts: 0,
      created_at: createdAt.toISOString(),
    });
  }

  async claimDue(workerId: string, now: Date, limit: number, leaseMs: number): Promise<Job[]> {
    const at = now.toISOString();
    const lockedUntil = new Date(now.getTime() + leaseMs).toISOString();
    const skipLocked = this.dialect === 'postgres' ? 'for update skip locked' : '';
    // pg answers with a result object holding the rows; sqlite3 answers with the rows.
    const result = await this.knex.raw<{ rows: JobRow[] } | JobRow[]>(
      `update jobs set status = 'running', locked_by = ?, locked_until = ?, attempts = attempts + 1
       where id in (
         select id from jobs
         where run_at <= ? and (status = 'pending' or (status = 'running' and locked_until < ?))
         order by run_at, id limit ? ${skipLocked}
       )
       returning id, kind, subject_id, payload, run_at, attempts`,
      [workerId, lockedUntil, at, at, limit],
    );
    const claimed = this.dialect === 'postgres' ? (result as { rows: JobRow[] }).rows : (result as JobRow[]);
    return claimed.map(toJob).sort((a, b) => a.runAt.localeCompare(b.runAt) || a.id - b.id);
  }

  /** Cancels (deletes) the jobs not yet done about these subjects, in the caller's transaction; returns how many. */
  async cancelForSubjects(trx: Knex, subjectIds: string[]): Promise<number> {
    if (subjectIds.length === 0) return 0;
    const pending = await trx('jobs').whereIn('subject_id', subjectIds).whereIn('status', ['pending', 'running']).delete();
    // Finished jobs name the subject too; they go as well, but are not "pending work".
    await trx('jobs').whereIn('subject_id', subjectIds).delete();
    return pending;
  }

  async complete(jobId: number): Promise<void> {
    await this.knex('jobs').where({ id: jobId }).update({ status: 'done', locked_by: null, locked_until: null });
  }

  /** Puts the job back for another attempt at `retryAt`, or marks it failed when there is none. */
  async fail(jobId: number, error: string, retryAt: Date | null): Promise<void> {
    await this.knex('jobs')
      .where({ id: jobId })
      .update(
        retryAt
          ? { status: 'pending', run_at: retryAt.toISOString(), locked_by: null, locked_until: null, last_error: error.slice(0, 2000) }
          : { status: 'failed', locked_by: null, locked_until: null, last_error: error.slice(0, 2000) },
      );
  }

  /** Per kind: jobs pending or running, and how long ago the oldest pending one became due (metrics). */
  async stats(now: Date): Promise<Array<{ kind: string; queued: number; lagSeconds: number }>> {
    const rows = await this.knex('jobs')
      .whereIn('status', ['pending', 'running'])
      .groupBy('kind')
      .select('kind', this.knex.raw("min(case when status = 'pending' and run_at <= ? then run_at end) as oldest_due", [now.toISOString()]))
      .count({ n: '*' });
    return (rows as Array<{ kind: string; oldest_due: string | null; n: number | string }>).map((row) => ({
      kind: row.kind,
      queued: Number(row.n),
      lagSeconds: row.oldest_due ? Math.max(0, (now.getTime() - Date.parse(row.oldest_due)) / 1000) : 0,
    }));
  }

  async pendingCount(): Promise<number> {
    const row = await this.knex('jobs').whereIn('status', ['pending', 'running']).count({ n: '*' }).first();
    return Number((row as { n: number | string }).n);
  }
}
