import { randomUUID } from 'node:crypto';
import PQueue from 'p-queue';
import { request, type Dispatcher } from 'undici';
import { keptDecryption } from '../platform/crypto.ts';
import type { Clock } from '../platform/clock.ts';
import type { Logger } from '../platform/logger.ts';
import { webhookAttempts, webhookDeferrals } from '../platform/metrics/metrics.ts';
import { signingSecrets } from './endpoints.ts';
import { signWebhookBodyWith } from './verify-signature.ts';
import type { AttemptRecord, Deferral, DueDelivery, WebhookEndpoint, WebhooksRepository } from './webhooks-repository.ts';

export interface DeliveryWorkerOptions {
  webhooks: WebhooksRepository;
  encryptionKey: Buffer;
  /** Seconds after the first attempt at which each attempt happens (D14), e.g. [0, 60, 300, 1800, 7200]. */
  scheduleSeconds: number[];
  /** A receiver that has not answered by then counts as failed (6.2: 10 seconds). */
  timeoutMs: number;
  /** Connects only to addresses the target guard accepts, checked at each delivery (D16). */
  dispatcher: Dispatcher;
  clock: Clock;
  logger: Logger;
  batchSize?: number;
  /** Deliveries in flight to one receiver origin at most, per process; default CONNECTIONS_PER_ORIGIN. */
  connectionsPerOrigin?: number;
  /** Where a pass that failed because the database is down is reported, once per outage (platform/db/database-outage-log.ts). */
  databaseOutage?: { absorbs(error: unknown): boolean } | null;
}

const USER_AGENT = 'CreatorIncomeVerification-Webhooks/1.0';
const MAX_PASSES = 4;
/**
 * With no bound, every delivery in flight that found the origin's connections busy opened one more:
 * 130-230 TLS handshakes per 3,000 deliveries to one receiver, a tenth of the main thread. With at
 * most this many in flight, the agent reuses as many kept-alive connections. The bound is kept here,
 * not in undici's pool: a request queued there heeds its abort signal only once it has a
 * connection, so its wait could not be bounded or told apart from the receiver's time.
 */
const CONNECTIONS_PER_ORIGIN = 32;

/** A claimed delivery that waited its whole turn for a connection to its origin and was not sent. */
interface NotSent {
  deferredId: string;
  webhookId: string;
}

/**
 * Sends due webhook deliveries: signed POSTs of the event's exact stored bytes, any 2xx
 * acknowledges, anything else retries on the schedule until the last attempt fails the delivery.
 */
export class DeliveryWorker {
  readonly workerId = `deliveries-${randomUUID()}`;
  private timer: NodeJS.Timeout | undefined;
  private readonly passes = new Set<Promise<void>>();
  private again = false;
  private stopped = true;
  private pollMs = 1000;
  /** Opens the endpoints' signing secrets, each once: the same few sign every delivery. */
  private readonly openSecret: (secretCiphertext: string) => string;
  /** Each receiver origin's deliveries in flight and waiting for one of its connections. */
  private readonly turnsByOrigin = new Map<string, PQueue>();
  /** The waits for a connection under way, each ended by `stop()`: it sends nothing more. */
  private readonly waiting = new Set<AbortController>();
  /** Set by `stop()`: passes claim nothing more, and what they hold is handed back unsent. */
  private halting = false;
  private claims = 0;

  constructor(private readonly options: DeliveryWorkerOptions) {
    this.openSecret = keptDecryption(options.encryptionKey, 1_000);
  }

  /** Sends everything due now, batch after batch; returns how many attempts were made. */
  async runDue(): Promise<number> {
    let attempts = 0;
    // The batch before's attempts, being recorded while the next batch is claimed and sent: their
    // transaction waits for SQLite's writer behind the creations queued there, and new deliveries
    // waited for it. One recording at a time; the deliveries it records stay claimed until then.
    let recording: Promise<void> | null = null;
    try {
      for (;;) {
        if (this.halting) return attempts;
        // Longer than any attempt can take (its wait for a connection, then the receiver's time); a
        // delivery whose sender died is claimed again after it.
        const lease = 2 * this.options.timeoutMs + 5_000;
        const claimedAt = performance.now();
        // Each claim its own claimant: one that outlived its lease and was claimed again, even by
        // another pass of this process, cannot record over the claim that holds it now.
        const claimant = `${this.workerId}/${++this.claims}`;
        const due = await this.options.webhooks.claimDue(claimant, this.options.clock.now(), this.options.batchSize ?? 200, lease);
        if (due.length === 0) {
          if (!recording) return attempts;
          // What the recording frees is due now too: a later event of a verification to an
          // endpoint waits until the one before it is no longer being sent.
          await recording;
          recording = null;
          continue;
        }
        const results = await Promise.all(due.map((delivery) => this.attemptInTurn(delivery, claimedAt)));
        const records: AttemptRecord[] = [];
        const notSent: NotSent[] = [];
        for (const result of results)
          if ('deferredId' in result) notSent.push(result);
          else records.push(result);
        const deferral = this.deferralOf(notSent);
        // A failed recording ends the pass, but only once this batch, sent already, is recorded too:
        // unrecorded, its deliveries would be sent again when their lease ran out.
        const failed = recording
          ? await recording.then(
              () => null,
              (error: unknown) => ({ error }),
            )
          : null;
        // One transaction records the whole batch: on SQLite's single writer that is what keeps up.
        recording = this.options.webhooks.recordAttempts(claimant, records, deferral);
        // Awaited in turn (or below); until then its failure must not count as unhandled.
        recording.catch(() => undefined);
        attempts += records.length;
        if (failed) throw failed.error;
      }
    } finally {
      if (recording) await recording;
    }
  }

