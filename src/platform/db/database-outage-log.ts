import type { Knex } from 'knex';
import type { Logger } from '../logger.ts';

/**
 * One log line when the database stops answering and one when it answers again, however many
 * statements, connection attempts and background passes fail in between. Without it, an outage
 * printed Knex's own warnings (plain text with stack traces, through console.log) for every failed
 * connection attempt, about 500 lines in 15 s, and the job runner and the delivery worker each
 * logged every failed pass.
 */
export class DatabaseOutageLog {
  private since: number | null = null;
  private failures = 0;
  private readonly answered = () => this.recovered();
  /** The pools whose next successful statement ends an outage. */
  private pools: readonly Knex[] = [];

  constructor(
    private readonly logger: Logger,
    /** Whether an error says the database cannot answer (database.ts). */
    private readonly isUnavailable: (error: unknown) => boolean,
  ) {}

  /** Knex's `log` option is given before its pools exist; they are named here once they do. */
  watch(pools: readonly Knex[]): void {
    this.pools = pools;
  }

  /** A failure that says the database cannot answer: logged when it begins an outage, counted otherwise. */
  failed(detail: unknown): void {
    this.failures += 1;
    if (this.since !== null) return;
    this.since = Date.now();
    const err = detail instanceof Error ? detail : { message: String(detail).split('\n')[0] };
    this.logger.error({ err }, 'database unavailable: requests answer 503 until it answers again');
    // Listened for only during an outage, so that statements cost nothing more otherwise.
    for (const pool of this.pools) pool.once('query-response', this.answered);
  }

  /** Ends an outage, if one is going on, with how long it lasted and how many failures it held. */
  recovered(): void {
    if (this.since === null) return;
    const outageMs = Date.now() - this.since;
    const failures = this.failures;
    this.since = null;
    this.failures = 0;
    for (const pool of this.pools) pool.off('query-response', this.answered);
    this.logger.warn({ outageMs, failures }, 'database answering again');
  }

  /** True when `error` is the database not answering: part of the outage (logged once), not a line of its own. */
  absorbs(error: unknown): boolean {
    if (!this.isUnavailable(error)) return false;
    this.failed(error);
    return true;
  }

  get ongoing(): boolean {
    return this.since !== null;
  }

  /**
   * Knex's documented `log` option: its warnings about connections that failed or broke are part of
   * the outage; anything else it says goes to the service's log as JSON instead of to the console.
   */
  knexLog(): NonNullable<Knex.Config['log']> {
    const text = (message: unknown) => (typeof message === 'string' ? message : JSON.stringify(message));
    return {
      warn: (message: unknown) => {
        const line = text(message);
        if (/^(Acquire connection error|Connection Error):/.test(line)) this.failed(line);
        else this.logger.warn({ knex: line }, 'database client warning');
      },
      error: (message: unknown) => this.logger.error({ knex: text(message) }, 'database client error'),
      deprecate: (method: unknown, alternative: unknown) =>
        this.logger.warn({ knex: `${text(method)} is deprecated; use ${text(alternative)}` }, 'database client warning'),
      debug: (message: unknown) => this.logger.debug({ knex: text(message) }, 'database client'),
    };
  }
}
