import type { components } from '../../generated/api.ts';
import type { RiskTape200 } from '../../generated/tape.ts';
import type { ApiKeyRecord, LenderAccount } from '../accounts/model.ts';
import { BASE_CSS, escapeHtml as e } from '../platform/html.ts';
import type { Delivery } from '../webhooks/webhooks-repository.ts';
import type { DashboardRole, DashboardUser } from './dashboard-repository.ts';
import { incomeChartSvg, incomeTable, type IncomeFigures } from './income-chart.ts';

// The lender dashboard's pages: server-rendered, no JavaScript, no third-party assets, every value
// escaped; the consent pages' look (platform/html.ts) widened for tables. English only: the
// dashboard serves the lender's staff, the consent pages (in five languages) the creators.

type Verification = components['schemas']['Verification'];
type Webhook = components['schemas']['Webhook'];
type Benchmark = components['schemas']['Benchmark'];
type Monitoring = components['schemas']['Monitoring'];
export type TapeSummary = components['schemas']['TapeSummary'];
export type EventName = components['schemas']['EventName'];

export const DASHBOARD_CSS = `${BASE_CSS}
main, footer, header.top { max-width: 72rem; }
header.top { margin: 0 auto; padding: .75rem 1.25rem; background: #1a1d21; color: #fff; display: flex; flex-wrap: wrap; align-items: center; gap: .5rem 1.5rem; box-sizing: border-box; }
header.top a { color: #fff; }
header.top .brand { font-weight: 700; margin: 0; }
header.top ul { list-style: none; display: flex; gap: 1rem; margin: 0; padding: 0; }
header.top a[aria-current] { font-weight: 700; text-decoration-thickness: 3px; }
header.top form { margin-inline-start: auto; display: flex; align-items: center; gap: .5rem; }
header.top button.secondary { margin: 0; padding: .25rem .75rem; }
header.top a:focus-visible, header.top button:focus-visible { outline-color: #ffb45c; }
.table { overflow-x: auto; }
table { border-collapse: collapse; width: 100%; margin: .5rem 0 1rem; font-size: .95rem; }
th, td { text-align: start; padding: .4rem .5rem; border-bottom: 1px solid #c4c9d0; vertical-align: top; overflow-wrap: anywhere; }
thead th { background: #eef0f3; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .25rem 1rem; }
dl.facts dt { font-weight: 600; }
dl.facts dd { margin: 0; overflow-wrap: anywhere; }
form.filters { display: flex; flex-wrap: wrap; gap: .5rem 1rem; align-items: flex-end; }
label { display: block; font-weight: 600; }
input, select { font: inherit; padding: .35rem .5rem; border: 1px solid #6b7280; border-radius: .25rem; max-width: 100%; box-sizing: border-box; }
fieldset { border: 1px solid #c4c9d0; border-radius: .375rem; margin: 0 0 1rem; }
fieldset label { font-weight: 400; display: inline-block; margin-inline-end: 1rem; }
form.inline { display: inline; }
.secret { font-family: ui-monospace, Menlo, Consolas, monospace; background: #eef0f3; padding: .5rem; overflow-wrap: anywhere; }
.error { background: #fbeaea; border-inline-start: 4px solid #a4262c; padding: .5rem .75rem; }
.tier { font-size: 1.3rem; font-weight: 700; }
code, .mono { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: .9em; }
svg.chart { display: block; width: 100%; max-width: 720px; height: auto; margin: .5rem 0; }
caption { text-align: start; font-weight: 600; padding: .25rem 0; }
@media print {
  body, main { background: #fff; }
  main, footer, header.top { max-width: none; }
  header.top nav, header.top form, main form { display: none; }
  .table { overflow: visible; }
  svg.chart, tr { break-inside: avoid; }
}
`;

/** Who is looking, and the token their forms carry. */
export interface Viewer {
  user: DashboardUser;
  lender: LenderAccount;
  csrfToken: string;
}

type Section = 'verifications' | 'webhooks' | 'account';

const when = (iso: string | null | undefined) => (iso ? `<time datetime="${e(iso)}">${e(iso.slice(0, 16).replace('T', ' '))} UTC</time>` : '—');
const eur = (n: number | null | undefined) =>
  n === null || n === undefined ? '—' : `€${n.toLocaleString('en-GB', { minimumFractionDigits: 2, maximumFractionDigits: 2 })}`;
const num = (n: number | null | undefined, digits = 2) => (n === null || n === undefined ? '—' : n.toLocaleString('en-GB', { maximumFractionDigits: digits }));
const text = (value: string | number | null | undefined) => (value === null || value === undefined || value === '' ? '—' : e(String(value)));
const csrf = (viewer: Viewer) => `<input type="hidden" name="_csrf" value="${e(viewer.csrfToken)}">`;
const isAdmin = (viewer: Viewer) => viewer.user.role === 'admin';

