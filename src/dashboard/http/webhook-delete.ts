import type { RequestHandler } from 'express';
import { removeWebhook } from '../../webhooks/endpoints.ts';
import { param, viewerOf, type Dashboard } from './context.ts';

export function webhookDelete({ deps }: Dashboard): RequestHandler {
  return async (req, res) => {
    await removeWebhook(deps.webhooks, viewerOf(res).lender.id, param(req, 'id'));
    return res.redirect(303, '/dashboard/webhooks?notice=deleted');
  };
}
