// docs/scoring.md is what a credit team recomputes tapes from: its tables must say what the engine does.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ND_CATALOGUE, TIER_A_FIELDS } from './data-quality.ts';
import { policyKeys } from './eligibility/policy.ts';
import { SCREENING_RULES, SCREENING_TYPES } from './eligibility/screening.ts';
import { PRODUCT_TYPES } from './income.ts';
import { METRIC_RULES } from './metrics.ts';
import { ROOT } from '../../test/support/tape.ts';

const doc = readFileSync(join(ROOT, 'docs/scoring.md'), 'utf8');

/** Rows of the markdown table whose header row starts with `header`, cells trimmed and unquoted. */
function table(header: string): string[][] {
  const lines = doc.split('\n');
  const start = lines.findIndex((l) => l.startsWith(header));
  assert.ok(start >= 0, `table "${header}" in docs/scoring.md`);
  const rows: string[][] = [];
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith('|')) break;
    rows.push(
      line
        .slice(1, -1)
        .split('|')
        .map((c) => c.trim().replace(/`/g, '')),
    );
  }
  return rows;
}

describe('tape/docs/scoring.md', () => {
  it('lists every policy key with its range and each product default', () => {
    const expected = new Map<string, string[]>();
    for (const productType of PRODUCT_TYPES)
      for (const [key, s] of Object.entries(policyKeys(productType)))
        expected.set(key, [key, `${s.min} to ${s.max}${s.integer ? ', whole' : ''}`, ...PRODUCT_TYPES.map((p) => String(policyKeys(p)[key]?.default ?? '-'))]);
    assert.deepEqual(table('| Key | Range |'), [...expected.values()]);
    const meanings = table('| Key | Meaning |');
    for (const [key] of expected)
      assert.equal(meanings.find((r) => r[0] === key)?.[1], policyKeys(PRODUCT_TYPES.find((p) => key in policyKeys(p))!)[key]!.description, key);
    assert.equal(meanings.length, expected.size);
  });

  it('lists the Tier A fields with their weights', () => {
    assert.deepEqual(
      table('| Tier A field |'),
      Object.entries(TIER_A_FIELDS).map(([field, s]) => [field, String(s.weight), s.description]),
    );
  });

  it('lists the ND code catalogue', () => {
    assert.deepEqual(
      table('| Code | Field |'),
      Object.entries(ND_CATALOGUE).map(([code, s]) => [code, s.field, s.tierA.join(', ') || 'none', s.since, s.message]),
    );
  });

  it('lists the verdicts each screening overlay reads, its flags and its limit', () => {
    assert.deepEqual(
      table('| Overlay type | Favourable verdicts |'),
      SCREENING_TYPES.map((type) => {
        const r = SCREENING_RULES[type];
        return [type, r.favourable.join(', '), r.adverse.join(', '), r.adverseFlag.code, r.adverseFlag.limit, r.reviewFlag.code];
      }),
    );
  });

  it('names every flag and covenant code the engine can emit', () => {
    const dir = join(ROOT, 'src/tape/eligibility');
    const codes = new Set(readdirSync(dir).flatMap((f) => [...readFileSync(join(dir, f), 'utf8').matchAll(/code: '([A-Z_]+)'/g)].map((m) => m[1]!)));
    assert.ok(codes.size > 25);
    for (const code of codes) assert.ok(doc.includes(`\`${code}\``), code);
  });

  it('states the stability weights and metric thresholds the engine uses', () => {
    const w = METRIC_RULES.stability.weights;
    const f = (x: number) => x.toFixed(2);
    assert.ok(doc.includes(`S = R4(${f(w.volatility)} V + ${f(w.drawdown)} D + ${f(w.history)} H + ${f(w.trend)} G + ${f(w.diversification)} C)`));
    assert.ok(doc.includes(`min(n, ${METRIC_RULES.stability.fullHistoryMonths}) / ${METRIC_RULES.stability.fullHistoryMonths}`));
    assert.ok(doc.includes(`c ≥ ${METRIC_RULES.trend3mChange.toFixed(2)}`) && doc.includes(`when \`n < ${METRIC_RULES.trend3mMinMonths}\``));
    assert.ok(doc.includes(`g ≥ ${METRIC_RULES.incomeTrendPctPerMonth}\``));
    assert.ok(doc.includes(`the last \`w = min(n, ${METRIC_RULES.windowMonths})\` months`));
  });

  it('shows the golden tapes as they are', () => {
    const rows = table('| Reference | Platforms |');
    assert.equal(rows.length, readdirSync(join(ROOT, 'spec/examples/tapes')).length);
    for (const row of rows) {
      const t = JSON.parse(readFileSync(join(ROOT, 'spec/examples/tapes', `${row[0]}.json`), 'utf8'));
      const flags = t.eligibility.flags.map((x: { code: string }) => x.code).join(', ') || 'none';
      const r = t.risk_profile;
      assert.deepEqual(
        row.slice(1),
        [
          t.platforms.join(', '),
          t.cashflow_summary.months_observed,
          t.cashflow_summary.monthly_revenue_avg_eur,
          r.revenue_volatility_cv,
          r.max_drawdown_pct,
          r.platform_hhi,
          r.trend_slope_eur_per_month,
          t.eligibility.income_stability_score,
          t.eligibility.tier,
          flags,
          t.eligibility.max_advance_eur,
          t.data_quality.score,
        ].map(String),
        row[0],
      );
    }
  });
});