function document(title: string, header: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${e(title)} · Lender dashboard</title>
<link rel="stylesheet" href="/dashboard/assets/dashboard.css">
</head>
<body>
${header}
<main id="main">
${body}
</main>
<footer>
<p>Creator Income Verification Service · lender dashboard. Pages work without JavaScript.</p>
</footer>
</body>
</html>`;
}

function page(viewer: Viewer, section: Section, title: string, body: string): string {
  const link = (to: Section, label: string) => `<li><a href="/dashboard/${to}"${to === section ? ' aria-current="page"' : ''}>${label}</a></li>`;
  const header = `<header class="top">
<p class="brand">${e(viewer.lender.name)}</p>
<nav aria-label="Dashboard"><ul>${link('verifications', 'Verifications')}${link('webhooks', 'Webhooks')}${link('account', 'Account')}</ul></nav>
<form method="post" action="/dashboard/sign-out">${csrf(viewer)}<span>${e(viewer.user.email)} (${e(viewer.user.role)})</span><button type="submit" class="secondary">Sign out</button></form>
</header>`;
  return document(title, header, body);
}

const notice = (message: string | undefined) => (message ? `<p class="notice" role="status">${e(message)}</p>` : '');

/** A table that scrolls sideways on a narrow screen, reachable by keyboard when it does. */
const table = (label: string, head: string[], rows: string[], empty: string) =>
  rows.length === 0
    ? `<p>${e(empty)}</p>`
    : `<div class="table" role="region" aria-label="${e(label)} table" tabindex="0"><table>
<thead><tr>${head.map((h) => `<th scope="col">${e(h)}</th>`).join('')}</tr></thead>
<tbody>
${rows.join('\n')}
</tbody>
</table></div>`;

// Sign-in and messages

export function signInPage(input: { loginToken: string; email?: string; error?: string; notice?: string }): string {
  return document(
    'Sign in',
    '',
    `<h1>Sign in to the lender dashboard</h1>
${notice(input.notice)}
${input.error ? `<p class="error" role="alert">${e(input.error)}</p>` : ''}
<form method="post" action="/dashboard/sign-in">
<input type="hidden" name="_csrf" value="${e(input.loginToken)}">
<p><label for="email">Email</label><input id="email" name="email" type="email" autocomplete="username" required value="${e(input.email ?? '')}"></p>
<p><label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required></p>
<button type="submit">Sign in</button>
</form>
<p class="hint">Dashboard users are created by your service operator. API keys never sign in here.</p>`,
  );
}

export function messagePage(viewer: Viewer | null, title: string, message: string): string {
  const body = `<h1>${e(title)}</h1>\n<p>${e(message)}</p>\n<p><a href="/dashboard/${viewer ? 'verifications' : 'sign-in'}">${viewer ? 'Back to the dashboard' : 'Sign in'}</a></p>`;
  return viewer ? page(viewer, 'verifications', title, body) : document(title, '', body);
}

// Verifications

export interface ListFilters {
  status?: string;
  obligor_reference?: string;
  product_type?: string;
  created_gte?: string;
  created_lt?: string;
  limit?: number;
}

function select(name: string, label: string, options: readonly string[], current: string | undefined): string {
  const items = ['', ...options].map((o) => `<option value="${e(o)}"${o === (current ?? '') ? ' selected' : ''}>${o === '' ? 'Any' : e(o)}</option>`).join('');
  return `<p><label for="${name}">${e(label)}</label><select id="${name}" name="${name}">${items}</select></p>`;
}

export function verificationListPage(
  viewer: Viewer,
  input: { filters: ListFilters; statuses: readonly string[]; productTypes: readonly string[]; data: Verification[]; hasMore: boolean; error?: string },
): string {
  const { filters } = input;
  const rows = input.data.map(
    (v) =>
      `<tr><td><a href="/dashboard/verifications/${e(v.verification_id)}">${e(v.verification_id)}</a></td><td>${e(v.obligor_reference)}</td><td>${e(v.status)}${
        v.failure_reason ? ` (${e(v.failure_reason)})` : ''
      }</td><td>${e(v.product_type)}</td><td>${e(v.creator_platforms.join(', '))}</td><td>${when(v.created_at)}</td></tr>`,
  );
  const query = new URLSearchParams(
    Object.entries(filters).flatMap(([k, v]): Array<[string, string]> => (v === undefined || v === '' ? [] : [[k, String(v)]])),
  );
  const last = input.data.at(-1);
  if (last) query.set('starting_after', last.verification_id);
  return page(
    viewer,
    'verifications',
    'Verifications',
    `<h1>Verifications</h1>
${input.error ? `<p class="error" role="alert">${e(input.error)}</p>` : ''}
<form method="get" action="/dashboard/verifications" class="filters" aria-label="Filter verifications">
${select('status', 'Status', input.statuses, filters.status)}
<p><label for="obligor_reference">Obligor reference</label><input id="obligor_reference" name="obligor_reference" value="${e(filters.obligor_reference ?? '')}"></p>
${select('product_type', 'Product type', input.productTypes, filters.product_type)}
<p><label for="created_gte">Created from (UTC)</label><input id="created_gte" name="created_gte" placeholder="2026-01-01T00:00:00Z" value="${e(filters.created_gte ?? '')}"></p>
<p><label for="created_lt">Created before (UTC)</label><input id="created_lt" name="created_lt" placeholder="2026-02-01T00:00:00Z" value="${e(filters.created_lt ?? '')}"></p>
<p><button type="submit">Filter</button></p>
</form>
<p class="hint">Newest first, ${filters.limit ?? 20} per page.</p>
${table('Verifications', ['Verification', 'Obligor reference', 'Status', 'Product', 'Platforms', 'Created'], rows, 'No verifications match.')}
${input.hasMore ? `<p><a href="/dashboard/verifications?${e(query.toString())}">Next page</a></p>` : ''}`,
  );
}

export interface Timeline {
  transitions: Array<{ from: string | null; to: string; trigger: string; reason: string | null; at: string }>;
  events: Array<{ id: string; name: string; occurredAt: string }>;
}

function timelineSection(timeline: Timeline): string {
  const entries = [
    ...timeline.transitions.map((t) => ({
      at: t.at,
      order: 0,
      html: `<strong>${t.from ? `${e(t.from)} → ` : 'created as '}${e(t.to)}</strong> <span class="hint">(${e(t.trigger)}${t.reason ? `: ${e(t.reason)}` : ''})</span>`,
    })),
    ...timeline.events.map((ev) => ({ at: ev.occurredAt, order: 1, html: `event <code>${e(ev.name)}</code> <span class="hint mono">${e(ev.id)}</span>` })),
  ].sort((a, b) => a.at.localeCompare(b.at) || a.order - b.order);
  return `<section aria-labelledby="timeline"><h2 id="timeline">Status timeline</h2>
<ol>${entries.map((entry) => `<li>${when(entry.at)} ${entry.html}</li>`).join('\n')}</ol></section>`;
}

const REASONS: Record<string, string> = { completion: 'completion', overlay_attached: 'overlay attached', refresh: 'refresh' };
const reasonOf = (reason: string) => e(REASONS[reason] ?? reason);

/** `earlier`: the tape shown is one of the history's older ones rather than the latest. */
function tapeSection(verificationId: string, tape: RiskTape200, versions: readonly string[], earlier?: TapeSummary): string {
  const el = tape.eligibility;
  const cf = tape.cashflow_summary;
  const rp = tape.risk_profile;
  const dq = tape.data_quality;
  const perPlatform = cf.per_platform.map(
    (p) =>
      `<tr><th scope="row">${e(p.platform)}</th><td>${eur(p.revenue_3m_total_eur)}</td><td>${eur(p.revenue_12m_total_eur)}</td><td>${eur(p.monthly_revenue_avg_eur)}</td><td>${num(p.share_of_revenue * 100, 1)}%</td></tr>`,
  );
  const flags = el.flags.map((f) => `<tr><td><code>${e(f.code)}</code></td><td>${e(f.severity)}</td><td>${e(f.message)}</td></tr>`);
  const nd = dq.nd_code_summary.map((n) => `<tr><td><code>${e(n.code)}</code></td><td><code>${e(n.field)}</code></td><td>${e(n.message)}</td></tr>`);
  const connections = tape.platform_connections.map(
    (c) =>
      `<tr><th scope="row">${e(c.platform)}</th><td>${e(c.status)}</td><td>${text(c.months_of_data)}</td><td>${text(c.source_currency)}</td><td>${c.nd_codes.length ? c.nd_codes.map((code) => `<code>${e(code)}</code>`).join(', ') : '—'}</td></tr>`,
  );
  const overlays = (tape.overlay_blocks ?? []).map(
    (o) => `<tr><td>${e(o.type)}</td><td>${e(o.provider)}</td><td>${e(o.status)}</td><td>${text(o.reference)}</td><td>${when(o.observed_at)}</td></tr>`,
  );
  return `<section aria-labelledby="tape"><h2 id="tape">${earlier ? 'Earlier Risk Tape' : 'Risk Tape'}</h2>
${
  earlier
    ? `<p class="notice">An earlier tape, <span class="mono">${e(earlier.tape_id)}</span>, stored ${when(earlier.stored_at)} (${reasonOf(earlier.reason)}). <a href="/dashboard/verifications/${e(verificationId)}#tape">Show the latest tape</a>.</p>`
    : ''
}
<p>Schema ${e(tape.schema_version)}, generated ${when(tape.tape_generated_at)}, income data to ${e(tape.as_of_date)}.</p>
<dl class="facts">
<dt>Tier</dt><dd class="tier">${e(el.tier)}</dd>
<dt>Eligible</dt><dd>${el.eligible ? 'Yes' : 'No'}</dd>
<dt>Maximum advance</dt><dd>${eur(el.max_advance_eur)}</dd>
<dt>Maximum revenue share</dt><dd>${num(el.max_revenue_share_pct)}%</dd>
<dt>Payback cap</dt><dd>${num(el.payback_cap_multiple)}×</dd>
<dt>Product type</dt><dd>${e(el.product_type)}</dd>
<dt>Income stability score</dt><dd>${num(el.income_stability_score)}</dd>
<dt>Income trend</dt><dd>${text(el.income_trend ?? tape.metrics.trend_3m)}</dd>
</dl>
<h3>Income</h3>
<dl class="facts">
<dt>Months observed</dt><dd>${cf.months_observed}</dd>
<dt>Revenue, last 3 months</dt><dd>${eur(cf.revenue_3m_total_eur)}</dd>
<dt>Revenue, last 12 months</dt><dd>${eur(cf.revenue_12m_total_eur)}</dd>
<dt>Monthly average</dt><dd>${eur(cf.monthly_revenue_avg_eur)}</dd>
</dl>
${table('Income per platform', ['Platform', '3 months', '12 months', 'Monthly average', 'Share'], perPlatform, 'No platform income.')}
<h3>Metrics</h3>
<dl class="facts">
<dt>Revenue volatility (CV)</dt><dd>${num(rp.revenue_volatility_cv, 3)}</dd>
<dt>Largest drawdown</dt><dd>${rp.max_drawdown_pct === null ? '—' : `${num(rp.max_drawdown_pct, 1)}%`}</dd>
<dt>Platform concentration (HHI)</dt><dd>${num(rp.platform_hhi, 3)}</dd>
<dt>Trend</dt><dd>${rp.trend_slope_eur_per_month === null ? '—' : `${eur(rp.trend_slope_eur_per_month)} per month`} (${e(tape.metrics.trend_3m)})</dd>
</dl>
<h3>Flags</h3>
${table('Flags', ['Code', 'Severity', 'Message'], flags, 'No flags.')}
${el.covenants.length ? `<h3>Covenants</h3><ul>${el.covenants.map((c) => `<li><code>${e(c.code)}</code>: ${e(c.description)}</li>`).join('')}</ul>` : ''}
<h3>Data quality</h3>
<p>Score ${num(dq.score)}; ${dq.tier_a_fields_complete} of ${dq.tier_a_fields_total} tier-A fields complete.</p>
${table('No-data codes', ['ND code', 'Field', 'Meaning'], nd, 'No fields left without data.')}
${table('Platform connections', ['Platform', 'Connection', 'Months of data', 'Source currency', 'ND codes'], connections, 'No platforms.')}
<h3>Overlays</h3>
${table('Overlays', ['Type', 'Provider', 'Status', 'Reference', 'Observed'], overlays, 'No overlays attached.')}
<form method="get" action="/dashboard/verifications/${e(verificationId)}/tape.json">${earlier ? `<input type="hidden" name="tape_id" value="${e(earlier.tape_id)}">` : ''}
<p><label for="schema_version">Download the tape as JSON at schema version</label>
<select id="schema_version" name="schema_version">${versions.map((v) => `<option${v === '2.0.0' ? ' selected' : ''}>${e(v)}</option>`).join('')}</select>
<button type="submit">Download JSON</button></p>
</form>
</section>`;
}

const END_REASONS: Record<string, string> = {
  window_over: 'the months the creator agreed to are over',
  stopped_by_creator: 'the creator stopped sharing',
  stopped_by_lender: 'stopped from your account',
  cancelled_by_lender: 'the verification was cancelled',
  grant_revoked: "the creator's access was revoked at the platform",
  not_completed: 'the verification did not complete',
};

function monitoringState(m: Monitoring): string {
  if (m.state === 'active') return 'active';
  if (m.state === 'pending') return 'pending: it starts with the first tape';
  return `ended: ${m.end_reason ? (END_REASONS[m.end_reason] ? e(END_REASONS[m.end_reason]!) : e(m.end_reason)) : 'no reason recorded'}`;
}

/** A monitored verification's state and, for an admin, what can be done with it now. */
function monitoringSection(viewer: Viewer, verificationId: string, m: Monitoring): string {
  const base = `/dashboard/verifications/${e(verificationId)}`;
  let actions: string;
  if (m.state === 'ended') actions = '<p class="hint">Monitoring has ended and cannot be restarted; a new verification asks the creator again.</p>';
  else if (!isAdmin(viewer)) actions = '<p class="hint">An admin of your account can refresh or stop monitoring.</p>';
  else {
    const refresh =
      m.state === 'active'
        ? `<form method="post" action="${base}/refresh">${csrf(viewer)}<p><button type="submit">Refresh now</button> <span class="hint">Reads the creator's income again and scores a new tape. Once a day on demand; the monthly refreshes run anyway.</span></p></form>`
        : '<p class="hint">Refresh now is possible once monitoring is active.</p>';
    actions = `${refresh}
<form method="get" action="${base}/monitoring/stop"><p><button type="submit" class="danger">Stop monitoring…</button> <span class="hint">Asks you to confirm on the next page.</span></p></form>`;
  }
  return `<section aria-labelledby="monitoring"><h2 id="monitoring">Ongoing monitoring</h2>
<dl class="facts">
<dt>State</dt><dd>${monitoringState(m)}</dd>
<dt>Months</dt><dd>${m.months}</dd>
<dt>Window starts</dt><dd>${when(m.starts_at)}</dd>
<dt>Window ends</dt><dd>${when(m.ends_at)}</dd>
<dt>Last refresh</dt><dd>${m.last_refresh_at ? when(m.last_refresh_at) : 'none yet'}</dd>
<dt>Next refresh</dt><dd>${m.next_refresh_at ? when(m.next_refresh_at) : 'none scheduled'}</dd>
<dt>Refresh on demand</dt><dd>${m.refresh_requested_at ? `waiting, asked ${when(m.refresh_requested_at)}` : 'none waiting'}</dd>
<dt>Failed refreshes in a row</dt><dd>${m.failed_refreshes}</dd>
</dl>
${actions}
</section>`;
}

