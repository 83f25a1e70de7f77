import assert from 'node:assert/strict';
import type { OverlayBlock } from '../../generated/tape.ts';
import { affordabilityBlock, islamicCompliance } from './blocks.ts';

const screening = (status: string, observed_at: string): OverlayBlock => ({
  overlay_id: 'ovl_12345678',
  type: 'sharia_screening',
  provider: 'Amanah Screening Ltd',
  status,
  observed_at,
  data: {},
});

describe('tape/blocks', () => {
  it('affordability: dti, net and stressed income, and the first tier whose conditions hold', () => {
    // avg 1000, obligations 150, CV 0.1: stress is the 30% floor, stressed = 700 - 150
    assert.deepEqual(affordabilityBlock(150, 1000, 0.1), {
      declared_monthly_obligations: 150,
      net_disposable_income: 850,
      stressed_net_income: 550,
      dti_ratio: 0.15,
      affordability_tier: 'strong',
    });
    // CV 0.9 cuts revenue to 100, so the stressed income is negative: only stretched is left
    assert.equal(affordabilityBlock(150, 1000, 0.9).stressed_net_income, -50);
    assert.equal(affordabilityBlock(150, 1000, 0.9).affordability_tier, 'stretched');
    assert.equal(affordabilityBlock(300, 1000, 0.2).affordability_tier, 'adequate');
    assert.equal(affordabilityBlock(450, 1000, 0.2).affordability_tier, 'stretched');
    assert.equal(affordabilityBlock(501, 1000, 0.2).affordability_tier, 'unaffordable');
    assert.equal(affordabilityBlock(0, 1000, null).affordability_tier, 'strong');
  });

  it('affordability without positive income: no ratio, unaffordable', () => {
    assert.deepEqual(affordabilityBlock(200, -50, null), {
      declared_monthly_obligations: 200,
      net_disposable_income: -250,
      stressed_net_income: -235,
      dti_ratio: null,
      affordability_tier: 'unaffordable',
    });
    assert.throws(() => affordabilityBlock(-1, 1000, 0.1), RangeError);
  });

  it('islamic compliance: pending until a verdict, then the latest verdict by observed_at', () => {
    assert.equal(islamicCompliance([]).status, 'pending');
    assert.equal(
      islamicCompliance([screening('in_review', '2026-11-02T00:00:00Z'), { ...screening('compliant', '2026-11-03T00:00:00Z'), type: 'kyb' }]).status,
      'pending',
    );
    assert.equal(
      islamicCompliance([screening('toString', '2026-11-02T00:00:00Z'), screening('__proto__', '2026-11-02T00:00:00Z')]).status,
      'pending',
      'no inherited member is a verdict',
    );
    assert.deepEqual(islamicCompliance([screening('Non-Compliant', '2026-11-04T00:00:00.5Z'), screening('COMPLIANT', '2026-11-04T00:00:00Z')]), {
      sharia_eligible: false,
      status: 'non_compliant',
      screening_provider: 'Amanah Screening Ltd',
      screened_at: '2026-11-04T00:00:00.5Z',
    });
  });
});
