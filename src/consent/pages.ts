import { BASE_CSS, escapeHtml as escape } from '../platform/html.ts';
import type { VerificationRecord } from '../verifications/verifications-repository.ts';
import { returnLink } from '../accounts/return-origins.ts';
import { CATALOGUES, directionOf, formatDateTime, LOCALES, type Locale, type Messages } from './i18n/catalogue.ts';

// Server-rendered pages for creators: no JavaScript, no third-party assets, every value escaped,
// every string from the language catalogues (i18n/).

type Platform = VerificationRecord['creatorPlatforms'][number];

export const PLATFORM_NAMES: Record<Platform, string> = { youtube: 'YouTube', stripe: 'Stripe' };

/** What each platform's read-only access lets the service read, shown before the creator connects. */
const reads = (m: Messages, platform: Platform) => (platform === 'youtube' ? m.readsYoutube : m.readsStripe);
const scope = (m: Messages, platform: Platform) => (platform === 'youtube' ? m.scopeYoutube : m.scopeStripe);

/** Who is asking and in which language; what every page of a consent link shares. */
export interface PageContext {
  locale: Locale;
  /** The consent link's token, when the page belongs to a link that exists. */
  token?: string;
  lenderName?: string;
  /**
   * The lender account's registered name. Any lender may put any `lender_name` on a request, so
   * when the two differ the pages show the registered one beside it: a creator can then tell a
   * lender named "Acme Capital" on the page from the account that really sent the link.
   */
  registeredLenderName?: string | null;
  /** The page the language links reload (one that answers GET); without it no language links are shown. */
  here?: string;
}

/** The catalogue of the page's language, and its parameters ready to interpolate. */
function wordsFor(ctx: PageContext) {
  const m = CATALOGUES[ctx.locale];
  // Latin names inside right-to-left text are isolated, so neighbouring punctuation stays on its side.
  const isolate = (text: string) => (directionOf(ctx.locale) === 'rtl' ? `\u2068${text}\u2069` : text);
  const named = ctx.lenderName ?? '';
  const registered = ctx.registeredLenderName;
  return {
    m,
    lender: registered && named && registered !== named ? m.lenderWithAccount({ lender: isolate(named), account: isolate(registered) }) : isolate(named),
    platform: (p: Platform) => isolate(PLATFORM_NAMES[p]),
    date: (iso: string) => isolate(formatDateTime(ctx.locale, iso)),
  };
}

export const consentPath = (token: string) => `/consent/${token}`;
export const stopPath = (token: string) => `/consent/${token}/stop`;
const privacyPath = (ctx: PageContext) => (ctx.token ? `/consent/${ctx.token}/privacy` : '/consent/privacy');

function languageLinks(ctx: PageContext, m: Messages): string {
  const here = ctx.here;
  if (!here) return '';
  // Same-origin links to the same page: the token in the path never leaves this origin, and the
  // pages' no-referrer policy keeps it out of every Referer.
  const separator = here.includes('?') ? '&' : '?';
  const items = LOCALES.map((locale) => {
    const name = escape(CATALOGUES[locale].languageName);
    const current = locale === ctx.locale ? ' aria-current="true"' : '';
    return `<li><a href="${escape(`${here}${separator}lang=${locale}`)}" lang="${locale}" hreflang="${locale}"${current}>${name}</a></li>`;
  }).join('');
  return `<nav aria-label="${escape(m.languageNav)}"><ul class="languages">${items}</ul></nav>`;
}

function layout(ctx: PageContext, title: string, body: string): string {
  const { m, lender } = wordsFor(ctx);
  return `<!doctype html>
<html lang="${ctx.locale}" dir="${directionOf(ctx.locale)}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${escape(title)}</title>
<link rel="stylesheet" href="/consent/assets/consent.css">
</head>
<body>
<main id="main">
${body}
</main>
<footer>
${languageLinks(ctx, m)}
<p><a href="${escape(privacyPath(ctx))}">${escape(m.privacyLink)}</a></p>
<p class="operator">${escape(ctx.lenderName ? m.footerOperatedFor({ lender }) : m.footerOperated)}</p>
</footer>
</body>
</html>`;
}