function tapeHistorySection(verificationId: string, history: readonly TapeSummary[], shownTapeId: string | undefined): string {
  const base = `/dashboard/verifications/${e(verificationId)}`;
  const rows = history.map((t) => {
    const shown = t.tape_id === shownTapeId;
    const link = `<a href="${base}?tape_id=${e(encodeURIComponent(t.tape_id))}#tape" class="mono"${shown ? ' aria-current="true"' : ''}>${e(t.tape_id)}</a>${
      shown ? ' <span class="hint">(shown below)</span>' : ''
    }`;
    return `<tr><td>${link}</td><td>${when(t.stored_at)}</td><td>${reasonOf(t.reason)}</td><td>${e(t.tier)}</td><td>${eur(t.max_advance_eur)}</td><td>${e(
      t.schema_version,
    )}</td><td>${t.latest ? 'latest' : '—'}</td></tr>`;
  });
  return `<section aria-labelledby="tape-history"><h2 id="tape-history">Tape history</h2>
<p class="hint">Every tape of this verification, newest first: the one made at completion, one per overlay attached, one per refresh.</p>
${table('Tape history', ['Tape', 'Stored', 'Reason', 'Tier', 'Maximum advance', 'Schema version', 'Latest'], rows, 'No tapes yet.')}
</section>`;
}

