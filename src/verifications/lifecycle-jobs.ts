/**
 * The lifecycle's durable jobs: each kind with the payload its enqueuer writes. Handlers re-check the
 * state they act on, so a job that runs twice (at-least-once delivery) is harmless. The kinds are
 * stored in the database: renaming one strands the jobs already queued under the old name.
 */
export type LifecycleJobPayloads = {
  /** The 7-day consent session ended (section 3). */
  'verification.expire_consent': Record<string, never>;
  /** One step of a sandbox `test-` scenario (D11). */
  'verification.sandbox_step': { step: number; lenderId: string };
  /** Consent given: fetch the income and score it. */
  'verification.collect_income': { lenderId: string };
  /** D18: collection must finish within the processing window. */
  'verification.processing_window': Record<string, never>;
  /**
   * P33: read a monitored creator's income again. `mark` is the monthly refresh's number (null: one
   * asked for on demand); `due` is the monitoring's `next_refresh_at` (or `refresh_requested_at`)
   * the job was scheduled for, so a job that a later change made stale does nothing.
   */
  'verification.refresh': { mark: number | null; attempt: number; due: string };
};

export type LifecycleJobKind = keyof LifecycleJobPayloads;