const paragraph = (text: string, className?: string) => `<p${className ? ` class="${className}"` : ''}>${escape(text)}</p>`;
const backLink = (ctx: PageContext, m: Messages) => (ctx.token ? `<p><a href="${consentPath(ctx.token)}">${escape(m.backToConsent)}</a></p>` : '');

type Monitoring = NonNullable<VerificationRecord['monitoring']>;

/**
 * What ongoing monitoring means, on the consent page of a verification that has it (empty for a
 * one-time one, whose page stays as it was): who receives the updates, how often, until when, and
 * that this link stops them. Before the first tape its end is not known yet, only its length.
 */
function ongoingAccess(ctx: PageContext, monitoring: Monitoring | null): string {
  if (!monitoring) return '';
  const { m, lender, date } = wordsFor(ctx);
  const when = monitoring.endsAt ? m.monitoringUntil({ lender, date: date(monitoring.endsAt) }) : m.monitoringPlanned({ lender, months: monitoring.months });
  return `<section aria-labelledby="ongoing">
<h2 id="ongoing">${escape(m.monitoringTitle)}</h2>
${paragraph(when)}
${paragraph(m.monitoringStopAnyTime({ lender }))}
</section>
`;
}

export function consentPage(
  ctx: PageContext & { token: string },
  input: {
    verification: VerificationRecord;
    connections: Map<string, string>;
    notice?: string;
    /** Platforms this deployment cannot connect (a production service started without their credentials). */
    unavailable?: ReadonlySet<Platform>;
  },
): string {
  const { verification, connections, notice } = input;
  const unavailable = input.unavailable ?? new Set<Platform>();
  const { m, lender, platform: name, date } = wordsFor(ctx);
  const token = ctx.token;
  const anyConnected = [...connections.values()].includes('connected');
  // Nothing connected and nothing offered: the page says so plainly instead of a note per
  // platform that speaks of "the other platforms" (P32).
  const nothingToConnect = !anyConnected && verification.creatorPlatforms.every((platform) => unavailable.has(platform));
  const platforms = verification.creatorPlatforms
    .map((platform) => {
      const connected = connections.get(platform) === 'connected';
      const offered = connected || !unavailable.has(platform);
      const status = connected ? m.statusConnected : offered ? m.statusNotConnected : m.statusUnavailable;
      return `<li class="platform">
  <h3 id="platform-${platform}">${escape(PLATFORM_NAMES[platform])}</h3>
  ${paragraph(reads(m, platform))}
  <p class="scope" dir="auto">${escape(scope(m, platform))}</p>
  <p class="status" id="status-${platform}"><span class="label">${escape(m.statusLabel)}</span> <strong>${escape(status)}</strong></p>
  ${
    connected
      ? ''
      : !offered
        ? nothingToConnect
          ? ''
          : `<p class="unavailable" id="unavailable-${platform}" role="note" dir="auto">${escape(m.platformNotOfferedText({ platform: name(platform), lender }))}</p>`
        : `<form method="post" action="/consent/${token}/connect/${platform}">
    <button type="submit" aria-describedby="platform-${platform} status-${platform}">${escape(m.connectButton({ platform: name(platform) }))}</button>
  </form>`
  }
</li>`;
    })
    .join('\n');
  return layout(
    ctx,
    m.consentTitle({ lender }),
    `<h1>${escape(m.consentTitle({ lender }))}</h1>
${notice ? `<p class="notice" role="status">${escape(notice)}</p>` : ''}
${paragraph(m.consentIntro({ lender }))}
${ongoingAccess(ctx, verification.monitoring)}${nothingToConnect ? `<p class="unavailable" id="nothing-to-connect" role="note" dir="auto">${escape(m.noPlatformAvailable({ lender }))}</p>` : ''}
<section aria-labelledby="reads">
<h2 id="reads">${escape(m.whatIsRead)}</h2>
<ul class="platforms">
${platforms}
</ul>
</section>
<section aria-labelledby="never">
<h2 id="never">${escape(m.neverTitle)}</h2>
<ul>
<li>${escape(m.neverPasswords)}</li>
<li>${escape(m.neverContent)}</li>
<li>${escape(m.neverChanges)}</li>
<li>${escape(m.neverEmail({ lender }))}</li>
</ul>
</section>
${
  nothingToConnect
    ? ''
    : `<section aria-labelledby="finish">
<h2 id="finish">${escape(m.finishTitle)}</h2>
${paragraph(m.finishText({ lender }))}
${verification.monitoring ? `${paragraph(m.monitoringConsentCovers)}\n` : ''}<form method="post" action="/consent/${token}/complete">
<button type="submit"${anyConnected ? '' : ' disabled aria-disabled="true"'}>${escape(m.finishButton)}</button>
</form>
${anyConnected ? '' : paragraph(m.finishHint, 'hint')}
<p class="expiry"><time datetime="${verification.expiresAt}">${escape(m.expiresOn({ date: date(verification.expiresAt) }))}</time></p>
</section>`
}
<section aria-labelledby="decline">
<h2 id="decline">${escape(m.declineTitle)}</h2>
${paragraph(m.declineText({ lender }))}
<p><a href="/consent/${token}/decline">${escape(m.declineLink)}</a></p>
</section>`,
  );
}

