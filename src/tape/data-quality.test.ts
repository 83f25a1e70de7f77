import assert from 'node:assert/strict';
import { computeTape } from './compute-tape.ts';
import { ND_CATALOGUE, TIER_A_FIELDS } from './data-quality.ts';
import { input, NOW, platform } from '../../test/support/tape.ts';

const weights = Object.values(TIER_A_FIELDS).map((f) => f.weight);

describe('tape/data-quality', () => {
  it('Tier A weights add up to 100, and every Tier A field can be emptied by some ND code', () => {
    assert.equal(
      weights.reduce((a, b) => a + b, 0),
      100,
    );
    for (const field of Object.keys(TIER_A_FIELDS))
      assert.ok(
        Object.values(ND_CATALOGUE).some((s) => (s.tierA as readonly string[]).includes(field)),
        field,
      );
  });

  it('a tape without data scores 0 with an ND code for every Tier A field', () => {
    const t = computeTape(input([platform('youtube', []), platform('stripe', [], { status: 'error' })]), { now: NOW });
    const dq = t.data_quality;
    assert.deepEqual([dq.score, dq.tier_a_fields_complete, dq.tier_a_fields_total], [0, 0, 10]);
    assert.deepEqual(
      t.platform_connections.map((c) => c.nd_codes),
      [['ND_PLATFORM_NO_DATA'], ['ND_PLATFORM_ERROR']],
    );
    assert.deepEqual(
      dq.nd_code_summary.slice(0, 2).map((e) => e.field),
      ['platform_connections[youtube]', 'platform_connections[stripe]'],
    );
    for (const code of [
      'ND_NO_REVENUE_DATA',
      'ND_CV_INSUFFICIENT_HISTORY',
      'ND_DRAWDOWN_INSUFFICIENT_HISTORY',
      'ND_HHI_NO_POSITIVE_REVENUE',
      'ND_TREND_3M_INSUFFICIENT_HISTORY',
    ])
      assert.ok(dq.nd_codes.includes(code), code);
    assert.equal(t.as_of_date, '2026-10-31');
  });

  it('scores the weights of the complete fields', () => {
    // 5 months: no 12-month total (15) and no trend_3m (5)
    const short = computeTape(input([platform('youtube', [100, 100, 100, 100, 100])]), { now: NOW });
    assert.equal(short.data_quality.score, 80);
    assert.equal(short.data_quality.tier_a_fields_complete, 8);
    // a second platform in a currency without a rate: connections (20) and conversion (10) incomplete
    const t = computeTape(input([platform('youtube', Array(12).fill(100)), platform('stripe', Array(12).fill(50), { currency: 'XAU' })]), {
      now: NOW,
    });
    assert.equal(t.data_quality.score, 70);
    assert.deepEqual(t.platform_connections[1]!.nd_codes, ['ND_PLATFORM_NO_DATA', 'ND_CURRENCY_UNCONVERTIBLE']);
    assert.equal(t.platform_connections[1]!.source_currency, 'XAU');
    assert.ok(t.eligibility.flags.some((f) => f.code === 'CURRENCY_UNCONVERTIBLE' && f.message.startsWith('12 figure(s) from stripe')));
  });

  it('distinguishes a negative average from too short a history', () => {
    const t = computeTape(input([platform('stripe', [-10, -20, -5])]), { now: NOW });
    assert.ok(t.data_quality.nd_codes.includes('ND_CV_NONPOSITIVE_MEAN'));
    assert.ok(t.data_quality.nd_codes.includes('ND_DRAWDOWN_NO_POSITIVE_PEAK'));
    assert.ok(!t.data_quality.nd_codes.includes('ND_TREND_INSUFFICIENT_HISTORY'));
    assert.equal(t.eligibility.flags.find((f) => f.code === 'LOW_REVENUE')?.message, 'Average monthly revenue EUR -11.67 is not positive.');
  });
});
