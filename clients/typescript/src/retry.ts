/**
 * The retry rules of the service description (section 7): 400, 401, 403, 404, 409 and 422 are never
 * retried; 429 waits the seconds of `Retry-After`; 500 is retried once after 5 seconds; 503 backs off
 * 1, 2, then 4 seconds (the table's "at most 3 retries" bounds its 1-2-4-8 sequence, so the 8 s step
 * is never reached). Other statuses and network errors are not retried.
 */
export interface RetryOptions {
  /** How a delay is waited; tests pass one that records instead of sleeping. */
  sleep?: (ms: number) => Promise<void>;
  /** At most this many retries of a 429 (default 3). */
  maxRateLimitRetries?: number;
}

export const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

const SERVER_ERROR_DELAY_MS = 5_000;
const UNAVAILABLE_DELAYS_MS = [1_000, 2_000, 4_000];

/** The delay before the next attempt, or null when the response is final. */
export function retryDelayMs(
  response: Response,
  retriesSoFar: { rateLimited: number; serverError: number; unavailable: number },
  maxRateLimitRetries = 3,
): number | null {
  switch (response.status) {
    case 429: {
      if (retriesSoFar.rateLimited >= maxRateLimitRetries) return null;
      const seconds = Number(response.headers.get('retry-after'));
      return Number.isFinite(seconds) && seconds >= 0 ? seconds * 1000 : 1_000;
    }
    case 500:
      return retriesSoFar.serverError >= 1 ? null : SERVER_ERROR_DELAY_MS;
    case 503:
      return UNAVAILABLE_DELAYS_MS[retriesSoFar.unavailable] ?? null;
    default:
      return null;
  }
}

/** A fetch that retries by the table above; the request is cloned for each attempt, so its body can be sent again. */
export function retryingFetch(baseFetch: (request: Request) => Promise<Response>, options: RetryOptions = {}): (request: Request) => Promise<Response> {
  const sleep = options.sleep ?? defaultSleep;
  return async (request) => {
    const counts = { rateLimited: 0, serverError: 0, unavailable: 0 };
    for (;;) {
      const response = await baseFetch(request.clone());
      const delay = retryDelayMs(response, counts, options.maxRateLimitRetries);
      if (delay === null) return response;
      if (response.status === 429) counts.rateLimited += 1;
      else if (response.status === 500) counts.serverError += 1;
      else counts.unavailable += 1;
      // The body of the refused attempt is not needed; free the connection before waiting.
      await response.body?.cancel();
      await sleep(delay);
    }
  };
}
