import type { RequestHandler } from 'express';
import { DomainError } from '../../platform/domain-error.ts';
import { revealWebhookSecret, rotateWebhookSecret } from '../../webhooks/endpoints.ts';
import { one, param, viewerOf, type Dashboard } from './context.ts';
import { showWebhook } from './webhook-detail.ts';

export function webhookSecretReveal(dashboard: Dashboard): RequestHandler {
  const { deps } = dashboard;
  return async (req, res) => {
    const { secret } = await revealWebhookSecret(deps.webhooks, viewerOf(res).lender.id, param(req, 'id'));
    deps.logger.info({ dashboardUser: viewerOf(res).user.id, webhookId: param(req, 'id') }, 'dashboard: webhook secret shown');
    return showWebhook(dashboard, req, res, 200, {
      secret: { label: 'The current signing secret. Receivers verify X-Service-Signature with it.', value: secret },
    });
  };
}

export function webhookSecretRotate(dashboard: Dashboard): RequestHandler {
  const { deps } = dashboard;
  return async (req, res) => {
    const overlap = one((req.body as Record<string, unknown>).overlap_seconds) ?? '86400';
    if (!/^(0|3600|86400|604800)$/.test(overlap)) throw new DomainError('invalid', 'Choose one of the offered overlaps.');
    const rotated = await rotateWebhookSecret(deps.webhooks, viewerOf(res).lender.id, param(req, 'id'), Number(overlap));
    deps.logger.info({ dashboardUser: viewerOf(res).user.id, webhookId: param(req, 'id') }, 'dashboard: webhook secret rotated');
    const until = rotated.previous_secret_expires_at
      ? `The previous secret keeps signing beside it until ${rotated.previous_secret_expires_at}.`
      : 'The previous secret no longer signs.';
    return showWebhook(dashboard, req, res, 200, { secret: { label: `The new signing secret. ${until}`, value: rotated.secret } });
  };
}
