// What an AML, KYB or credit bureau verdict does to the tape (P34), and what a re-score for an
// overlay keeps: the same income as of the same tape_generated_at.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import type { OverlayBlock } from '../../generated/tape.ts';
import { islamicCompliance } from './blocks.ts';
import { computeTape, type RiskTape } from './compute-tape.ts';
import { SCREENING_RULES, SCREENING_TYPES, screeningFindings, type ScreeningType } from './eligibility/screening.ts';
import { PRODUCT_TYPES, type ProductType } from './income.ts';
import { renderableVersions, renderTape } from './render.ts';
import { syntheticTapeInput, type SyntheticReference } from './synthetic-creators.ts';
import { input, NOW, platform, ROOT, schemaErrors } from '../../test/support/tape.ts';

let attached = 0;
const overlay = (type: OverlayBlock['type'], status: string, observed_at = '2026-11-10T09:00:00Z'): OverlayBlock => ({
  overlay_id: `ovl_test${String(++attached).padStart(8, '0')}`,
  type,
  provider: 'Screen Co',
  status,
  observed_at,
  data: {},
  created_at: '2026-11-27T16:00:00Z',
});

const tape = (overlays: OverlayBlock[], productType: ProductType = 'rbf', ref: SyntheticReference = 'demo_prime_multi'): RiskTape =>
  computeTape(syntheticTapeInput(ref, { now: NOW, verificationId: 'vrf_test0001', productType, overlays }), { now: NOW });
const flag = (t: RiskTape, code: string) => t.eligibility.flags.find((f) => f.code === code);
const codes = (t: RiskTape) => t.eligibility.flags.map((f) => f.code);
const screeningCodes = new Set<string>(SCREENING_TYPES.flatMap((type) => [SCREENING_RULES[type].adverseFlag.code, SCREENING_RULES[type].reviewFlag.code]));
const onlyScreening = (t: RiskTape) => codes(t).filter((c) => screeningCodes.has(c));

