import type { Request, RequestHandler, Response } from 'express';
import { DomainError } from '../../platform/domain-error.ts';
import { listWebhooks, registerWebhook } from '../../webhooks/endpoints.ts';
import { webhookListPage, type EventName } from '../pages.ts';
import { noticeOf, one, viewerOf, type Dashboard } from './context.ts';

/** The events an endpoint's form offers. */
export const SUBSCRIBABLE: readonly EventName[] = [
  'verification.completed',
  'verification.failed',
  'verification.expired',
  'verification.cancelled',
  'tape.updated',
];

/** The events ticked in a form, at least one. */
export const eventsOf = (body: Record<string, unknown>): EventName[] => {
  const events = (Array.isArray(body.events) ? body.events : [body.events]).filter((name): name is EventName => SUBSCRIBABLE.includes(name as EventName));
  if (events.length === 0) throw new DomainError('invalid', 'Choose at least one event.');
  return events;
};

async function showWebhookList(
  { deps, html }: Dashboard,
  req: Request,
  res: Response,
  status: number,
  extra: Partial<Parameters<typeof webhookListPage>[1]> = {},
) {
  const viewer = viewerOf(res);
  const list = await listWebhooks(deps.webhooks, viewer.lender.id, { starting_after: one(req.query.starting_after) });
  return html(res, status, webhookListPage(viewer, { data: list.data, hasMore: list.has_more, events: SUBSCRIBABLE, notice: noticeOf(req), ...extra }));
}

export function webhookList(dashboard: Dashboard): RequestHandler {
  return (req, res) => showWebhookList(dashboard, req, res, 200);
}

/** A new endpoint, answered by the list with the endpoint's secret, shown this once. */
export function webhookRegister(dashboard: Dashboard): RequestHandler {
  return async (req, res) => {
    const body = req.body as Record<string, unknown>;
    const events = eventsOf(body);
    const { secret, ...webhook } = await registerWebhook(dashboard.deps.webhooks, viewerOf(res).lender.id, { url: one(body.url) ?? '', events });
    return showWebhookList(dashboard, req, res, 201, { created: { webhook, secret } });
  };
}