/** Declining is final, so the consent page's link leads here and only this form declines. */
export function declineConfirmPage(ctx: PageContext & { token: string }): string {
  const { m, lender } = wordsFor(ctx);
  return layout(
    ctx,
    m.declineConfirmTitle({ lender }),
    `<h1>${escape(m.declineConfirmTitle({ lender }))}</h1>
${paragraph(m.declineConfirmText({ lender }))}
${paragraph(m.declineConfirmFinal({ lender }))}
<form method="post" action="/consent/${ctx.token}/decline">
<button type="submit" class="danger">${escape(m.declineConfirmButton)}</button>
</form>
<p><a href="${consentPath(ctx.token)}">${escape(m.declineConfirmBack)}</a></p>`,
  );
}

/** Stopping cannot be undone, so the link's page leads here and only this form stops (with its browser's token). */
export function stopConfirmPage(ctx: PageContext & { token: string }, formToken: string): string {
  const { m, lender } = wordsFor(ctx);
  return layout(
    ctx,
    m.stopConfirmTitle({ lender }),
    `<h1>${escape(m.stopConfirmTitle({ lender }))}</h1>
${paragraph(m.stopConfirmText({ lender }))}
${paragraph(m.stopConfirmKept({ lender }))}
<form method="post" action="${stopPath(ctx.token)}">
<input type="hidden" name="_csrf" value="${escape(formToken)}">
<button type="submit" class="danger">${escape(m.stopConfirmButton)}</button>
</form>
<p><a href="${consentPath(ctx.token)}">${escape(m.stopConfirmBack)}</a></p>`,
  );
}

export function sandboxProviderPage(ctx: PageContext & { token: string }, platform: Platform): string {
  const { m, lender, platform: name } = wordsFor(ctx);
  return layout(
    ctx,
    m.sandboxTitle({ platform: name(platform) }),
    `<h1>${escape(m.sandboxHeading({ platform: name(platform) }))}</h1>
${paragraph(m.sandboxText({ platform: name(platform) }))}
${paragraph(m.sandboxAsks({ lender }))}
<ul><li>${escape(reads(m, platform))}</li></ul>
<form method="post" action="/consent/${ctx.token}/sandbox/${platform}">
<button type="submit" name="decision" value="allow">${escape(m.sandboxAllow)}</button>
<button type="submit" name="decision" value="deny" class="secondary">${escape(m.sandboxDeny)}</button>
</form>`,
  );
}

/**
 * The creator came back from the provider without granting access: pressed Deny (`denied`) or the
 * provider ended the sign-in with another error. Says so, and offers to try again or to decline.
 */
export function providerDeniedPage(ctx: PageContext & { token: string }, platform: Platform, why: 'denied' | 'error'): string {
  const { m, lender, platform: name } = wordsFor(ctx);
  const p = { platform: name(platform) };
  const title = why === 'denied' ? m.deniedTitle(p) : m.providerErrorTitle(p);
  return layout(
    ctx,
    title,
    `<h1>${escape(title)}</h1>
${paragraph(why === 'denied' ? m.deniedText(p) : m.providerErrorText(p))}
<h2>${escape(m.deniedNextTitle)}</h2>
${paragraph(m.deniedTryAgainText(p))}
<form method="post" action="/consent/${ctx.token}/connect/${platform}">
<button type="submit">${escape(m.tryAgainButton(p))}</button>
</form>
${paragraph(m.deniedDeclineText({ lender }))}
<p><a href="/consent/${ctx.token}/decline">${escape(m.declineLink)}</a></p>
${backLink(ctx, m)}`,
  );
}

