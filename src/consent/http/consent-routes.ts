import express, { type Router } from 'express';
import { complete } from './complete.ts';
import { connect } from './connect.ts';
import { consentLinkPage } from './consent-page.ts';
import { consentPagesOf, type ConsentPagesDeps } from './context.ts';
import { declineConfirm, declineSubmit } from './decline.ts';
import { providerDenied } from './denied.ts';
import { oauthCallback } from './oauth-callback.ts';
import { linkPrivacyNotice, privacyNotice } from './privacy.ts';
import { notFound, refusals, refuseCrossSite } from './refusals.ts';
import { sandboxProvider, sandboxProviderDecision } from './sandbox-provider.ts';
import { stopSharingConfirm, stopSharingSubmit } from './stop-sharing.ts';
import { stylesheet } from './stylesheet.ts';

/**
 * The consent pages at `{PUBLIC_BASE_URL}/consent/{token}` (issue: creator consent). Express tries
 * the routes in the order given here: the cross-site refusal before every form, `/privacy` before
 * `/:token` would take it for a token, the refusals last.
 */
export function consentRoutes(deps: ConsentPagesDeps): Router {
  const router = express.Router({ strict: true, caseSensitive: true });
  const pages = consentPagesOf(deps);

  router.use(express.urlencoded({ extended: false, limit: '4kb' }));
  router.get('/assets/consent.css', stylesheet());
  router.post('/{*rest}', refuseCrossSite(pages));
  router.get('/privacy', privacyNotice(pages));

  router.get('/:token', consentLinkPage(pages));
  router.get('/:token/privacy', linkPrivacyNotice(pages));
  router.get('/:token/decline', declineConfirm(pages));
  router.post('/:token/decline', declineSubmit(pages));
  router.get('/:token/stop', stopSharingConfirm(pages));
  router.post('/:token/stop', stopSharingSubmit(pages));
  router.get('/:token/denied/:platform', providerDenied(pages));
  router.post('/:token/connect/:platform', connect(pages));
  router.get('/oauth/:platform/callback', oauthCallback(pages));
  if (deps.mode === 'sandbox') {
    router.get('/:token/sandbox/:platform', sandboxProvider(pages));
    router.post('/:token/sandbox/:platform', sandboxProviderDecision(pages));
  }
  router.post('/:token/complete', complete(pages));

  router.use(refusals(pages));
  router.use(notFound(pages));
  return router;
}
