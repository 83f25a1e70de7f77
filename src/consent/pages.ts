import type { VerificationRecord } from '../verifications/verifications-repository.ts';

// Server-rendered pages for creators: no JavaScript, no third-party assets, every value escaped.

const escape = (text: string): string => text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

type Platform = VerificationRecord['creatorPlatforms'][number];

/** What each platform's read-only access lets the service read, shown before the creator connects. */
const PLATFORMS: Record<Platform, { name: string; reads: string; scope: string }> = {
  youtube: {
    name: 'YouTube',
    reads: 'Estimated revenue per month from YouTube Analytics, and the email address of the Google account.',
    scope: 'Google read-only scopes: yt-analytics-monetary.readonly, email',
  },
  stripe: {
    name: 'Stripe',
    reads: 'Balance transactions (payments and refunds) to total your gross volume per month, and the account email.',
    scope: 'Stripe Connect read_only access',
  },
};

const formatDate = (iso: string) => `${new Date(iso).toISOString().slice(0, 16).replace('T', ' ')} UTC`;

function layout(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
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
</body>
</html>`;
}

export function consentPage(input: { token: string; verification: VerificationRecord; connections: Map<string, string>; notice?: string }): string {
  const { token, verification, connections, notice } = input;
  const lender = escape(verification.lenderName);
  const anyConnected = [...connections.values()].includes('connected');
  const platforms = verification.creatorPlatforms
    .map((platform) => {
      const info = PLATFORMS[platform];
      const connected = connections.get(platform) === 'connected';
      const status = connected ? 'Connected' : 'Not connected';
      return `<li class="platform">
  <h3 id="platform-${platform}">${info.name}</h3>
  <p>${escape(info.reads)}</p>
  <p class="scope">${escape(info.scope)}</p>
  <p class="status" id="status-${platform}"><span class="label">Status:</span> <strong>${status}</strong></p>
  ${
    connected
      ? ''
      : `<form method="post" action="/consent/${token}/connect/${platform}">
    <button type="submit" aria-describedby="platform-${platform} status-${platform}">Connect ${info.name}</button>
  </form>`
  }
</li>`;
    })
    .join('\n');
  return layout(
    `${verification.lenderName} asks to verify your creator income`,
    `<h1>${lender} asks to verify your creator income</h1>
${notice ? `<p class="notice" role="status">${escape(notice)}</p>` : ''}
<p>${lender} never sees your passwords or logs in to your accounts. You connect each platform below with
read-only access; the service reads your income, computes a summary for ${lender} and shares only that summary.</p>
<section aria-labelledby="reads">
<h2 id="reads">What is read</h2>
<ul class="platforms">
${platforms}
</ul>
</section>
<section aria-labelledby="never">
<h2 id="never">What is never seen or shared</h2>
<ul>
<li>Your passwords: you sign in on the platform's own page, never here.</li>
<li>Your videos, customers, messages and audience data.</li>
<li>Any ability to change your accounts: access is read-only and you can revoke it on the platform at any time.</li>
<li>Your email address is kept only to answer data-protection requests; it is not given to ${lender}.</li>
</ul>
</section>
<section aria-labelledby="finish">
<h2 id="finish">Give consent</h2>
<p>When you give consent, the income of the connected platforms is read and a summary is sent to ${lender}.
A platform you leave unconnected is reported as having no data.</p>
<form method="post" action="/consent/${token}/complete">
<button type="submit"${anyConnected ? '' : ' disabled aria-disabled="true"'}>Give consent and finish</button>
</form>
${anyConnected ? '' : '<p class="hint">Connect at least one platform to continue.</p>'}
<p class="expiry">This link expires on <time datetime="${verification.expiresAt}">${formatDate(verification.expiresAt)}</time>.</p>
</section>`,
  );
}

export function sandboxProviderPage(token: string, platform: Platform, lenderName: string): string {
  const info = PLATFORMS[platform];
  return layout(
    `${info.name} (sandbox): allow read-only access?`,
    `<h1>${info.name} sign-in (sandbox simulation)</h1>
<p>This sandbox stands in for ${info.name}'s own consent screen: no real account is connected and the income is synthetic.</p>
<p>${escape(lenderName)}'s verification asks for: ${escape(info.reads)}</p>
<form method="post" action="/consent/${token}/sandbox/${platform}">
<button type="submit" name="decision" value="allow">Allow read-only access</button>
<button type="submit" name="decision" value="deny" class="secondary">Deny</button>
</form>`,
  );
}

/** For links that are unknown, expired or finished, and for refusals: a clear message, nothing else. */
export function messagePage(title: string, message: string, backTo?: string): string {
  return layout(
    title,
    `<h1>${escape(title)}</h1>
<p>${escape(message)}</p>
${backTo ? `<p><a href="${escape(backTo)}">Back to the consent page</a></p>` : ''}`,
  );
}

export const CONSENT_CSS = `
:root { color-scheme: light; font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; line-height: 1.5; }
body { margin: 0; background: #f6f7f9; color: #1a1d21; }
main { max-width: 42rem; margin: 0 auto; padding: 2rem 1.25rem 4rem; background: #fff; }
h1 { font-size: 1.6rem; line-height: 1.25; }
h2 { font-size: 1.2rem; margin-top: 2rem; }
h3 { font-size: 1.05rem; margin: 0 0 .25rem; }
ul.platforms { list-style: none; padding: 0; }
li.platform { border: 1px solid #c4c9d0; border-radius: .5rem; padding: 1rem; margin-bottom: 1rem; }
.scope, .hint, .expiry { color: #3d434b; font-size: .95rem; }
.notice { background: #e8f1fb; border-left: 4px solid #0b5cad; padding: .5rem .75rem; }
button { font: inherit; font-weight: 600; color: #fff; background: #0b5cad; border: 2px solid #0b5cad; border-radius: .375rem; padding: .55rem 1.1rem; cursor: pointer; }
button.secondary { color: #0b5cad; background: #fff; margin-left: .5rem; }
button[disabled] { color: #3d434b; background: #e2e5e9; border-color: #8a919a; cursor: not-allowed; }
button:focus-visible, a:focus-visible { outline: 3px solid #b35c00; outline-offset: 2px; }
a { color: #0b5cad; }
`;