/**
 * A completed verification's running monitoring: what goes to whom until when, and the way to stop
 * it. A GET form, so the button only leads to the confirmation page; nothing is stopped from here.
 */
function stillShared(ctx: PageContext, monitoring: Monitoring): string {
  const { m, lender, date } = wordsFor(ctx);
  const until = monitoring.endsAt ? m.sharingActive({ lender, date: date(monitoring.endsAt) }) : m.monitoringPlanned({ lender, months: monitoring.months });
  return `<section aria-labelledby="shared">
<h2 id="shared">${escape(m.sharingTitle)}</h2>
${paragraph(until)}
${paragraph(m.monitoringStopAnyTime({ lender }))}
${ctx.token ? `<form method="get" action="${stopPath(ctx.token)}">\n<button type="submit">${escape(m.stopButton)}</button>\n</form>\n` : ''}</section>
`;
}

/** Why the monthly updates ended, in plain words; a reason added later still gets a sentence. */
function sharingEndedWhy(ctx: PageContext, monitoring: Monitoring): string {
  const { m, lender, date } = wordsFor(ctx);
  const reason: string | null = monitoring.endReason;
  switch (reason) {
    case 'window_over':
      return monitoring.endsAt ? m.endedWindowOver({ date: date(monitoring.endsAt) }) : m.endedOther;
    case 'stopped_by_creator':
      return m.endedByYou({ lender });
    case 'stopped_by_lender':
    case 'cancelled_by_lender':
      return m.endedByLender({ lender });
    case 'grant_revoked':
      return m.endedAccessWithdrawn;
    default:
      return m.endedOther;
  }
}

/** What a consent link shows once nothing more is asked of the creator: one page per state, failures by reason. */
export function outcomePage(
  ctx: PageContext,
  verification: Pick<VerificationRecord, 'id' | 'status' | 'failureReason' | 'updatedAt' | 'completedAt' | 'returnUrl' | 'monitoring'>,
): string {
  const { m, lender, date } = wordsFor(ctx);
  const monitoring = verification.monitoring;
  const when = paragraph(m.outcomeWhen({ date: date(verification.updatedAt) }), 'when');
  // The way back to the lender's app, with the verification and the outcome this page shows.
  const back = verification.returnUrl
    ? `<p class="return"><a href="${escape(returnLink(verification.returnUrl, verification.id, verification.status))}">${escape(m.returnToLender({ lender }))}</a></p>\n`
    : '';
  const close = back + paragraph(m.closePage);
  const page = (title: string, ...paragraphs: string[]) => pageWith(title, paragraphs, '');
  const pageWith = (title: string, paragraphs: string[], more: string) =>
    layout(
      ctx,
      title,
      // A completed page names its moment in its own sentence.
      `<h1>${escape(title)}</h1>\n${paragraphs.map((text) => paragraph(text)).join('\n')}\n${more}${verification.status === 'completed' ? '' : when}\n${close}`,
    );
  // `status` is typed by today's states; a state added later (for example `cancelled`) still gets a page.
  const status: string = verification.status;
  switch (status) {
    case 'completed': {
      const completed = m.completedText({ lender, date: date(verification.completedAt ?? verification.updatedAt) });
      if (monitoring?.state === 'active') return pageWith(m.completedTitle({ lender }), [completed], stillShared(ctx, monitoring));
      if (monitoring?.state === 'ended') {
        const title = monitoring.endReason === 'stopped_by_creator' ? m.stoppedTitle({ lender }) : m.sharingEndedTitle({ lender });
        return page(title, sharingEndedWhy(ctx, monitoring), m.endedKept({ lender }));
      }
      return page(m.completedTitle({ lender }), completed);
    }
    case 'processing':
      if (monitoring && monitoring.state !== 'ended') {
        return page(m.processingTitle, m.processingText({ lender }), m.monitoringAfterProcessing({ lender, months: monitoring.months }));
      }
      return page(m.processingTitle, m.processingText({ lender }));
    case 'expired':
      return page(m.expiredTitle, m.expiredText({ lender }));
    case 'cancelled':
      return page(m.cancelledTitle, m.cancelledText({ lender }));
    case 'failed': {
      if (verification.failureReason === 'consent_declined') return page(m.declinedTitle, m.declinedText({ lender }), m.declinedChangeMind({ lender }));
      const why =
        verification.failureReason === 'platform_error'
          ? m.failedPlatformError
          : verification.failureReason === 'consent_revoked'
            ? m.failedConsentRevoked
            : verification.failureReason === 'timeout'
              ? m.failedTimeout
              : m.failedOther;
      return page(m.failedTitle, why, m.failedNext({ lender }));
    }
    default:
      return page(m.closedTitle, m.closedText);
  }
}

