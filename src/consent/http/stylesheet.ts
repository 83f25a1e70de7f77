import type { RequestHandler } from 'express';
import { CONSENT_CSS } from '../pages.ts';

export function stylesheet(): RequestHandler {
  return (_req, res) => {
    res.setHeader('Cache-Control', 'public, max-age=3600');
    res.type('text/css').send(CONSENT_CSS);
  };
}
