import assert from 'node:assert/strict';
import { computeTape } from './compute-tape.ts';
import { PRODUCT_TYPES, SCHEMA_VERSIONS, type SchemaVersion } from './income.ts';
import { renderableVersions, renderTape, TapeVersionUnsupported } from './render.ts';
import { syntheticTapeInput } from './synthetic-creators.ts';
import { NOW, schemaErrors } from '../../test/support/tape.ts';

const base = { now: NOW, verificationId: 'vrf_test0001' };
const declared = computeTape(syntheticTapeInput('demo_prime_multi', { ...base, declaredMonthlyObligationsEur: 1500 }), { now: NOW });
const plain = computeTape(syntheticTapeInput('short_history_5mo', base), { now: NOW });

describe('tape/render', () => {
  it('renders at every version a tape valid against that version', () => {
    for (const tape of [declared, plain])
      for (const version of SCHEMA_VERSIONS) {
        const rendered = renderTape(tape, version);
        assert.equal(rendered.schema_version, version);
        assert.equal(schemaErrors(rendered, version), '', `${tape.obligor_reference} at ${version}`);
      }
  });

  it('leaves out what a version does not know, and nothing else', () => {
    const keys = (v: SchemaVersion) => Object.keys(renderTape(declared, v));
    assert.ok(!keys('1.0.0').includes('affordability') && keys('1.1.0').includes('affordability'));
    assert.ok(!keys('1.1.0').includes('jurisdiction_profile') && keys('1.2.0').includes('overlay_blocks'));
    assert.deepEqual(
      Object.keys(declared.eligibility).filter((k) => !(k in renderTape(declared, '1.2.0').eligibility)),
      ['income_capacity_annual', 'recommended_monthly_ceiling_pct', 'income_stability_score', 'income_trend'],
    );
    const { schema_version: _a, ...old } = renderTape(declared, '1.0.0');
    const { schema_version: _b, ...current } = declared;
    assert.deepEqual(old.cashflow_summary, current.cashflow_summary);
    assert.deepEqual(old.risk_profile, current.risk_profile);
  });

  it('keeps only the ND codes of fields the version has; the score does not move', () => {
    const codesAt = (v: SchemaVersion) => renderTape(plain, v).data_quality.nd_codes;
    assert.ok(codesAt('2.0.0').includes('ND_INCOME_TREND_UNDEFINED'));
    assert.ok(!codesAt('1.2.0').includes('ND_INCOME_TREND_UNDEFINED'));
    assert.ok(codesAt('1.1.0').includes('ND_AFFORDABILITY_NOT_DECLARED'));
    assert.ok(!codesAt('1.0.0').includes('ND_AFFORDABILITY_NOT_DECLARED'));
    assert.ok(codesAt('1.0.0').includes('ND_HISTORY_UNDER_12_MONTHS'));
    for (const v of SCHEMA_VERSIONS) assert.equal(renderTape(plain, v).data_quality.score, plain.data_quality.score);
  });

  it('refuses to render a 2.0.0 product type at 1.x with a typed error', () => {
    const murabaha = computeTape(syntheticTapeInput('demo_prime_multi', { ...base, productType: 'murabaha' }), { now: NOW });
    assert.equal(schemaErrors(renderTape(murabaha, '2.0.0'), '2.0.0'), '');
    for (const version of ['1.0.0', '1.1.0', '1.2.0'] as const)
      assert.throws(
        () => renderTape(murabaha, version),
        (e: unknown) => e instanceof TapeVersionUnsupported && e.productType === 'murabaha' && e.version === version && /added in 2\.0\.0/.test(e.message),
      );
    assert.throws(() => renderTape(plain, '3.0.0' as SchemaVersion), RangeError);
  });

  it('names, for each product type, exactly the versions its tape renders at', () => {
    for (const productType of PRODUCT_TYPES) {
      const tape = computeTape(syntheticTapeInput('demo_prime_multi', { ...base, productType }), { now: NOW });
      const renders = SCHEMA_VERSIONS.filter((version) => {
        try {
          renderTape(tape, version);
          return true;
        } catch (error) {
          if (error instanceof TapeVersionUnsupported) return false;
          throw error;
        }
      });
      assert.deepEqual(renderableVersions(productType), renders, productType);
    }
    assert.deepEqual(renderableVersions('hpp'), ['2.0.0']);
    assert.deepEqual(renderableVersions('rbf'), SCHEMA_VERSIONS);
  });

  it('does not change the tape it renders', () => {
    const before = structuredClone(declared);
    for (const version of SCHEMA_VERSIONS) renderTape(declared, version);
    assert.deepEqual(declared, before);
  });
});
