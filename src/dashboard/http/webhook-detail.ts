import type { Request, RequestHandler, Response } from 'express';
import { listEndpointDeliveries } from '../../webhooks/deliveries.ts';
import { getWebhook } from '../../webhooks/endpoints.ts';
import { webhookPage } from '../pages.ts';
import { noticeOf, one, param, viewerOf, type Dashboard } from './context.ts';
import { SUBSCRIBABLE } from './webhook-list.ts';

/** The endpoint's page with its delivery log, shown by its GET and as the answer of its secret and test forms. */
export async function showWebhook(
  { deps, html }: Dashboard,
  req: Request,
  res: Response,
  status: number,
  extra: Partial<Parameters<typeof webhookPage>[1]> = {},
) {
  const viewer = viewerOf(res);
  const id = param(req, 'id');
  const webhook = await getWebhook(deps.webhooks, viewer.lender.id, id);
  const log = await listEndpointDeliveries(deps.webhooks, viewer.lender.id, id, {
    starting_after: req.method === 'GET' ? one(req.query.starting_after) : undefined,
  });
  return html(
    res,
    status,
    webhookPage(viewer, {
      webhook,
      deliveries: log.deliveries,
      hasMore: log.hasMore,
      events: SUBSCRIBABLE,
      notice: noticeOf(req),
      ...extra,
    }),
  );
}

export function webhookDetail(dashboard: Dashboard): RequestHandler {
  return (req, res) => showWebhook(dashboard, req, res, 200);
}