function incomeSection(figures: IncomeFigures): string {
  const chart = incomeChartSvg(figures, 'income-chart');
  return `<section aria-labelledby="monthly-income"><h2 id="monthly-income">Monthly income</h2>
${
  chart
    ? `<p class="hint">The income the latest tape was scored from, per platform and month, converted to euro.</p>
${chart}
${incomeTable(figures)}`
    : '<p>No monthly income was read for the latest tape.</p>'
}
</section>`;
}

const METRIC_NAMES: Record<string, string> = {
  monthly_revenue_avg_eur: 'Monthly revenue (€)',
  revenue_volatility_cv: 'Revenue volatility (CV)',
  platform_hhi: 'Platform concentration (HHI)',
  max_drawdown_pct: 'Largest drawdown (%)',
  income_stability_score: 'Income stability score',
  trend_slope_eur_per_month: 'Trend (€ per month)',
};

function benchmarkSection(benchmark: Benchmark): string {
  const rows = Object.entries(benchmark.metrics).map(
    ([name, m]) =>
      `<tr><th scope="row">${e(METRIC_NAMES[name] ?? name)}</th><td>${num(m.value)}</td><td>${m.percentile === null ? '—' : num(m.percentile, 0)}</td><td>${num(m.p25)}</td><td>${num(m.median)}</td><td>${num(m.p75)}</td></tr>`,
  );
  const source = benchmark.cohort.source === 'peers' ? `${benchmark.cohort.size}+ completed tapes of other lenders` : 'the reference population';
  return `<section aria-labelledby="benchmark"><h2 id="benchmark">Peer benchmark</h2>
<p>Against ${e(source)} for ${e(benchmark.cohort.product_type)}.</p>
${table('Peer benchmark', ['Metric', 'This creator', 'Percentile', '25th', 'Median', '75th'], rows, 'No metrics.')}</section>`;
}

