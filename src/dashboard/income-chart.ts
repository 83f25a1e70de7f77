import { escapeHtml as e } from '../platform/html.ts';

// The verification page's income chart: plain data in, markup out, so it is tested without a
// server. Inline SVG rather than a charting library: the dashboard loads nothing from elsewhere and
// runs no script. Its CSP (style-src 'self') blocks `style` attributes, so the drawing uses SVG
// presentation attributes (fill, stroke, font-size), which are markup, and the stylesheet sizes it.

/** One platform's monthly figures as the tape was scored from them; a month may occur more than once. */
export interface IncomeSeries {
  platform: string;
  months: ReadonlyArray<{ month: string; amountEur: number | null }>;
}

/** The figures on a common month axis, oldest first; null where a platform has no euro figure. */
export interface IncomeFigures {
  months: string[];
  platforms: Array<{ platform: string; amounts: Array<number | null> }>;
}

const MONTH = /^(\d{4})-(0[1-9]|1[0-2])$/;
const MONTH_NAMES = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
/** Dark enough for 3:1 against white (WCAG 1.4.11); blue and orange stay apart for red-green colour blindness. */
const COLOURS = ['#0b5cad', '#b35c00', '#1b7f3b', '#7a3e9d', '#a4262c', '#3d434b'];
/** A gap longer than this is not filled month by month: such data is not a creator's history. */
const MAX_FILLED_MONTHS = 240;

const cents = (n: number) => Math.round(n * 100) / 100;

/** Every month from the first to the last, so a month without figures keeps its place on the axis. */
function monthAxis(seen: readonly string[]): string[] {
  const sorted = [...new Set(seen)].sort();
  if (sorted.length < 2 || !sorted.every((m) => MONTH.test(m))) return sorted;
  const index = (m: string) => Number(m.slice(0, 4)) * 12 + Number(m.slice(5, 7)) - 1;
  const first = index(sorted[0]!);
  const span = index(sorted.at(-1)!) - first + 1;
  if (span > MAX_FILLED_MONTHS) return sorted;
  return Array.from({ length: span }, (_, i) => `${Math.floor((first + i) / 12)}-${String(((first + i) % 12) + 1).padStart(2, '0')}`);
}

/**
 * Adds up each platform's figures per month, as the tape engine does. A figure without a euro rate
 * counts for nothing (the engine leaves it out too); a month with none converted stays null rather
 * than reading as zero income.
 */
export function incomeFigures(series: readonly IncomeSeries[]): IncomeFigures {
  const withData = series.filter((s) => s.months.length > 0);
  const months = monthAxis(withData.flatMap((s) => s.months.map((m) => m.month)));
  const position = new Map(months.map((m, i) => [m, i]));
  return {
    months,
    platforms: withData.map((s) => {
      const amounts: Array<number | null> = months.map(() => null);
      for (const { month, amountEur } of s.months) {
        const at = position.get(month)!;
        if (amountEur !== null && Number.isFinite(amountEur)) amounts[at] = cents((amounts[at] ?? 0) + amountEur);
      }
      return { platform: s.platform, amounts };
    }),
  };
}

/** `€1,234.50`, `−€20` (a true minus sign, which screen readers say). */
export function euro(n: number, digits = 2): string {
  const figure = Math.abs(n).toLocaleString('en-GB', { minimumFractionDigits: digits, maximumFractionDigits: digits });
  return `${n < 0 ? '−' : ''}€${figure}`;
}

/** `Mar 2026`; anything that is not `YYYY-MM` as it came. */
export function monthName(month: string): string {
  const m = MONTH.exec(month);
  return m ? `${MONTH_NAMES[Number(m[2]) - 1]} ${m[1]}` : month;
}

/** A step of 1, 2, 2.5 or 5 times a power of ten that cuts `span` into about `count` parts. */
export function niceStep(span: number, count = 4): number {
  const raw = span / count;
  const power = 10 ** Math.floor(Math.log10(raw));
  const f = raw / power;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 2.5 ? 2.5 : f <= 5 ? 5 : 10) * power;
}

/** The value axis: from zero or below to zero or above, in whole steps; all-zero data gets €0 to €100. */
export function valueScale(values: readonly number[]): { min: number; max: number; step: number; ticks: number[] } {
  let low = Math.min(0, ...values);
  let high = Math.max(0, ...values);
  if (high === low) high = low + 100;
  const step = niceStep(high - low);
  low = Math.floor(low / step) * step;
  high = Math.ceil(high / step) * step;
  const count = Math.round((high - low) / step);
  const ticks = Array.from({ length: count + 1 }, (_, i) => cents(low + i * step));
  return { min: cents(low), max: cents(high), step, ticks };
}

const WIDTH = 720;
const HEIGHT = 340;
const PLOT = { left: 84, right: WIDTH - 16, top: 36, bottom: 250 };
const at = (n: number) => String(Math.round(n * 10) / 10);

/**
 * Grouped bars, one group per month and one bar per platform, with the value axis in euro, the
 * months below, and a legend. `id` prefixes the ids the accessible name and description refer to.
 * Empty when there is nothing to draw.
 */