  /**
   * The attempt once one of the origin's connections is free; not sent, and no attempt spent, if
   * none is within the receiver's timeout: a slow receiver's backlog then waits in the database,
   * behind other receivers' deliveries, instead of in this process past its lease.
   */
  private attemptInTurn(delivery: DueDelivery, claimedAt: number): Promise<AttemptRecord | NotSent> {
    const origin = URL.parse(delivery.url)?.origin ?? delivery.url;
    let turns = this.turnsByOrigin.get(origin);
    if (!turns) {
      turns = new PQueue({ concurrency: this.options.connectionsPerOrigin ?? CONNECTIONS_PER_ORIGIN });
      const idle = turns;
      turns.on('idle', () => {
        if (this.turnsByOrigin.get(origin) === idle && idle.size === 0 && idle.pending === 0) this.turnsByOrigin.delete(origin);
      });
      this.turnsByOrigin.set(origin, turns);
    }
    const gaveUp = new AbortController();
    // Counted from the claim, whose lease began before its wait for the database.
    const waitBound = setTimeout(() => gaveUp.abort(), Math.max(0, claimedAt + this.options.timeoutMs - performance.now()));
    // Stopping sends nothing more: what still waits goes back to the database for any process.
    this.waiting.add(gaveUp);
    if (this.halting) gaveUp.abort();
    return turns
      .add(
        async () => {
          // Sent from here on: only the receiver's timeout applies.
          clearTimeout(waitBound);
          this.waiting.delete(gaveUp);
          const record = await this.attempt(delivery);
          // undici hands the connection back to its pool a tick after the answer's end; the next
          // delivery started before that would open one more.
          await new Promise((resolve) => setImmediate(resolve));
          return record;
        },
        { signal: gaveUp.signal },
      )
      .catch((error: unknown) => {
        clearTimeout(waitBound);
        this.waiting.delete(gaveUp);
        if (gaveUp.signal.aborted) return { deferredId: delivery.id, webhookId: delivery.webhookId };
        throw error;
      });
  }

  private deferralOf(notSent: NotSent[]): Deferral {
    const deliveryIds = notSent.map((result) => result.deferredId);
    // Put off by a receiver that kept its connections busy; due at once if this process is stopping.
    const until = new Date(this.options.clock.now().getTime() + (this.halting ? 0 : this.options.timeoutMs)).toISOString();
    if (deliveryIds.length > 0) {
      // Stopping is not the receiver's doing: only a receiver's busy connections count.
      if (!this.halting) webhookDeferrals.inc(deliveryIds.length);
      this.options.logger.warn(
        { deferred: deliveryIds.length, webhookIds: [...new Set(notSent.map((result) => result.webhookId))], until },
        this.halting
          ? 'webhook deliveries handed back unsent: the sender is stopping'
          : 'webhook deliveries deferred: their receiver kept every connection busy',
      );
    }
    return { deliveryIds, until };
  }

  private async attempt(delivery: DueDelivery): Promise<AttemptRecord> {
    const { clock, logger, scheduleSeconds } = this.options;
    const attemptedAt = clock.now();
    const attemptNumber = delivery.attempts + 1;
    const { statusCode, durationMs, error, responseSnippet } = await this.post(delivery, delivery.body, delivery.eventName, delivery.id, attemptedAt);
    const succeeded = statusCode !== null && statusCode >= 200 && statusCode < 300;
    const firstAttemptAt = delivery.firstAttemptAt ?? attemptedAt.toISOString();
    const nextOffset = scheduleSeconds[attemptNumber];
    const outcome = succeeded
      ? { status: 'succeeded' as const, firstAttemptAt, nextAttemptAt: null }
      : nextOffset === undefined
        ? { status: 'failed' as const, firstAttemptAt, nextAttemptAt: null }
        : {
            status: 'pending' as const,
            firstAttemptAt,
            nextAttemptAt: new Date(Math.max(clock.now().getTime(), new Date(firstAttemptAt).getTime() + nextOffset * 1000)).toISOString(),
          };
    webhookAttempts.labels(succeeded ? 'delivered' : outcome.status === 'failed' ? 'failed' : 'retrying').observe(durationMs / 1000);
    const fields = { deliveryId: delivery.id, webhookId: delivery.webhookId, event: delivery.eventName, attempt: attemptNumber, statusCode, durationMs, error };
    if (succeeded) logger.debug(fields, 'webhook delivered');
    else
      logger.warn(
        { ...fields, outcome: outcome.status },
        outcome.status === 'failed' ? 'webhook delivery failed for good' : 'webhook delivery failed; will retry',
      );
    return {
      deliveryId: delivery.id,
      attempt: { attempt: attemptNumber, attemptedAt: attemptedAt.toISOString(), statusCode, durationMs, error, responseSnippet },
      outcome,
    };
  }