export function verificationPage(
  viewer: Viewer,
  input: {
    verification: Verification;
    timeline: Timeline;
    tape: RiskTape200 | null;
    benchmark: Benchmark | null;
    versions: readonly string[];
    history: readonly TapeSummary[];
    /** Set when `tape` is one of the history's, not the latest. */
    earlier?: TapeSummary;
    income: IncomeFigures | null;
    notice?: string;
    error?: string;
  },
): string {
  const v = input.verification;
  const shownTapeId = input.earlier?.tape_id ?? input.history.find((t) => t.latest)?.tape_id;
  return page(
    viewer,
    'verifications',
    `Verification ${v.verification_id}`,
    `<p><a href="/dashboard/verifications">All verifications</a></p>
<h1>Verification <span class="mono">${e(v.verification_id)}</span></h1>
<dl class="facts">
<dt>Status</dt><dd>${e(v.status)}${v.failure_reason ? ` (${e(v.failure_reason)})` : ''}</dd>
<dt>Obligor reference</dt><dd>${e(v.obligor_reference)}</dd>
<dt>Product type</dt><dd>${e(v.product_type)}</dd>
<dt>Platforms</dt><dd>${v.platform_connections.map((c) => `${e(c.platform)}: ${e(c.status)}`).join('; ')}</dd>
<dt>Created</dt><dd>${when(v.created_at)}</dd>
<dt>Consent link expires</dt><dd>${when(v.expires_at)}</dd>
<dt>Completed</dt><dd>${when(v.completed_at)}</dd>
${v.status === 'pending_consent' ? `<dt>Consent link</dt><dd><a href="${e(v.consent_url)}" rel="noreferrer">${e(v.consent_url)}</a></dd>` : ''}
<dt>Monitoring</dt><dd>${v.monitoring ? `${v.monitoring.months} months, ${e(v.monitoring.state)}` : 'none: a one-time verification'}</dd>
</dl>
${input.error ? `<p class="error" role="alert">${e(input.error)}</p>` : ''}
${notice(input.notice)}
${v.monitoring ? monitoringSection(viewer, v.verification_id, v.monitoring) : ''}
${timelineSection(input.timeline)}
${input.history.length ? tapeHistorySection(v.verification_id, input.history, shownTapeId) : ''}
${input.tape ? tapeSection(v.verification_id, input.tape, input.versions, input.earlier) : `<section aria-labelledby="tape"><h2 id="tape">Risk Tape</h2><p>The tape exists once the verification is completed; it is ${e(v.status)}.</p></section>`}
${input.income ? incomeSection(input.income) : ''}
${input.benchmark ? benchmarkSection(input.benchmark) : ''}`,
  );
}

