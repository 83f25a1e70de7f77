import PQueue from 'p-queue';

/**
 * How many sign-in password checks run at once, and how many may wait for a turn. Each check is a
 * scrypt run of 32 MiB and tens of milliseconds on one of libuv's four threads, which the rest of
 * the service shares; two at a time leave the others free, and a flood beyond the waiting places
 * is refused at once (the page says to try again) instead of queueing without bound.
 */
export const PASSWORD_CHECKS = { concurrency: 2, maxWaiting: 16 } as const;

export class PasswordChecks {
  private readonly queue: PQueue;

  constructor(readonly limits: { concurrency: number; maxWaiting: number } = PASSWORD_CHECKS) {
    this.queue = new PQueue({ concurrency: limits.concurrency });
  }

  /** Whether a check asked for now would get a place, running or waiting. */
  get hasRoom(): boolean {
    return this.queue.pending < this.limits.concurrency || this.queue.size < this.limits.maxWaiting;
  }

  /** Runs `check` in its turn; `busy` at once when every place is taken. */
  async run<T>(check: () => Promise<T>): Promise<T | 'busy'> {
    if (!this.hasRoom) return 'busy';
    return this.queue.add(check);
  }
}
