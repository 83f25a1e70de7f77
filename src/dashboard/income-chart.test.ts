import assert from 'node:assert/strict';
import { euro, incomeChartSvg, incomeFigures, incomeTable, monthName, niceStep, valueScale, type IncomeSeries } from './income-chart.ts';

const series = (platform: string, figures: Array<[string, number | null]>): IncomeSeries => ({
  platform,
  months: figures.map(([month, amountEur]) => ({ month, amountEur })),
});

/** The bars of a chart: their box, colour and tooltip. */
const barsOf = (svg: string) =>
  [...svg.matchAll(/<rect x="([\d.]+)" y="([\d.]+)" width="([\d.]+)" height="([\d.]+)" fill="(#[0-9a-f]+)"><title>([^<]*)<\/title><\/rect>/g)].map((m) => ({
    x: Number(m[1]),
    y: Number(m[2]),
    width: Number(m[3]),
    height: Number(m[4]),
    fill: m[5]!,
    title: m[6]!,
  }));
const tickLabelsOf = (svg: string) => [...svg.matchAll(/<text x="76" y="[\d.]+" text-anchor="end">([^<]*)<\/text>/g)].map((m) => m[1]);
/** y of the dark zero line. */
const zeroLineOf = (svg: string) => Number(/<line x1="84" x2="704" y1="([\d.]+)" y2="[\d.]+" stroke="#1a1d21"/.exec(svg)?.[1]);

