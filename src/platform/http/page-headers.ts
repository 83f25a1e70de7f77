import type { Response } from 'express';

/**
 * Strict headers for a page: nothing from other origins, no scripts, no framing. `formTargets`
 * lists where forms may post (and redirect after posting); `referrer` is `no-referrer` where a
 * URL carries a secret (a consent token).
 */
export function securePage(res: Response, options: { formTargets: string; referrer: 'no-referrer' | 'same-origin'; vary: string }): Response {
  res.setHeader(
    'Content-Security-Policy',
    `default-src 'none'; style-src 'self'; img-src 'self'; form-action ${options.formTargets}; frame-ancestors 'none'; base-uri 'none'`,
  );
  res.setHeader('X-Frame-Options', 'DENY');
  res.setHeader('Referrer-Policy', options.referrer);
  res.setHeader('Cross-Origin-Opener-Policy', 'same-origin');
  res.setHeader('Cross-Origin-Resource-Policy', 'same-origin');
  res.setHeader('Permissions-Policy', 'camera=(), microphone=(), geolocation=(), payment=()');
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('Vary', options.vary);
  return res;
}

/**
 * For pages that run their own scripts (the API docs' Swagger UI), where securePage's policy would
 * stop them: at least no other site may frame them (clickjacking), as no other page may be framed.
 */
export function unframed(res: Response): Response {
  res.setHeader('Content-Security-Policy', "frame-ancestors 'none'; base-uri 'none'; object-src 'none'");
  res.setHeader('X-Frame-Options', 'DENY');
  return res;
}