/**
 * The privacy notice of articles 13 and 14 GDPR for the creator, linked from every page. What it
 * says about purposes and retention is what `gdpr/processing-notice.ts` reports to the lender and
 * `docs/data-protection.md` describes; change them together.
 */
export function privacyPage(ctx: PageContext): string {
  const { m, lender } = wordsFor(ctx);
  const named = Boolean(ctx.lenderName);
  const list = (items: string[]) => `<ul>\n${items.map((item) => `<li>${escape(item)}</li>`).join('\n')}\n</ul>`;
  return layout(
    ctx,
    m.privacyTitle,
    `<h1>${escape(m.privacyTitle)}</h1>
${paragraph(m.privacyIntro)}
<section aria-labelledby="who">
<h2 id="who">${escape(m.privacyWhoTitle)}</h2>
${paragraph(named ? m.privacyController({ lender }) : m.privacyControllerUnnamed)}
${paragraph(m.privacyProcessor)}
</section>
<section aria-labelledby="purposes">
<h2 id="purposes">${escape(m.privacyPurposesTitle)}</h2>
${list(named ? [m.purposeVerify({ lender }), m.purposeNotify({ lender }), m.purposeMonitor, m.purposeRights] : [m.purposeVerifyUnnamed, m.purposeNotifyUnnamed, m.purposeMonitor, m.purposeRights])}
</section>
<section aria-labelledby="data">
<h2 id="data">${escape(m.privacyDataTitle)}</h2>
${list([m.dataIncome, m.dataAccount, m.dataTokens, m.dataSummary, m.dataLanguage])}
</section>
<section aria-labelledby="retention">
<h2 id="retention">${escape(m.privacyRetentionTitle)}</h2>
${list([m.retentionLink, m.retentionData, m.retentionTokens, m.retentionNothingRead, m.retentionLanguage])}
</section>
<section aria-labelledby="rights">
<h2 id="rights">${escape(m.privacyRightsTitle)}</h2>
${paragraph(m.rightsList)}
${paragraph(m.rightsWithdraw)}
${paragraph(named ? m.rightsHow({ lender }) : m.rightsHowUnnamed)}
${paragraph(m.rightsComplain)}
</section>
${backLink(ctx, m)}`,
  );
}

/** For links that are unknown, expired or finished, and for refusals: a clear message, nothing else. */
export function messagePage(ctx: PageContext, title: string, message: string, options: { back?: boolean } = {}): string {
  const { m } = wordsFor(ctx);
  return layout(ctx, title, `<h1>${escape(title)}</h1>\n${paragraph(message)}\n${options.back ? backLink(ctx, m) : ''}`);
}

/** The catalogue and interpolation parameters for the routes' own messages (refusals). */
export const wordsOf = wordsFor;

/** The shared look (platform/http/html.ts) and what only the consent pages have. */
export const CONSENT_CSS = `${BASE_CSS}
ul.platforms { list-style: none; padding: 0; }
li.platform { border: 1px solid #c4c9d0; border-radius: .5rem; padding: 1rem; margin-bottom: 1rem; }
.scope, .expiry, .when { color: #3d434b; font-size: .95rem; }
.unavailable { background: #fdf3e1; border-inline-start: 4px solid #8a5a00; padding: .5rem .75rem; }
ul.languages { list-style: none; padding: 0; margin: 0 0 1rem; display: flex; flex-wrap: wrap; gap: .25rem 1rem; }
ul.languages a { display: inline-block; padding: .25rem 0; }
ul.languages a[aria-current] { font-weight: 700; color: #1a1d21; text-decoration: none; }
`;