describe('income chart (inline SVG and its table)', () => {
  it('scales: nice steps of 1, 2, 2.5 or 5 times a power of ten, from zero or below to zero or above', () => {
    assert.equal(niceStep(3000), 1000);
    assert.equal(niceStep(800), 200);
    assert.equal(niceStep(1000), 250);
    assert.equal(niceStep(2), 0.5);
    assert.deepEqual(valueScale([1200, 2900]), { min: 0, max: 3000, step: 1000, ticks: [0, 1000, 2000, 3000] });
    assert.deepEqual(valueScale([-150, 420]), { min: -200, max: 600, step: 200, ticks: [-200, 0, 200, 400, 600] });
    assert.deepEqual(valueScale([-40, -10]), { min: -40, max: 0, step: 10, ticks: [-40, -30, -20, -10, 0] });
    assert.deepEqual(valueScale([0, 0]).ticks, [0, 25, 50, 75, 100], 'all zero: a scale still');
    assert.deepEqual(valueScale([]).ticks, [0, 25, 50, 75, 100]);
  });

  it('adds up the figures of one month, keeps a month without a euro figure empty, and fills the months between', () => {
    const figures = incomeFigures([
      series('youtube', [
        ['2026-03', 100],
        ['2026-01', 50.1],
        ['2026-01', 20.2],
        ['2026-04', null],
      ]),
      series('stripe', []),
    ]);
    assert.deepEqual(figures, {
      months: ['2026-01', '2026-02', '2026-03', '2026-04'],
      platforms: [{ platform: 'youtube', amounts: [70.3, null, 100, null] }],
    });
    // Across a year's end.
    assert.deepEqual(
      incomeFigures([
        series('stripe', [
          ['2026-02', 1],
          ['2025-11', 2],
        ]),
      ]).months,
      ['2025-11', '2025-12', '2026-01', '2026-02'],
    );
  });

  it('labels the value axis in euro and the months below, with the year on the first month and on January', () => {
    const svg = incomeChartSvg(
      incomeFigures([
        series('youtube', [
          ['2025-11', 1200],
          ['2025-12', 2900],
          ['2026-01', 2000],
        ]),
      ]),
      'c',
    );
    assert.deepEqual(tickLabelsOf(svg), ['€0', '€1,000', '€2,000', '€3,000']);
    assert.match(svg, />Nov<tspan x="[\d.]+" dy="14">2025<\/tspan><\/text>/);
    assert.match(svg, />Dec<\/text>/);
    assert.match(svg, />Jan<tspan x="[\d.]+" dy="14">2026<\/tspan><\/text>/);
    assert.match(svg, /€ per month/);
    assert.match(svg, />Month</);
    // Bars grow from the zero line in proportion: €3,000 is the full plot height (36 to 250).
    const [nov, dec] = barsOf(svg);
    assert.equal(zeroLineOf(svg), 250);
    assert.ok(Math.abs(dec!.y - (250 - (2900 / 3000) * 214)) < 0.1);
    assert.ok(Math.abs(dec!.height - (2900 / 3000) * 214) < 0.1);
    assert.ok(Math.abs(nov!.height - (1200 / 3000) * 214) < 0.1);
    assert.equal(nov!.title, 'youtube, Nov 2025: €1,200.00');
  });

  it('is an image with an accessible name and description, and a legend', () => {
    const svg = incomeChartSvg(incomeFigures([series('youtube', [['2026-01', 10]])]), 'income-chart');
    assert.match(svg, /^<svg [^>]*role="img" aria-labelledby="income-chart-title income-chart-desc"/);
    assert.match(svg, /<title id="income-chart-title">Monthly income per platform, in euro<\/title>/);
    assert.match(svg, /<desc id="income-chart-desc">Bars per month, one per platform \(youtube\), Jan 2026 to Jan 2026; from €10.00 to €10.00 a month\./);
    assert.match(svg, /<rect x="84" y="318" width="12" height="12" fill="#0b5cad"\/><text x="102" y="328">youtube<\/text>/);
    assert.doesNotMatch(svg, /style=|<script/i, 'no style attribute (the CSP blocks it) and no script');
  });

  it('draws nothing and tabulates nothing without data', () => {
    for (const data of [[], [series('youtube', [])]]) {
      assert.equal(incomeChartSvg(incomeFigures(data), 'c'), '');
      assert.equal(incomeTable(incomeFigures(data)), '');
    }
  });

  it('draws one month as one group filling the width', () => {
    const svg = incomeChartSvg(incomeFigures([series('youtube', [['2026-05', 500]])]), 'c');
    const [bar] = barsOf(svg);
    assert.equal(barsOf(svg).length, 1);
    assert.equal(bar!.x, 84 + 62);
    assert.equal(bar!.width, 620 * 0.8);
    assert.match(svg, />May<tspan x="394" dy="14">2026<\/tspan>/);
  });

  it('draws a negative amount below the zero line and a zero amount as no height; a missing one as no bar', () => {
    const svg = incomeChartSvg(
      incomeFigures([
        series('stripe', [
          ['2026-01', -150],
          ['2026-02', 0],
          ['2026-03', 420],
          ['2026-04', null],
        ]),
      ]),
      'c',
    );
    assert.deepEqual(tickLabelsOf(svg), ['−€200', '€0', '€200', '€400', '€600']);
    const zero = zeroLineOf(svg);
    assert.equal(zero, 250 - (200 / 800) * 214);
    const bars = barsOf(svg);
    assert.deepEqual(
      bars.map((b) => b.title),
      ['stripe, Jan 2026: −€150.00', 'stripe, Feb 2026: €0.00', 'stripe, Mar 2026: €420.00'],
    );
    assert.equal(bars[0]!.y, zero, 'a negative bar hangs from the zero line');
    assert.ok(Math.abs(bars[0]!.height - (150 / 800) * 214) < 0.1);
    assert.equal(bars[1]!.height, 0);
    assert.ok(bars[2]!.y < zero);
    assert.match(incomeTable(incomeFigures([series('stripe', [['2026-01', -150]])])), /<td>−€150.00<\/td>/);
  });

  it('groups two platforms side by side in their colours, with a legend entry and a table column each, and a total', () => {
    const figures = incomeFigures([
      series('youtube', [
        ['2026-01', 1000],
        ['2026-02', 1100],
      ]),
      series('stripe', [
        ['2026-01', 400],
        ['2026-02', null],
      ]),
    ]);
    const svg = incomeChartSvg(figures, 'c');
    const bars = barsOf(svg);
    assert.deepEqual(
      bars.map((b) => [b.fill, b.title]),
      [
        ['#0b5cad', 'youtube, Jan 2026: €1,000.00'],
        ['#0b5cad', 'youtube, Feb 2026: €1,100.00'],
        ['#b35c00', 'stripe, Jan 2026: €400.00'],
      ],
    );
    const [youtubeJan, , stripeJan] = bars;
    assert.equal(stripeJan!.x, youtubeJan!.x + youtubeJan!.width, 'side by side in the month');
    assert.match(svg, /<text x="[\d.]+" y="328">youtube<\/text>.*<text x="[\d.]+" y="328">stripe<\/text>/s);
    const table = incomeTable(figures);
    assert.match(table, /<caption>Monthly income per platform, in euro/);
    assert.match(table, /<th scope="col">Month<\/th><th scope="col">youtube<\/th><th scope="col">stripe<\/th><th scope="col">All platforms<\/th>/);
    assert.match(table, /<tr><th scope="row">Jan 2026<\/th><td>€1,000.00<\/td><td>€400.00<\/td><td>€1,400.00<\/td><\/tr>/);
    assert.match(table, /<tr><th scope="row">Feb 2026<\/th><td>€1,100.00<\/td><td>—<\/td><td>€1,100.00<\/td><\/tr>/);
  });

  it('escapes every name and month it is given', () => {
    const figures = incomeFigures([series('<b>"x"&', [['<i>', 5]])]);
    const markup = incomeChartSvg(figures, '"id') + incomeTable(figures);
    assert.ok(!markup.includes('<b>') && !markup.includes('<i>') && !markup.includes('""'));
    assert.match(markup, /&lt;b&gt;&quot;x&quot;&amp;/);
    assert.match(markup, /aria-labelledby="&quot;id-title &quot;id-desc"/);
  });

  it('formats euro amounts and months', () => {
    assert.equal(euro(1234.5), '€1,234.50');
    assert.equal(euro(-20, 0), '−€20');
    assert.equal(monthName('2026-12'), 'Dec 2026');
    assert.equal(monthName('2026-13'), '2026-13');
  });
});
