// Shared by the rate limiter (platform/http) and the statement that counts a request with its key's
// lookup (accounts/), which must not import HTTP code.

/**
 * One request's count in both windows, written by a single statement elsewhere (accounts/: with the
 * key's principal, on PostgreSQL) into rate-limiter-flexible's table (key, points, expire), so that
 * `usage()` and every other process read the same counters.
 */
export interface WindowCounts {
  /** The rows' keys, as rate-limiter-flexible names them. */
  burstKey: string;
  minuteKey: string;
  /** The expiry a window starting now gets, in ms since the epoch (the table's unit). */
  burstExpiresAt: number;
  minuteExpiresAt: number;
  now: number;
  /** Over this, the burst window refuses and the minute window is not counted. */
  burst: number;
}

/** What the single statement found after counting; when the burst window refused, the minute's points are its count so far. */
export interface CountedWindows {
  burstPoints: number;
  burstExpiresAt: number;
  minutePoints: number;
  minuteExpiresAt: number | null;
}
