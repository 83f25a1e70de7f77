import type { RequestHandler } from 'express';
import { sendTestEvent } from '../../webhooks/endpoints.ts';
import { param, viewerOf, type Dashboard } from './context.ts';
import { showWebhook } from './webhook-detail.ts';

export function webhookTest(dashboard: Dashboard): RequestHandler {
  return async (req, res) => {
    const outcome = await sendTestEvent(dashboard.deps.webhooks, viewerOf(res).lender.id, param(req, 'id'));
    const answer = outcome.status_code === null ? `no answer (${outcome.error ?? 'unknown error'})` : `HTTP ${outcome.status_code}`;
    const test = `Test event ${outcome.event_id} ${outcome.succeeded ? 'was acknowledged' : 'was not acknowledged'}: ${answer} in ${outcome.duration_ms} ms.`;
    return showWebhook(dashboard, req, res, 200, { test });
  };
}
