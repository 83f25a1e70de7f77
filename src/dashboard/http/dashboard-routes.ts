import express, { type Router } from 'express';
import { account } from './account.ts';
import { dashboardOf, type DashboardDeps } from './context.ts';
import { deliveryReplay } from './delivery-replay.ts';
import { adminOnly, refuseCrossSite, requireSession } from './guard.ts';
import { refreshVerification } from './refresh-verification.ts';
import { notFound, refusals } from './refusals.ts';
import { returnOriginsSave } from './return-origins.ts';
import { signInForm, signInSubmit } from './sign-in.ts';
import { signOutSubmit } from './sign-out.ts';
import { stopMonitoringConfirm, stopMonitoringSubmit } from './stop-monitoring.ts';
import { stylesheet } from './stylesheet.ts';
import { tapeDownload } from './tape-download.ts';
import { verificationDetail } from './verification-detail.ts';
import { home, verificationList } from './verification-list.ts';
import { webhookDetail } from './webhook-detail.ts';
import { webhookDelete } from './webhook-delete.ts';
import { webhookList, webhookRegister } from './webhook-list.ts';
import { webhookSecretReveal, webhookSecretRotate } from './webhook-secret.ts';
import { webhookTest } from './webhook-test.ts';
import { webhookEnabled, webhookUpdate } from './webhook-update.ts';

export type { DashboardDeps } from './context.ts';
export { SIGN_IN_QUOTA, SIGN_IN_QUOTA_PER_ADDRESS } from './sign-in.ts';

/**
 * The lender dashboard at `/dashboard` (issue: lender dashboard): server-rendered, signed in with a
 * dashboard user, never an API key. Express tries the routes in the order given here: the
 * cross-site refusal before every form, sign-in before the session guard, the refusals last.
 */
export function dashboardRoutes(deps: DashboardDeps): Router {
  const router = express.Router({ strict: true, caseSensitive: true });
  const dashboard = dashboardOf(deps);
  const admin = adminOnly(dashboard);

  router.use(express.urlencoded({ extended: false, limit: '8kb', parameterLimit: 50 }));
  router.get('/assets/dashboard.css', stylesheet());
  router.post('/{*rest}', refuseCrossSite(dashboard));
  router.get('/sign-in', signInForm(dashboard));
  router.post('/sign-in', signInSubmit(dashboard));

  router.use(requireSession(dashboard));
  router.post('/sign-out', signOutSubmit(dashboard));
  router.get('/', home());

  router.get('/verifications', verificationList(dashboard));
  router.get('/verifications/:id', verificationDetail(dashboard));
  router.post('/verifications/:id/refresh', admin, refreshVerification(dashboard));
  router.get('/verifications/:id/monitoring/stop', admin, stopMonitoringConfirm(dashboard));
  router.post('/verifications/:id/monitoring/stop', admin, stopMonitoringSubmit(dashboard));
  router.get('/verifications/:id/tape.json', tapeDownload(dashboard));

  router.get('/webhooks', webhookList(dashboard));
  router.post('/webhooks', admin, webhookRegister(dashboard));
  router.get('/webhooks/:id', webhookDetail(dashboard));
  router.post('/webhooks/:id/secret', admin, webhookSecretReveal(dashboard));
  router.post('/webhooks/:id/rotate-secret', admin, webhookSecretRotate(dashboard));
  router.post('/webhooks/:id/test', admin, webhookTest(dashboard));
  router.post('/webhooks/:id/update', admin, webhookUpdate(dashboard));
  router.post('/webhooks/:id/enabled', admin, webhookEnabled(dashboard));
  router.post('/webhooks/:id/delete', admin, webhookDelete(dashboard));
  router.post('/webhooks/:id/deliveries/:deliveryId/replay', admin, deliveryReplay(dashboard));

  router.get('/account', account(dashboard));
  router.post('/account/return-origins', admin, returnOriginsSave(dashboard));

  router.use(refusals(dashboard));
  router.use(notFound(dashboard));
  return router;
}
