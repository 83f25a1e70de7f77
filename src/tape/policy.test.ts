import assert from 'node:assert/strict';
import { computeTape } from './compute-tape.ts';
import { PolicyOverrideError, policyKeys, validatePolicyOverrides } from './eligibility/policy.ts';
import { PRODUCT_TYPES } from './income.ts';
import { input, NOW, platform } from '../../test/support/tape.ts';

function refusal(productType: string, overrides: unknown) {
  const result = validatePolicyOverrides(productType, overrides);
  assert.equal(result.ok, false, `expected ${JSON.stringify(overrides)} to be refused`);
  return (result as { error: PolicyOverrideError }).error;
}

describe('tape/eligibility/policy', () => {
  it('accepts no overrides for every product, and every default lies in its own range', () => {
    for (const productType of PRODUCT_TYPES) {
      const result = validatePolicyOverrides(productType, {});
      assert.ok(result.ok, productType);
      for (const [key, spec] of Object.entries(policyKeys(productType))) {
        assert.ok(spec.default >= spec.min && spec.default <= spec.max, `${productType}.${key}`);
        assert.ok(!spec.integer || Number.isInteger(spec.default), `${productType}.${key} integer`);
        assert.equal((result.policy as Readonly<Record<string, number>>)[key], spec.default, `${productType}.${key} default`);
      }
    }
  });

  it('merges valid overrides, decimal strings included', () => {
    const result = validatePolicyOverrides('term_loan', { max_volatility_cv: '0.5', term_months: 36, min_months_history: 3 });
    assert.ok(result.ok);
    assert.deepEqual(result.overrides, { max_volatility_cv: 0.5, term_months: 36, min_months_history: 3 });
    assert.equal(result.policy.max_volatility_cv, 0.5);
    assert.equal(result.policy.standard_min_months, 12);
  });

  it('refuses an unknown key, naming it and the allowed keys', () => {
    const error = refusal('rbf', { max_volatility: 1 });
    assert.deepEqual(
      error.problems.map((p) => p.key),
      ['max_volatility'],
    );
    assert.match(error.message, /unknown key max_volatility for rbf; allowed: min_months_history, /);
    assert.deepEqual(
      refusal('rbf', { term_months: 12 }).problems.map((p) => p.key),
      ['term_months'],
      'a key of another product',
    );
  });

  it('refuses values out of range, not numbers, or fractional where whole months are meant', () => {
    assert.match(refusal('rbf', { max_volatility_cv: 7 }).message, /max_volatility_cv = 7 is out of range 0\.\.5/);
    assert.match(refusal('rbf', { payback_cap_multiple: 0.9 }).message, /payback_cap_multiple = 0\.9 is out of range 1\.\.3/);
    assert.match(refusal('rbf', { advance_multiple_of_monthly_avg: 40 }).message, /out of range 0\.\.36/);
    assert.match(refusal('rbf', { min_months_history: 2.5 }).message, /min_months_history = 2\.5 must be a whole number/);
    for (const bad of ['0.8x', '', true, null, Number.NaN, Number.POSITIVE_INFINITY, '1e3'])
      assert.match(refusal('rbf', { max_volatility_cv: bad }).message, /max_volatility_cv must be a number/, String(bad));
  });

  it('refuses an override that breaks an ordering, naming both keys', () => {
    const error = refusal('rbf', { standard_min_score: 0.8 });
    assert.deepEqual(
      error.problems.map((p) => p.key),
      ['standard_min_score'],
    );
    assert.match(error.message, /standard_min_score = 0\.8 must be below prime_min_score = 0\.75 \(default\)/);
    assert.equal(refusal('rbf', { prime_min_score: 0.5 }).problems[0]!.key, 'prime_min_score', 'equal cut-offs are refused too');
    assert.match(refusal('rbf', { min_months_history: 8 }).message, /min_months_history = 8 must be at most standard_min_months = 6/);
    assert.match(refusal('rbf', { subprime_advance_factor: 0.9 }).message, /subprime_advance_factor = 0\.9 must be at most standard_advance_factor/);
    assert.ok(validatePolicyOverrides('rbf', { min_months_history: 8, standard_min_months: 8, prime_min_months: 12 }).ok);
  });

  it('reports every problem at once, and refuses an unknown product type or a non-object', () => {
    assert.deepEqual(
      refusal('rbf', { a: 1, max_volatility_cv: 9 }).problems.map((p) => p.key),
      ['a', 'max_volatility_cv'],
    );
    assert.equal(refusal('mortgage', {}).problems[0]!.key, 'product_type');
    assert.equal(refusal('rbf', [1]).problems[0]!.key, '(overrides)');
  });

  it('computeTape refuses bad overrides instead of applying them', () => {
    const bad = input([platform('youtube', [100, 100, 100])], { policyOverrides: { max_volatility_cv: -1 } });
    assert.throws(
      () => computeTape(bad, { now: NOW }),
      (e: unknown) => e instanceof PolicyOverrideError && /max_volatility_cv/.test(e.message),
    );
  });
});
