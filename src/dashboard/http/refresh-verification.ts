import type { RequestHandler } from 'express';
import { DomainError } from '../../platform/domain-error.ts';
import { param, STATUS_OF_DOMAIN_ERROR, viewerOf, type Dashboard } from './context.ts';
import { showVerification } from './verification-detail.ts';

/** How the page leads a refused Refresh now; the lifecycle's own message says the particulars. */
const REFRESH_REFUSED: Partial<Record<DomainError['kind'], string>> = {
  refused: 'Not refreshed: only active monitoring is refreshed.',
  conflict: 'Not refreshed: a refresh is already waiting to run.',
};

/**
 * Refresh now (admins only): it reads the creator's income again and uses the one refresh a day on
 * demand. A refusal is shown on the verification's page, which says what the monitoring is.
 */
export function refreshVerification(dashboard: Dashboard): RequestHandler {
  const { deps } = dashboard;
  return async (req, res) => {
    const viewer = viewerOf(res);
    const id = param(req, 'id');
    try {
      await deps.lifecycle.requestRefresh(viewer.lender.id, id);
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      if (error.kind === 'too_soon') {
        const seconds = error.retryAfterSeconds ?? 1;
        res.setHeader('Retry-After', String(seconds));
        const next = new Date(deps.users.now().getTime() + seconds * 1000).toISOString();
        const message = `Not refreshed: Refresh now works once a day. The next is possible from ${next.slice(0, 16).replace('T', ' ')} UTC.`;
        return showVerification(dashboard, req, res, 429, { error: message });
      }
      const lead = REFRESH_REFUSED[error.kind];
      if (!lead) throw error;
      return showVerification(dashboard, req, res, STATUS_OF_DOMAIN_ERROR[error.kind], { error: `${lead} ${error.message}` });
    }
    deps.logger.info({ dashboardUser: viewer.user.id, verificationId: id }, 'dashboard: monitoring refresh requested');
    return res.redirect(303, `/dashboard/verifications/${encodeURIComponent(id)}?notice=refresh_requested#monitoring`);
  };
}
