import type { RequestHandler } from 'express';
import { DASHBOARD_CSS } from '../pages.ts';

export function stylesheet(): RequestHandler {
  return (_req, res) => {
    res.setHeader('Cache-Control', 'public, max-age=3600');
    res.type('text/css').send(DASHBOARD_CSS);
  };
}