  /**
   * One signed POST of `body` to the endpoint, as every attempt sends it (headers, signatures of a
   * rotation's overlap, the target guard, the timeout); what the receiver answered.
   */
  async post(
    endpoint: Pick<WebhookEndpoint, 'url' | 'secretCiphertext' | 'previousSecretCiphertext' | 'previousSecretExpiresAt'>,
    body: string,
    eventName: string,
    deliveryId: string,
    at: Date,
  ): Promise<{ statusCode: number | null; durationMs: number; error: string | null; responseSnippet: string | null }> {
    const started = performance.now();
    let statusCode: number | null = null;
    let error: string | null = null;
    let responseSnippet: string | null = null;
    try {
      const response = await request(endpoint.url, {
        method: 'POST',
        body,
        headers: {
          'content-type': 'application/json',
          'user-agent': USER_AGENT,
          'x-service-signature': signWebhookBodyWith(body, signingSecrets(this.openSecret, endpoint, at)),
          'x-service-event': eventName,
          'x-service-delivery': deliveryId,
        },
        dispatcher: this.options.dispatcher,
        signal: AbortSignal.timeout(this.options.timeoutMs),
      });
      statusCode = response.statusCode;
      // Redirects are not followed: a redirect could lead to an address the guard never checked.
      responseSnippet = await snippetOf(response.body);
    } catch (caught) {
      error = describe(caught);
    }
    return { statusCode, durationMs: Math.round(performance.now() - started), error, responseSnippet };
  }

  /**
   * Runs a pass now (after a commit that created deliveries) instead of at the next poll. Up to
   * MAX_PASSES passes overlap, so new deliveries are sent while an earlier batch waits for slow
   * receivers; they never take the same delivery, and the claim keeps each verification's order.
   */
  wake(): void {
    if (this.stopped) return;
    if (this.passes.size >= MAX_PASSES) {
      this.again = true;
      return;
    }
    clearTimeout(this.timer);
    const pass: Promise<void> = this.runDue()
      .then(() => undefined)
      .catch((error) => {
        if (!this.options.databaseOutage?.absorbs(error)) this.options.logger.warn({ err: error }, 'webhook delivery pass failed');
      })
      .finally(() => {
        this.passes.delete(pass);
        if (this.stopped) return;
        if (this.again) {
          this.again = false;
          this.wake();
        } else if (this.passes.size === 0) {
          this.timer = setTimeout(() => this.wake(), this.pollMs);
        }
      });
    this.passes.add(pass);
  }

  /** Polls for deliveries due by their schedule or left by another process; wakes early on new ones. */
  start(pollMs: number): void {
    this.pollMs = pollMs;
    this.stopped = false;
    this.halting = false;
    this.wake();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.halting = true;
    for (const wait of this.waiting) wait.abort();
    await Promise.all(this.passes);
  }
}

/** What of a receiver's answer is kept: its start, as text, for the delivery log. */
export const SNIPPET_CHARS = 300;
/** Beyond this much of an answer the connection is dropped rather than read (undici's dump limit). */
const MAX_READ_BYTES = 128 * 1024;

/**
 * Reads the answer's start for the log and discards the rest, as `dump()` would: up to
 * MAX_READ_BYTES so the connection can be reused, past that the stream is destroyed.
 */
async function snippetOf(body: AsyncIterable<Buffer> & { destroy(): unknown }): Promise<string | null> {
  const kept: Buffer[] = [];
  let keptBytes = 0;
  let read = 0;
  for await (const chunk of body) {
    if (keptBytes < SNIPPET_CHARS * 4) {
      kept.push(chunk);
      keptBytes += chunk.length;
    }
    read += chunk.length;
    if (read > MAX_READ_BYTES) {
      body.destroy();
      break;
    }
  }
  // Control characters other than line feeds would only garble the log.
  const text = Buffer.concat(kept)
    .toString('utf8')
    .replace(/(?!\n)\p{Cc}/gu, '')
    .slice(0, SNIPPET_CHARS);
  return text === '' ? null : text;
}

function describe(error: unknown): string {
  const e = error as { name?: string; code?: string; message?: string; cause?: { code?: string; message?: string } };
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError') return 'timeout: no response in time';
  const detail = e?.cause?.message ?? e?.message ?? String(error);
  const code = e?.cause?.code ?? e?.code;
  return (code ? `${code}: ${detail}` : detail).slice(0, 500);
}