/** The step before stopping: what it does, and that it cannot be undone. */
export function stopMonitoringPage(viewer: Viewer, verification: Verification): string {
  const base = `/dashboard/verifications/${e(verification.verification_id)}`;
  return page(
    viewer,
    'verifications',
    `Stop monitoring ${verification.verification_id}`,
    `<p><a href="${base}">Back to the verification</a></p>
<h1>Stop monitoring verification <span class="mono">${e(verification.verification_id)}</span>?</h1>
<p>Obligor reference ${e(verification.obligor_reference)}.</p>
<ul>
<li>No refresh follows, scheduled or on demand, and the creator's access is revoked at the platforms.</li>
<li>The verification keeps its status and every tape it has; a <code>verification.monitoring_ended</code> event is sent.</li>
<li>Monitoring cannot be restarted: a new verification would ask the creator again.</li>
</ul>
<form method="post" action="${base}/monitoring/stop">${csrf(viewer)}<input type="hidden" name="confirm" value="yes">
<p><button type="submit" class="danger">Stop monitoring</button> <a href="${base}">Keep monitoring</a></p>
</form>`,
  );
}

// Webhooks

const stateOf = (w: Webhook) => (w.enabled ? 'enabled' : 'disabled');

function secretBox(label: string, secret: string): string {
  return `<p>${e(label)}</p><p class="secret" id="secret">${e(secret)}</p>`;
}

export function webhookListPage(
  viewer: Viewer,
  input: { data: Webhook[]; hasMore: boolean; events: readonly EventName[]; notice?: string; created?: { webhook: Webhook; secret: string } },
): string {
  const rows = input.data.map(
    (w) =>
      `<tr><td><a href="/dashboard/webhooks/${e(w.webhook_id)}">${e(w.url)}</a></td><td>${e(w.events.join(', '))}</td><td>${stateOf(w)}</td><td>${when(w.created_at)}</td></tr>`,
  );
  const last = input.data.at(-1);
  const created = input.created
    ? `<section aria-labelledby="created" class="notice"><h2 id="created">Endpoint created</h2>${secretBox(
        `Signing secret of ${input.created.webhook.url}. An admin can show it again from the endpoint's page.`,
        input.created.secret,
      )}</section>`
    : '';
  const form = isAdmin(viewer)
    ? `<section aria-labelledby="add"><h2 id="add">Add an endpoint</h2>