export function incomeChartSvg(figures: IncomeFigures, id: string): string {
  const { months, platforms } = figures;
  const values = platforms.flatMap((p) => p.amounts.filter((a): a is number => a !== null));
  if (months.length === 0 || platforms.length === 0) return '';
  const scale = valueScale(values);
  const y = (v: number) => PLOT.bottom - ((v - scale.min) / (scale.max - scale.min)) * (PLOT.bottom - PLOT.top);
  const slot = (PLOT.right - PLOT.left) / months.length;
  const barWidth = (slot * 0.8) / platforms.length;
  const tickDigits = scale.step < 1 ? 2 : 0;

  const grid = scale.ticks.map(
    (t) =>
      `<line x1="${PLOT.left}" x2="${PLOT.right}" y1="${at(y(t))}" y2="${at(y(t))}" stroke="${t === 0 ? '#1a1d21' : '#d5d9de'}" stroke-width="1"/>` +
      `<text x="${PLOT.left - 8}" y="${at(y(t) + 4)}" text-anchor="end">${e(euro(t, tickDigits))}</text>`,
  );
  // Every month is labelled while the labels fit; beyond 24 every second or third one.
  const every = Math.ceil(months.length / 24);
  const labels = months.map((m, i) => {
    if (i % every !== 0) return '';
    const x = at(PLOT.left + (i + 0.5) * slot);
    const parsed = MONTH.exec(m);
    if (!parsed) return `<text x="${x}" y="${PLOT.bottom + 18}" text-anchor="middle">${e(m)}</text>`;
    const withYear = i === 0 || parsed[2] === '01';
    return `<text x="${x}" y="${PLOT.bottom + 18}" text-anchor="middle">${MONTH_NAMES[Number(parsed[2]) - 1]}${
      withYear ? `<tspan x="${x}" dy="14">${parsed[1]}</tspan>` : ''
    }</text>`;
  });
  const bars = platforms.flatMap((p, pi) =>
    p.amounts.flatMap((amount, mi) => {
      if (amount === null) return [];
      const top = Math.min(y(amount), y(0));
      const x = PLOT.left + mi * slot + slot * 0.1 + pi * barWidth;
      return [
        `<rect x="${at(x)}" y="${at(top)}" width="${at(barWidth)}" height="${at(Math.abs(y(amount) - y(0)))}" fill="${COLOURS[pi % COLOURS.length]}"><title>${e(
          `${p.platform}, ${monthName(months[mi]!)}: ${euro(amount)}`,
        )}</title></rect>`,
      ];
    }),
  );
  const legend = platforms.map((p, pi) => {
    const x = PLOT.left + pi * 150;
    return `<rect x="${x}" y="${HEIGHT - 22}" width="12" height="12" fill="${COLOURS[pi % COLOURS.length]}"/><text x="${x + 18}" y="${HEIGHT - 12}">${e(p.platform)}</text>`;
  });
  const range = values.length ? `; from ${euro(Math.min(...values))} to ${euro(Math.max(...values))} a month` : '; no figure has a euro amount';
  const description = `Bars per month, one per platform (${platforms.map((p) => p.platform).join(', ')}), ${monthName(months[0]!)} to ${monthName(
    months.at(-1)!,
  )}${range}. The table after the chart gives every figure.`;
  return `<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="${WIDTH}" height="${HEIGHT}" viewBox="0 0 ${WIDTH} ${HEIGHT}" role="img" aria-labelledby="${e(id)}-title ${e(id)}-desc" font-size="12" fill="#1a1d21">
<title id="${e(id)}-title">Monthly income per platform, in euro</title>
<desc id="${e(id)}-desc">${e(description)}</desc>
<text x="${PLOT.left}" y="${PLOT.top - 14}" font-weight="600">€ per month</text>
${grid.join('\n')}
${bars.join('\n')}
${labels.join('')}
<text x="${PLOT.right}" y="${PLOT.bottom + 46}" text-anchor="end" font-weight="600">Month</text>
${legend.join('')}
</svg>`;
}

/** The chart's figures as a table, for screen readers, print, and anyone who wants the numbers. */
export function incomeTable(figures: IncomeFigures): string {
  const { months, platforms } = figures;
  if (months.length === 0 || platforms.length === 0) return '';
  const cell = (n: number | null) => `<td>${n === null ? '—' : e(euro(n))}</td>`;
  const rows = months.map((m, i) => {
    const known = platforms.map((p) => p.amounts[i]!).filter((a): a is number => a !== null);
    const total = known.length ? cents(known.reduce((sum, a) => sum + a, 0)) : null;
    const each = platforms.length > 1 ? [...platforms.map((p) => p.amounts[i]!), total] : [total];
    return `<tr><th scope="row">${e(monthName(m))}</th>${each.map(cell).join('')}</tr>`;
  });
  const columns = platforms.length > 1 ? [...platforms.map((p) => p.platform), 'All platforms'] : [platforms[0]!.platform];
  return `<div class="table" role="region" aria-label="Monthly income table" tabindex="0"><table>
<caption>Monthly income per platform, in euro; — where a month has no figure in euro</caption>
<thead><tr><th scope="col">Month</th>${columns.map((c) => `<th scope="col">${e(c)}</th>`).join('')}</tr></thead>
<tbody>
${rows.join('\n')}
</tbody>
</table></div>`;
}
