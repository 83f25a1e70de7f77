import { posix } from 'node:path';

/**
 * Running the suite through a validating proxy (Stoplight Prism's `prism proxy`, see the README)
 * with `--direct-base-url`: the requests such a proxy cannot forward as sent go straight to the
 * deployment, so every test still tests the deployment and not the proxy. Prism (5.14) parses a
 * JSON body and forwards it re-serialised, answers a body it cannot parse itself (400
 * `invalid_json`), refuses a body on GET and HEAD, and rebuilds the path (normalised) and the query
 * (repeated parameters grouped), and its own HTTP server refuses a request head over 16 KB; these are exactly the requests whose bytes would change.
 */
/** Node's default `--max-http-header-size` (16 KB), which Prism's HTTP server keeps, less what fetch adds (host, user agent, ...). */
const PROXY_MAX_HEADER_BYTES = 16 * 1024 - 512;

export function whyNotThroughProxy(method: string, url: URL, headers: Record<string, string>, body: string | Uint8Array | undefined): string | undefined {
  const head = `${method} ${url.pathname}${url.search} HTTP/1.1\r\n`.length + Object.entries(headers).reduce((sum, [n, v]) => sum + n.length + v.length + 4, 0);
  if (head > PROXY_MAX_HEADER_BYTES) return "a request head over the proxy's own limit (it answers 431 itself)";
  if (url.pathname !== posix.normalize(url.pathname)) return 'a path the proxy would normalise';
  // The contract lists GET operations only; HEAD is HTTP's own GET without a body, which a
  // validating proxy knows no operation for and answers itself.
  if (method === 'HEAD') return 'a HEAD request (the contract lists its GET; the proxy answers HEAD itself)';
  const pairs = [...url.searchParams];
  const grouped = [...new Set(pairs.map(([name]) => name))].flatMap((name) => pairs.filter(([other]) => other === name));
  if (pairs.some((pair, i) => pair[0] !== grouped[i]![0] || pair[1] !== grouped[i]![1])) return 'repeated query parameters the proxy would regroup';
  if (body === undefined || body.length === 0) return undefined;
  if (method === 'GET' || method === 'HEAD') return `a body on ${method} (the proxy refuses to forward it)`;
  const contentType = headers['content-type'] ?? '';
  const charset = /;\s*charset="?([^";\s]+)/i.exec(contentType)?.[1];
  if (charset !== undefined && !/^utf-?8$/i.test(charset)) return `a body in charset ${charset} (the proxy re-encodes text)`;
  let text: string;
  try {
    text = typeof body === 'string' ? body : new TextDecoder('utf-8', { fatal: true }).decode(body);
  } catch {
    return 'a body that is not UTF-8 text (the proxy decodes bodies as text)';
  }
  if (!/^application\/(json|[^;\s]*\+json)\s*(;|$)/i.test(contentType.trim())) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return 'a body that is not the JSON its content type declares (the proxy answers 400 invalid_json itself)';
  }
  // What the proxy sends on: a JSON string's value as the body, nothing for a falsy value, the rest re-serialised.
  const forwarded = typeof parsed === 'string' ? parsed : parsed ? JSON.stringify(parsed) : undefined;
  return forwarded === text ? undefined : 'a JSON body the proxy would re-serialise differently';
}

export interface Bypass {
  test: string;
  request: string;
  reason: string;
}

/**
 * The requests this run sent around the proxy, with the test that sent each (the CLI sets
 * `currentTest` as tests start). Kept on the global object: mocha may load the test files (and so
 * this module) through require while the CLI imports it as ES module, which makes two instances.
 */
export const proxyRun: { bypasses: Bypass[]; currentTest: string } = ((globalThis as Record<symbol, unknown>)[Symbol.for('civ.conformance.proxyRun')] ??= {
  bypasses: [],
  currentTest: '(outside a test)',
}) as { bypasses: Bypass[]; currentTest: string };