<form method="post" action="/dashboard/webhooks">${csrf(viewer)}
<p><label for="url">HTTPS URL</label><input id="url" name="url" type="url" required size="60" placeholder="https://example.com/webhooks"></p>
<fieldset><legend>Events</legend>
${input.events.map((name) => `<label><input type="checkbox" name="events" value="${e(name)}" checked> ${e(name)}</label>`).join('\n')}
</fieldset>
<button type="submit">Add endpoint</button>
</form></section>`
    : '<p class="hint">Viewers see endpoints and their deliveries; an admin adds, rotates, tests and replays.</p>';
  return page(
    viewer,
    'webhooks',
    'Webhooks',
    `<h1>Webhook endpoints</h1>
${notice(input.notice)}
${created}
${table('Webhook endpoints', ['URL', 'Events', 'State', 'Created'], rows, 'No endpoints yet.')}
${input.hasMore && last ? `<p><a href="/dashboard/webhooks?starting_after=${e(last.webhook_id)}">Next page</a></p>` : ''}
${form}`,
  );
}

export function webhookPage(
  viewer: Viewer,
  input: {
    webhook: Webhook;
    deliveries: Delivery[];
    hasMore: boolean;
    events: readonly EventName[];
    notice?: string;
    secret?: { label: string; value: string };
    test?: string;
  },
): string {
  const w = input.webhook;
  const base = `/dashboard/webhooks/${e(w.webhook_id)}`;
  const admin = isAdmin(viewer);
  const attempts = (d: Delivery) =>
    d.attempts.length === 0
      ? 'none yet'
      : `<ol>${d.attempts
          .map(
            (a) =>
              `<li>${when(a.attemptedAt)}: ${a.statusCode === null ? 'no answer' : `HTTP ${a.statusCode}`}, ${a.durationMs} ms${a.error ? `, ${e(a.error)}` : ''}${
                a.responseSnippet ? `<br><span class="mono">${e(a.responseSnippet)}</span>` : ''
              }</li>`,
          )
          .join('')}</ol>`;
  const rows = input.deliveries.map(
    (d) =>
      `<tr><td class="mono">${e(d.id)}${d.replayOf ? `<br><span class="hint">replay of ${e(d.replayOf)}</span>` : ''}</td><td>${e(d.eventName)}<br><a href="/dashboard/verifications/${e(d.verificationId)}" class="mono">${e(d.verificationId)}</a></td><td>${e(d.status)}${
        d.nextAttemptAt ? `<br><span class="hint">next ${when(d.nextAttemptAt)}</span>` : ''
      }</td><td>${attempts(d)}</td><td>${
        admin && d.status !== 'pending'
          ? `<form method="post" action="${base}/deliveries/${e(d.id)}/replay" class="inline">${csrf(viewer)}<button type="submit" aria-label="Replay delivery ${e(d.id)}">Replay</button></form>`
          : '—'
      }</td></tr>`,
  );
  const last = input.deliveries.at(-1);
  const actions = admin
    ? `<section aria-labelledby="manage"><h2 id="manage">Manage</h2>
<form method="post" action="${base}/secret">${csrf(viewer)}<button type="submit" class="secondary">Show signing secret</button></form>
<form method="post" action="${base}/rotate-secret">${csrf(viewer)}
<p><label for="overlap">Keep the current secret signing beside the new one for</label>
<select id="overlap" name="overlap_seconds"><option value="86400" selected>24 hours</option><option value="3600">1 hour</option><option value="604800">7 days</option><option value="0">no overlap</option></select>
<button type="submit">Rotate secret</button></p></form>
<form method="post" action="${base}/test">${csrf(viewer)}<button type="submit" class="secondary">Send a test event</button></form>
<form method="post" action="${base}/enabled">${csrf(viewer)}<input type="hidden" name="enabled" value="${w.enabled ? 'false' : 'true'}">${
        w.enabled
          ? '<button type="submit" class="secondary">Disable endpoint</button> <span class="hint">Events meanwhile are not delivered; pending deliveries wait.</span>'
          : '<button type="submit">Enable endpoint</button> <span class="hint">Held deliveries are sent at once.</span>'
      }</form>
<h3 id="edit">Edit</h3>
<form method="post" action="${base}/update" aria-labelledby="edit">${csrf(viewer)}
<p><label for="url">HTTPS URL</label><input id="url" name="url" type="url" required size="60" value="${e(w.url)}"></p>
<fieldset><legend>Events</legend>
${input.events.map((name) => `<label><input type="checkbox" name="events" value="${e(name)}"${w.events.includes(name) ? ' checked' : ''}> ${e(name)}</label>`).join('\n')}
</fieldset>
<button type="submit">Save changes</button>
</form>
<form method="post" action="${base}/delete">${csrf(viewer)}<button type="submit" class="danger">Delete endpoint</button></form>
</section>`
    : '';
  return page(
    viewer,
    'webhooks',
    `Webhook ${w.url}`,
    `<p><a href="/dashboard/webhooks">All endpoints</a></p>
