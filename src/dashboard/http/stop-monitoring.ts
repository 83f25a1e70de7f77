import type { Request, RequestHandler, Response } from 'express';
import { DomainError } from '../../platform/domain-error.ts';
import { stopMonitoringPage } from '../pages.ts';
import { one, param, viewerOf, type Dashboard } from './context.ts';

// Stop monitoring (admins only) revokes the creator's grants for good, hence its confirmation step.

/** The confirmation step: a GET from the verification page's button, or a post that did not confirm. */
async function confirmStop({ deps, html }: Dashboard, req: Request, res: Response) {
  const viewer = viewerOf(res);
  const verification = await deps.lifecycle.findForLender(viewer.lender.id, param(req, 'id'));
  if (!verification) throw new DomainError('not_found', `There is no verification ${param(req, 'id')} in your account.`);
  if (!verification.monitoring)
    throw new DomainError('refused', `Verification ${verification.verification_id} was created without monitoring; there is nothing to stop.`);
  if (verification.monitoring.state === 'ended')
    return res.redirect(303, `/dashboard/verifications/${encodeURIComponent(verification.verification_id)}#monitoring`);
  return html(res, 200, stopMonitoringPage(viewer, verification));
}

export function stopMonitoringConfirm(dashboard: Dashboard): RequestHandler {
  return (req, res) => confirmStop(dashboard, req, res);
}

export function stopMonitoringSubmit(dashboard: Dashboard): RequestHandler {
  const { deps } = dashboard;
  return async (req, res) => {
    if (one((req.body as Record<string, unknown>).confirm) !== 'yes') return confirmStop(dashboard, req, res);
    const viewer = viewerOf(res);
    const verification = await deps.lifecycle.stopMonitoring(viewer.lender.id, param(req, 'id'));
    deps.logger.info({ dashboardUser: viewer.user.id, verificationId: verification.verification_id }, 'dashboard: monitoring stopped');
    return res.redirect(303, `/dashboard/verifications/${encodeURIComponent(verification.verification_id)}?notice=monitoring_stopped#monitoring`);
  };
}
