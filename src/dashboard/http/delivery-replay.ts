import type { RequestHandler } from 'express';
import { replayDelivery } from '../../webhooks/deliveries.ts';
import { param, viewerOf, type Dashboard } from './context.ts';

/** A delivery of the endpoint's log queued again; the delivery worker is woken to send it. */
export function deliveryReplay({ deps }: Dashboard): RequestHandler {
  return async (req, res) => {
    const replayDeps = { webhooks: deps.webhooks.webhooks, now: deps.webhooks.now, wake: deps.webhooks.wakeDeliveries };
    await replayDelivery(replayDeps, viewerOf(res).lender.id, param(req, 'id'), param(req, 'deliveryId'));
    return res.redirect(303, `/dashboard/webhooks/${encodeURIComponent(param(req, 'id'))}?notice=replayed`);
  };
}
