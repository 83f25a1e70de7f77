import ipaddr from 'ipaddr.js';

// The origins a lender's `return_url`s may lead to (POST /verifications). A creator's page links
// only to a URL whose origin the lender registered, so a link can never be turned into an open
// redirect by whoever holds an API key of the lender, nor by a tampered request.

/** Most origins one lender registers: a registration that needs more is a mistake. */
const MAX_RETURN_ORIGINS = 20;

/** Whether a URL's host is this machine: the one place `http` is allowed (a lender's app in development). */
function isLoopback(hostname: string): boolean {
  if (hostname === 'localhost') return true;
  const bare = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
  return ipaddr.isValid(bare) && ipaddr.process(bare).range() === 'loopback';
}

/** Why `url` is no return URL or origin, or null when it is well formed. */
function refusal(url: URL): string | null {
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopback(url.hostname))) {
    return 'must be https (http only on localhost or a loopback address)';
  }
  if (url.username !== '' || url.password !== '') return 'must not carry a user name or password';
  if (url.hash !== '') return 'must not carry a fragment';
  return null;
}

/** Parses registered origins (`https://app.example` or with a port), blank entries left out; throws with the offending entry. */
export function parseReturnOrigins(entries: readonly string[]): string[] {
  const origins = entries
    .filter((entry) => entry.trim() !== '')
    .map((entry) => {
      const text = entry.trim();
      let url: URL;
      try {
        url = new URL(text);
      } catch {
        throw new Error(`"${text}" is not an origin such as https://app.example`);
      }
      const why = refusal(url);
      if (why) throw new Error(`"${text}" ${why}`);
      if ((url.pathname !== '/' && url.pathname !== '') || url.search !== '' || text.endsWith('?')) {
        throw new Error(`"${text}" is not an origin: give scheme, host and port only, such as ${url.origin}`);
      }
      return url.origin;
    });
  const unique = [...new Set(origins)];
  if (unique.length > MAX_RETURN_ORIGINS) throw new Error(`at most ${MAX_RETURN_ORIGINS} origins`);
  return unique;
}

/**
 * Checks a creation's `return_url` against the lender's registered origins: the URL as it will be
 * linked (normalised by the URL parser), or why it is refused.
 */
export function checkReturnUrl(text: string, origins: readonly string[]): { url: string } | { refused: string } {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return { refused: 'must be an absolute URL' };
  }
  const why = refusal(url);
  if (why) return { refused: why };
  if (!origins.includes(url.origin)) {
    return { refused: `its origin ${url.origin} is not one this lender registered (lender set --return-origins, or the dashboard's Account page)` };
  }
  return { url: url.href };
}

/** The link a creator's page offers: the return URL with the verification and its outcome added to its query, nothing else. */
export function returnLink(returnUrl: string, verificationId: string, outcome: string): string {
  const url = new URL(returnUrl);
  url.searchParams.set('verification_id', verificationId);
  url.searchParams.set('outcome', outcome);
  return url.href;
}
