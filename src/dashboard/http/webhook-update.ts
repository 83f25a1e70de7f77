import type { RequestHandler } from 'express';
import { DomainError } from '../../platform/domain-error.ts';
import { updateWebhook } from '../../webhooks/endpoints.ts';
import { one, param, viewerOf, type Dashboard } from './context.ts';
import { eventsOf } from './webhook-list.ts';

/** The endpoint's URL and events changed; its secret and delivery log stay. */
export function webhookUpdate({ deps }: Dashboard): RequestHandler {
  return async (req, res) => {
    const body = req.body as Record<string, unknown>;
    const webhook = await updateWebhook(deps.webhooks, viewerOf(res).lender.id, param(req, 'id'), { url: one(body.url) ?? '', events: eventsOf(body) });
    deps.logger.info({ dashboardUser: viewerOf(res).user.id, webhookId: webhook.webhook_id }, 'dashboard: webhook endpoint changed');
    return res.redirect(303, `/dashboard/webhooks/${encodeURIComponent(webhook.webhook_id)}?notice=updated`);
  };
}

export function webhookEnabled({ deps }: Dashboard): RequestHandler {
  return async (req, res) => {
    const value = one((req.body as Record<string, unknown>).enabled);
    if (value !== 'true' && value !== 'false') throw new DomainError('invalid', 'Choose to enable or to disable the endpoint.');
    const webhook = await updateWebhook(deps.webhooks, viewerOf(res).lender.id, param(req, 'id'), { enabled: value === 'true' });
    deps.logger.info(
      { dashboardUser: viewerOf(res).user.id, webhookId: webhook.webhook_id, enabled: webhook.enabled },
      'dashboard: webhook endpoint enabled or disabled',
    );
    return res.redirect(303, `/dashboard/webhooks/${encodeURIComponent(webhook.webhook_id)}?notice=${webhook.enabled ? 'enabled' : 'disabled'}`);
  };
}