describe('tape/overlays (P34)', () => {
  const clean = tape([]);
  before(() => assert.equal(clean.eligibility.tier, 'prime', 'demo_prime_multi is prime without overlays'));

  describe('aml', () => {
    it('a hit makes the tape ineligible with AML_HIT, critical, naming provider, time and verdict', () => {
      const t = tape([overlay('aml', 'hit')]);
      assert.deepEqual(flag(t, 'AML_HIT'), {
        code: 'AML_HIT',
        severity: 'critical',
        message: 'AML screening by Screen Co observed at 2026-11-10T09:00:00Z reported "hit": ineligible until a later aml overlay reports clear.',
      });
      const e = t.eligibility;
      assert.deepEqual([e.tier, e.eligible, e.max_advance_eur, e.max_revenue_share_pct, e.covenants], ['ineligible', false, 0, 0, []]);
    });

    for (const status of ['match', 'Potential Match', 'POSITIVE', ' potential-match '])
      it(`"${status}" reads as a hit`, () => assert.equal(tape([overlay('aml', status)]).eligibility.tier, 'ineligible'));

    for (const status of ['clear', 'No Hit', 'no-match', 'NEGATIVE'])
      it(`"${status}" reads as clear: the tape is as without it`, () => {
        const t = tape([overlay('aml', status)]);
        assert.deepEqual(t.eligibility, clean.eligibility);
      });

    it('a later clear lifts a hit; a later hit overturns a clear, whatever the order of attachment', () => {
      const cleared = tape([overlay('aml', 'clear', '2026-11-12T00:00:00Z'), overlay('aml', 'hit', '2026-11-05T00:00:00Z')]);
      assert.deepEqual(cleared.eligibility, clean.eligibility);
      const hit = tape([overlay('aml', 'hit', '2026-11-12T00:00:00Z'), overlay('aml', 'clear', '2026-11-05T00:00:00Z')]);
      assert.equal(hit.eligibility.tier, 'ineligible');
      assert.match(flag(hit, 'AML_HIT')!.message, /2026-11-12T00:00:00Z/);
    });

    it('on equal observed_at the later attached decides', () => {
      assert.equal(tape([overlay('aml', 'clear'), overlay('aml', 'hit')]).eligibility.tier, 'ineligible');
      assert.equal(tape([overlay('aml', 'hit'), overlay('aml', 'clear')]).eligibility.tier, 'prime');
    });

    it('an unread verdict asks for review (warning) and changes no tier; it does not lift an earlier hit', () => {
      const alone = tape([overlay('aml', 'in_review')]);
      assert.deepEqual(onlyScreening(alone), ['AML_REVIEW_REQUIRED']);
      assert.equal(flag(alone, 'AML_REVIEW_REQUIRED')!.severity, 'warning');
      assert.match(flag(alone, 'AML_REVIEW_REQUIRED')!.message, /reported "in_review", which is not a verdict the service reads/);
      assert.equal(alone.eligibility.tier, 'prime');

      const afterHit = tape([overlay('aml', 'hit', '2026-11-01T00:00:00Z'), overlay('aml', 'pending', '2026-11-20T00:00:00Z')]);
      assert.deepEqual(onlyScreening(afterHit), ['AML_HIT', 'AML_REVIEW_REQUIRED']);
      assert.equal(afterHit.eligibility.tier, 'ineligible');
      assert.match(flag(afterHit, 'AML_REVIEW_REQUIRED')!.message, /verdict of 2026-11-01T00:00:00Z still applies/);
    });

    it('an unread verdict older than the decisive one is superseded: no review flag', () => {
      const t = tape([overlay('aml', 'in_review', '2026-11-01T00:00:00Z'), overlay('aml', 'clear', '2026-11-02T00:00:00Z')]);
      assert.deepEqual(onlyScreening(t), []);
    });

    it('a status naming a member every object inherits is no verdict', () => {
      for (const status of ['toString', 'constructor', '__proto__', 'hasOwnProperty'])
        assert.deepEqual(onlyScreening(tape([overlay('aml', status)])), ['AML_REVIEW_REQUIRED'], status);
    });
  });

  describe('kyb', () => {
    it('a failed check makes the tape ineligible with KYB_FAILED, critical', () => {
      for (const status of ['fail', 'Failed', 'rejected', 'not verified', 'declined']) {
        const t = tape([overlay('kyb', status)]);
        assert.equal(t.eligibility.tier, 'ineligible', status);
        assert.equal(flag(t, 'KYB_FAILED')?.severity, 'critical', status);
      }
      assert.match(
        flag(tape([overlay('kyb', 'failed')]), 'KYB_FAILED')!.message,
        /^KYB check by Screen Co .* reported "failed": ineligible until a later kyb overlay reports pass\.$/,
      );
    });

    it('a pass changes nothing', () => {
      for (const status of ['pass', 'passed', 'Verified', 'approved', 'clear'])
        assert.deepEqual(tape([overlay('kyb', status)]).eligibility, clean.eligibility, status);
    });

    it('the latest verdict by observed_at decides; an unread one asks for review', () => {
      assert.equal(tape([overlay('kyb', 'verified', '2026-11-20T00:00:00Z'), overlay('kyb', 'rejected', '2026-11-01T00:00:00Z')]).eligibility.tier, 'prime');
      assert.equal(
        tape([overlay('kyb', 'verified', '2026-11-01T00:00:00Z'), overlay('kyb', 'rejected', '2026-11-20T00:00:00Z')]).eligibility.tier,
        'ineligible',
      );
      const unread = tape([overlay('kyb', 'documents_requested')]);
      assert.deepEqual(onlyScreening(unread), ['KYB_REVIEW_REQUIRED']);
      assert.equal(unread.eligibility.tier, 'prime');
    });
  });

  describe('credit_bureau', () => {
    it('an adverse record caps the tier at subprime with CREDIT_BUREAU_ADVERSE, warning; the advance follows the subprime factor', () => {
      for (const status of ['adverse', 'Default', 'delinquent', 'insolvency']) {
        const t = tape([overlay('credit_bureau', status)]);
        assert.equal(t.eligibility.tier, 'subprime', status);
        assert.equal(flag(t, 'CREDIT_BUREAU_ADVERSE')?.severity, 'warning', status);
        assert.equal(t.eligibility.max_advance_eur, Math.round(clean.eligibility.max_advance_eur * 0.5 * 100) / 100, status);
        assert.ok(t.eligibility.covenants.some((c) => c.code === 'MONTHLY_REVERIFICATION'));
      }
      assert.match(
        flag(tape([overlay('credit_bureau', 'adverse')]), 'CREDIT_BUREAU_ADVERSE')!.message,
        /at most subprime until a later credit_bureau overlay reports clear/,
      );
    });

    it('never raises a tier: an already ineligible tape stays ineligible', () => {
      const t = tape([overlay('credit_bureau', 'adverse')], 'venture_debt', 'demo_subprime_multi');
      assert.equal(t.eligibility.tier, 'ineligible');
      assert.ok(codes(t).includes('GROWTH_BELOW_MINIMUM') && codes(t).includes('CREDIT_BUREAU_ADVERSE'));
    });

    it('clear, satisfactory and no adverse change nothing; the latest decides; an unread one asks for review', () => {
      for (const status of ['clear', 'satisfactory', 'No Adverse'])
        assert.deepEqual(tape([overlay('credit_bureau', status)]).eligibility, clean.eligibility, status);
      assert.equal(
        tape([overlay('credit_bureau', 'adverse', '2026-11-01T00:00:00Z'), overlay('credit_bureau', 'clear', '2026-11-02T00:00:00Z')]).eligibility.tier,
        'prime',
      );
      const unread = tape([overlay('credit_bureau', 'score 712')]);
      assert.deepEqual(onlyScreening(unread), ['CREDIT_BUREAU_REVIEW_REQUIRED']);
      assert.equal(unread.eligibility.tier, 'prime');
    });
  });

  it('each type is judged on its own overlays: a clear of one type lifts no hit of another', () => {
    const t = tape([
      overlay('aml', 'hit', '2026-11-01T00:00:00Z'),
      overlay('kyb', 'clear', '2026-11-20T00:00:00Z'),
      overlay('credit_bureau', 'clear', '2026-11-20T00:00:00Z'),
    ]);
    assert.deepEqual(onlyScreening(t), ['AML_HIT']);
    const all = tape([overlay('credit_bureau', 'adverse'), overlay('kyb', 'failed'), overlay('aml', 'hit')]);
    assert.deepEqual(onlyScreening(all), ['AML_HIT', 'KYB_FAILED', 'CREDIT_BUREAU_ADVERSE'], 'in a fixed order: aml, kyb, credit_bureau');
  });

  it('a sharia_screening verdict sets no screening flag, and a screening verdict no islamic_compliance', () => {
    assert.deepEqual(screeningFindings([overlay('sharia_screening', 'non_compliant')]), []);
    assert.equal(islamicCompliance([overlay('aml', 'compliant')]).status, 'pending');
  });

  it('applies to every product type, and the flag is on the tape at every schema version it renders at', () => {
    for (const productType of PRODUCT_TYPES) {
      const t = tape([overlay('aml', 'hit')], productType);
      for (const version of renderableVersions(productType)) {
        const rendered = renderTape(t, version);
        assert.equal(rendered.eligibility.tier, 'ineligible', `${productType} at ${version}`);
        assert.ok(
          rendered.eligibility.flags.some((f) => f.code === 'AML_HIT'),
          `${productType} at ${version}`,
        );
        assert.equal(schemaErrors(rendered, version), '', `${productType} at ${version}`);
      }
    }
  });

  describe('a re-score for an overlay keeps every as-of field (tape_generated_at)', () => {
    const isoTimes = (value: unknown): string[] => JSON.stringify(value).match(/\d{4}-\d{2}-\d{2}(T[\d:.]+Z)?/g) ?? [];

    const cases: Array<[string, ReturnType<typeof syntheticTapeInput>]> = [
      ['a synthetic creator', syntheticTapeInput('demo_prime_multi', { now: NOW, verificationId: 'vrf_test0001', productType: 'murabaha' })],
      [
        'stale income from a platform connected long ago',
        input([{ ...platform('youtube', [900, 950, 1000, 1020, 990, 1010], { lastMonth: '2026-07' }), connectedAt: '2026-08-02T10:00:00Z' }]),
      ],
    ];
    for (const [name, income] of cases)
      it(`${name}: scored again at its own tape_generated_at, only what the overlays decide changes`, () => {
        const original = computeTape(income, { now: NOW });
        const overlays = [overlay('aml', 'hit', '2026-12-01T00:00:00Z'), overlay('sharia_screening', 'compliant', '2026-12-02T00:00:00Z')];
        // What the lifecycle does (verification-lifecycle.ts attachOverlay): the clock of the re-score is the tape's own.
        const rescored = computeTape({ ...income, overlays }, { now: new Date(original.tape_generated_at) });
        assert.equal(rescored.tape_generated_at, original.tape_generated_at);
        assert.equal(rescored.as_of_date, original.as_of_date);
        const { eligibility: e1, overlay_blocks: _o1, islamic_compliance: _i1, data_quality: _d1, ...rest1 } = original;
        const { eligibility: e2, overlay_blocks: o2, islamic_compliance: _i2, data_quality: _d2, ...rest2 } = rescored;
        assert.deepEqual(rest2, rest1, 'income, connections and dates');
        const notFromOverlays = (t: RiskTape) => t.eligibility.flags.filter((f) => !screeningCodes.has(f.code) && !f.code.startsWith('SHARIA'));
        assert.deepEqual(notFromOverlays(rescored), notFromOverlays(original), 'income flags, DATA_STALE included, say the same');
        assert.equal(e2.income_stability_score, e1.income_stability_score);
        // Every time on the re-scored tape is the original's or an overlay's own: none is the time of the re-score.
        const allowed = new Set([...isoTimes(original), ...isoTimes(o2)]);
        for (const time of isoTimes(rescored)) assert.ok(allowed.has(time), `${time} is neither the tape's nor an overlay's`);
      });

    it('the stale case is stale (DATA_STALE names the as-of month), so the comparison above covers a dated flag', () => {
      const t = computeTape(cases[1]![1], { now: NOW });
      assert.match(flag(t, 'DATA_STALE')!.message, /2026-07/);
      assert.equal(t.platform_connections[0]!.connected_at, '2026-08-02T10:00:00Z');
    });
  });

  it('the published descriptions of an overlay status list every verdict the engine reads, with its flags', () => {
    const common = JSON.parse(readFileSync(join(ROOT, 'spec/schemas/tape/common.json'), 'utf8'));
    const openapi = parse(readFileSync(join(ROOT, 'spec/openapi.yaml'), 'utf8'));
    const descriptions = {
      'tape OverlayBlock.status': common.$defs.OverlayBlock.properties.status.description as string,
      'OverlayCreateRequest.status': openapi.components.schemas.OverlayCreateRequest.properties.status.description as string,
    };
    for (const [where, text] of Object.entries(descriptions))
      for (const type of SCREENING_TYPES) {
        const r = SCREENING_RULES[type];
        const own = new RegExp(`\`?${type}\`?: ([^.]*)\\.`).exec(text)?.[1] ?? '';
        for (const verdict of [...r.favourable, ...r.adverse]) assert.ok(own.includes(`\`${verdict}\``), `${where}: ${type} ${verdict}`);
        assert.ok(text.includes(r.adverseFlag.code) && text.includes(r.reviewFlag.code), `${where}: ${type} flags`);
      }
  });

  it('every screening type has a rule, and no verdict is both favourable and adverse', () => {
    assert.deepEqual(SCREENING_TYPES, ['aml', 'kyb', 'credit_bureau'] satisfies ScreeningType[]);
    for (const type of SCREENING_TYPES) {
      const { favourable, adverse } = SCREENING_RULES[type];
      assert.deepEqual(
        favourable.filter((v) => (adverse as readonly string[]).includes(v)),
        [],
        type,
      );
    }
  });
});