<h1>Webhook endpoint</h1>
${notice(input.notice)}
${input.test ? `<p class="notice" role="status">${e(input.test)}</p>` : ''}
${input.secret ? `<section aria-labelledby="secret-title" class="notice"><h2 id="secret-title">Signing secret</h2>${secretBox(input.secret.label, input.secret.value)}</section>` : ''}
<dl class="facts">
<dt>URL</dt><dd>${e(w.url)}</dd>
<dt>Id</dt><dd class="mono">${e(w.webhook_id)}</dd>
<dt>Events</dt><dd>${e(w.events.join(', '))}</dd>
<dt>State</dt><dd>${w.enabled ? 'enabled' : 'disabled: events are not delivered, pending deliveries wait'}</dd>
<dt>Created</dt><dd>${when(w.created_at)}</dd>
<dt>Previous secret signs until</dt><dd>${when(w.previous_secret_expires_at)}</dd>
</dl>
${actions}
<section aria-labelledby="log"><h2 id="log">Delivery log</h2>
${table('Delivery log', ['Delivery', 'Event', 'Status', 'Attempts (status, latency, answer)', 'Replay'], rows, 'No deliveries yet.')}
${input.hasMore && last ? `<p><a href="${base}?starting_after=${e(last.id)}">Older deliveries</a></p>` : ''}
</section>`,
  );
}

// Account

export function accountPage(
  viewer: Viewer,
  input: {
    plan: { name: string; perMinute: number; burst: number; custom: boolean };
    keys: Array<ApiKeyRecord & { quota: { perMinute: number; burst: number }; usedThisMinute: number }>;
    users: DashboardUser[];
    notice?: string;
  },
): string {
  const keys = input.keys.map(
    (k) =>
      `<tr><td class="mono">${e(k.keyPrefix)}…</td><td>${e(k.role)}</td><td>${when(k.createdAt)}</td><td>${k.lastUsedAt ? when(k.lastUsedAt) : 'never'}</td><td>${
        k.revokedAt ? `revoked ${when(k.revokedAt)}` : 'active'
      }</td><td>${k.revokedAt ? '—' : `${k.usedThisMinute} of ${k.quota.perMinute}`}</td></tr>`,
  );
  const users = input.users.map((u) => `<tr><td>${e(u.email)}</td><td>${e(roleName(u.role))}</td><td>${when(u.createdAt)}</td></tr>`);
  return page(
    viewer,
    'account',
    'Account',
    `<h1>Account</h1>
<dl class="facts">
<dt>Lender</dt><dd>${e(viewer.lender.name)} <span class="mono">${e(viewer.lender.id)}</span></dd>
<dt>Plan</dt><dd>${e(input.plan.name)}</dd>
<dt>Rate limit</dt><dd>${input.plan.perMinute} requests per minute, bursts of ${input.plan.burst} per second${input.plan.custom ? ' (set for this account)' : ''}</dd>
<dt>Jurisdiction</dt><dd>${e(viewer.lender.jurisdiction)}</dd>
</dl>
<section aria-labelledby="keys"><h2 id="keys">API keys</h2>
<p class="hint">Shown by prefix only. Last use is recorded to the minute. Usage counts requests in the current minute's window. Keys are issued and revoked by your service operator.</p>
${table('API keys', ['Key', 'Role', 'Created', 'Last used', 'State', 'This minute'], keys, 'No API keys.')}
</section>
<section aria-labelledby="people"><h2 id="people">Dashboard users</h2>
${table('Dashboard users', ['Email', 'Role', 'Created'], users, 'No users.')}
</section>
${returnOriginsSection(viewer, input.notice)}`,
  );
}

/** The origins a creation's `return_url` may lead to: listed for everyone, changed by an admin. */
function returnOriginsSection(viewer: Viewer, notice: string | undefined): string {
  const origins = viewer.lender.returnOrigins;
  const list =
    origins.length === 0
      ? '<p>None: a creation that gives a <code>return_url</code> is refused.</p>'
      : `<ul>${origins.map((o) => `<li class="mono">${e(o)}</li>`).join('')}</ul>`;
  const form = isAdmin(viewer)
    ? `<form method="post" action="/dashboard/account/return-origins">${csrf(viewer)}
<p><label for="return-origins">Origins, one per line</label><textarea id="return-origins" name="origins" rows="4" cols="50" placeholder="https://app.example.com">${e(origins.join('\n'))}</textarea></p>
<button type="submit">Save return origins</button>
</form>`
    : '<p class="hint">An admin changes them.</p>';
  return `<section aria-labelledby="return-origins-title"><h2 id="return-origins-title">Return origins</h2>
${notice ? `<p class="notice" role="status">${e(notice)}</p>` : ''}
<p class="hint">Where the creator's pages may send the creator back to after consent: a verification's <code>return_url</code> must start with one of these origins (https; http only on localhost).</p>
${list}
${form}
</section>`;
}

const roleName = (role: DashboardRole) => (role === 'admin' ? 'admin (changes, secrets)' : 'viewer (reads)');
