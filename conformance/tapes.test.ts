import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { specPath } from './locate.ts';
import { forEachTarget, requireSandbox } from './harness.ts';
import {
  created,
  follow,
  getTape,
  goldenTape,
  randomReference,
  SCHEMA_VERSIONS,
  SYNTHETIC_CREATORS,
  tapeOf,
  withoutRunSpecificFields,
  type SchemaVersion,
  type Tape,
  type Verification,
} from './sandbox.ts';

/**
 * Risk Tapes (sections 2.3, 2.6, 9; D5, D6, P6): the nine synthetic creators reproduce their golden
 * tapes, every tape renders at every schema version without the fields of later versions, and the
 * 2.0.0 product types cannot be rendered at 1.x. The API client already validates each tape against
 * the contract's RiskTape (a oneOf of the four versions' JSON Schemas).
 */

/** Section 2.3 and 9: what each version added. Rendering at an earlier version leaves these out (D5). */
const ADDED_IN: Record<SchemaVersion, { topLevel: string[]; eligibility: string[] }> = {
  '1.0.0': { topLevel: [], eligibility: [] },
  '1.1.0': { topLevel: ['islamic_compliance', 'affordability'], eligibility: [] },
  '1.2.0': { topLevel: ['jurisdiction_profile', 'overlay_blocks'], eligibility: [] },
  '2.0.0': { topLevel: [], eligibility: ['income_capacity_annual', 'recommended_monthly_ceiling_pct', 'income_stability_score', 'income_trend'] },
};
const ORIGINAL_PRODUCT_TYPES = ['rbf', 'term_loan', 'securitization_pool'];
const PRODUCT_TYPES_OF_2_0_0 = ['revenue_loan', 'venture_debt', 'murabaha', 'hpp'];
const GOLDEN_DIR = `${specPath('examples', 'tapes')}/`;

function addedAfter(version: SchemaVersion): { topLevel: string[]; eligibility: string[] } {
  const later = SCHEMA_VERSIONS.slice(SCHEMA_VERSIONS.indexOf(version) + 1);
  return { topLevel: later.flatMap((v) => ADDED_IN[v].topLevel), eligibility: later.flatMap((v) => ADDED_IN[v].eligibility) };
}

/**
 * The tape at `version` must be the 2.0.0 tape without the later fields: nothing else may change,
 * except that ND codes about a field the version does not have may go with it.
 */
function assertRenderedAt(version: SchemaVersion, rendered: Tape, latest: Tape, context: string): void {
  assert.equal(rendered.schema_version, version, `${context}: schema_version is the one asked for`);
  const { topLevel, eligibility } = addedAfter(version);
  for (const field of topLevel) assert.ok(!(field in rendered), `${context}: ${field} (added later) must be absent at ${version}`);
  for (const field of eligibility) assert.ok(!(field in rendered.eligibility), `${context}: eligibility.${field} (added later) must be absent at ${version}`);

  const expected = structuredClone(latest);
  expected.schema_version = version;
  for (const field of topLevel) delete expected[field];
  for (const field of eligibility) delete expected.eligibility[field];
  const laterField = (field: string) =>
    topLevel.includes(field.split(/[.[]/)[0]!) || eligibility.some((name) => field === `eligibility.${name}` || field.startsWith(`eligibility.${name}.`));
  const renderedQuality = rendered.data_quality;
  const summary: Array<{ code: string; field: string }> = renderedQuality?.nd_code_summary ?? [];
  for (const entry of latest.data_quality.nd_code_summary as Array<{ code: string; field: string }>) {
    const kept = summary.some((e) => e.code === entry.code);
    assert.ok(kept || laterField(entry.field), `${context}: ND code ${entry.code} (about ${entry.field}) dropped at ${version}`);
    if (!kept) {
      expected.data_quality.nd_code_summary = expected.data_quality.nd_code_summary.filter((e: { code: string }) => e.code !== entry.code);
      expected.data_quality.nd_codes = expected.data_quality.nd_codes.filter((code: string) => code !== entry.code);
    }
  }
  assert.deepEqual(rendered, expected, `${context}: the ${version} tape is the 2.0.0 tape without the later fields`);
}

/** D6 and the shape A / shape B mirrors, which must agree in any tape. */
function assertTapeConsistent(tape: Tape, verification: Verification, context: string): void {
  assert.equal(tape.verification_id, verification.verification_id, context);
  assert.equal(tape.obligor_reference, verification.obligor_reference, context);
  assert.equal(tape.obligor.reference, verification.obligor_reference, context);
  assert.equal(tape.status, 'completed', context);
  assert.equal(tape.eligibility.product_type, verification.product_type, context);
  assert.equal(tape.eligibility.max_advance_amount, tape.eligibility.max_advance_eur, `${context}: max_advance_amount = max_advance_eur (D6)`);
  if (tape.schema_version === '2.0.0') {
    assert.equal(tape.eligibility.income_capacity_annual, tape.eligibility.max_advance_amount, `${context}: the 2.0.0 alias equals its original (D6)`);
    assert.equal(
      tape.eligibility.recommended_monthly_ceiling_pct,
      tape.eligibility.max_revenue_share_pct,
      `${context}: the 2.0.0 alias equals its original (D6)`,
    );
  }
  assert.equal(tape.metrics.monthly_revenue_avg_eur, tape.cashflow_summary.monthly_revenue_avg_eur, `${context}: shape A and shape B agree`);
  assert.equal(tape.metrics.revenue_volatility_cv, tape.risk_profile.revenue_volatility_cv, `${context}: shape A and shape B agree`);
  assert.equal(tape.metrics.platform_hhi, tape.risk_profile.platform_hhi, `${context}: shape A and shape B agree`);
  const generated = Date.parse(tape.tape_generated_at);
  assert.ok(generated >= Date.parse(verification.created_at) && generated <= Date.now() + 1000, `${context}: tape_generated_at ${tape.tape_generated_at}`);
  assert.ok(tape.as_of_date <= tape.tape_generated_at.slice(0, 10), `${context}: as_of_date ${tape.as_of_date} is not after the tape was made`);
  for (const connection of tape.platform_connections as Array<{ platform: string; connected_at?: string | null }>) {
    if (connection.connected_at == null) continue;
    const at = Date.parse(connection.connected_at);
    assert.ok(at >= Date.parse(verification.created_at) && at <= generated, `${context}: ${connection.platform} connected_at ${connection.connected_at}`);
  }
}

forEachTarget((target) => {
  const platformsOf = (reference: string) => goldenTape(reference).obligor.connected_platforms as Verification['creator_platforms'];

  describe('happy: the nine synthetic creators reproduce their golden tapes (section 2.6) [transition:new->completed] [op:getVerificationTape 200]', function () {
    this.timeout(30_000);
    const verifications = new Map<string, Verification>();
    const tapes = new Map<string, Tape>();

    before(async function () {
      requireSandbox(this, target);
      // All nine at once, as a lender trying the sandbox would.
      await Promise.all(
        SYNTHETIC_CREATORS.map(async ({ reference }) => {
          const verification = await created(target, { obligor_reference: reference, creator_platforms: platformsOf(reference) });
          verifications.set(reference, verification);
          if (verification.status === 'completed') tapes.set(reference, await tapeOf(target, verification.verification_id));
        }),
      );
    });

    it('spec/examples/tapes holds a golden tape for exactly the nine creators of section 2.6', () => {
      const files = readdirSync(GOLDEN_DIR)
        .filter((f) => f.endsWith('.json'))
        .map((f) => f.replace(/\.json$/, ''));
      assert.deepEqual(files.sort(), SYNTHETIC_CREATORS.map((c) => c.reference).sort());
    });

    it('all nine are completed in their creation responses, with a 2.0.0 tape', () => {
      for (const { reference } of SYNTHETIC_CREATORS) {
        const verification = verifications.get(reference)!;
        assert.equal(verification.status, 'completed', reference);
        assert.equal(verification.schema_version, '2.0.0', reference);
        assert.ok(tapes.has(reference), reference);
      }
    });

    it('a synthetic creator asked for other platforms still reproduces its own golden tape (P10)', async () => {
      const verification = await created(target, { obligor_reference: 'demo-yt-nano', creator_platforms: ['stripe', 'youtube'] });
      const tape = await tapeOf(target, verification.verification_id);
      assert.deepEqual(withoutRunSpecificFields(tape), withoutRunSpecificFields(goldenTape('demo-yt-nano')));
    });

    for (const { reference, tier } of SYNTHETIC_CREATORS) {
      it(`${reference}: tier ${tier}, and the tape equals spec/examples/tapes/${reference}.json but for ids and timestamps`, () => {
        const tape = tapes.get(reference);
        assert.ok(tape, `${reference} has no tape`);
        assert.equal(tape.eligibility.tier, tier, `${reference}: the tier section 2.6 gives`);
        const golden = goldenTape(reference);
        const [actual, expected] = [withoutRunSpecificFields(tape), withoutRunSpecificFields(golden)];
        // Block by block first, so a difference names where it is; then the whole tape.
        for (const block of ['eligibility', 'metrics', 'cashflow_summary', 'risk_profile', 'data_quality', 'platform_connections', 'obligor']) {
          assert.deepEqual(actual[block], expected[block], `${reference}: ${block} differs from the golden tape`);
        }
        assert.deepEqual(actual, expected, `${reference}: the tape differs from the golden tape`);
        assertTapeConsistent(tape, verifications.get(reference)!, reference);
      });
    }
  });

  describe('happy: every tape at every schema version (D5) [tape:1.0.0] [tape:1.1.0] [tape:1.2.0] [tape:2.0.0] [op:getVerificationTape 200]', function () {
    this.timeout(target.sandboxDelayMs * 2 + 30_000);
    interface Subject {
      name: string;
      verification: Verification;
      /** The tape without schema_version, and at each version. */
      byDefault: Tape;
      at: Record<SchemaVersion, Tape>;
    }
    const subjects: Subject[] = [];
    const subject = (prefix: string) => subjects.find((s) => s.name.startsWith(prefix))!;

    before(async function () {
      requireSandbox(this, target);
      const made = await Promise.all([
        ...SYNTHETIC_CREATORS.map(async ({ reference }) => ({
          name: reference,
          verification: await created(target, { obligor_reference: reference, creator_platforms: platformsOf(reference) }),
        })),
        (async () => ({
          name: 'demo_prime_multi with declared obligations (affordability block, D21)',
          verification: await created(target, {
            obligor_reference: 'demo_prime_multi',
            creator_platforms: ['youtube', 'stripe'],
            product_type: 'term_loan',
            declared_monthly_obligations_eur: 1250,
          }),
        }))(),
        (async () => {
          const first = await created(target, { obligor_reference: randomReference('test-complete-'), creator_platforms: ['youtube', 'stripe'] });
          const observations = await follow(target, first.verification_id);
          return { name: 'a test-complete- verification', verification: observations.at(-1)!.resource };
        })(),
      ]);
      for (const { name, verification } of made) {
        const at = {} as Record<SchemaVersion, Tape>;
        for (const version of SCHEMA_VERSIONS) at[version] = await tapeOf(target, verification.verification_id, version);
        subjects.push({ name, verification, byDefault: await tapeOf(target, verification.verification_id), at });
      }
    });

    it('the test-complete- verification completed, with a tape of its own reference and exactly the platforms it asked for', () => {
      const { verification, byDefault } = subject('a test-complete-');
      assert.equal(verification.status, 'completed');
      assert.equal(verification.schema_version, '2.0.0');
      assert.equal(byDefault.obligor_reference, verification.obligor_reference);
      assert.deepEqual(
        (byDefault.platform_connections as Array<{ platform: string }>).map((c) => c.platform).sort(),
        [...verification.creator_platforms].sort(),
      );
    });

    it('without schema_version the tape is 2.0.0, the same as ?schema_version=2.0.0', () => {
      for (const { name, verification, byDefault, at } of subjects) {
        assert.equal(byDefault.schema_version, '2.0.0', name);
        assert.deepEqual(byDefault, at['2.0.0'], name);
        assertTapeConsistent(byDefault, verification, name);
      }
    });

    for (const version of SCHEMA_VERSIONS.filter((v) => v !== '2.0.0')) {
      it(`at ${version}: valid for that version, schema_version ${version}, and the fields of later versions absent`, () => {
        for (const { name, verification, at } of subjects) {
          assertRenderedAt(version, at[version], at['2.0.0'], name);
          assertTapeConsistent(at[version], verification, `${name} at ${version}`);
        }
      });
    }

    it('the affordability block is there from 1.1.0 on when obligations were declared, and the resource echoes them (D21)', () => {
      const { verification, at } = subject('demo_prime_multi with declared obligations');
      assert.equal(verification.declared_monthly_obligations_eur, 1250);
      for (const version of SCHEMA_VERSIONS) {
        assert.equal('affordability' in at[version], version !== '1.0.0', `affordability at ${version}`);
        if (version !== '1.0.0') assert.equal(at[version].affordability?.declared_monthly_obligations, 1250);
      }
    });
  });

  describe('errors: tapes of the 2.0.0 product types at 1.x are unprocessable (P6) [op:getVerificationTape 422 unprocessable]', function () {
    this.timeout(30_000);
    const byProduct = new Map<string, Verification>();

    before(async function () {
      requireSandbox(this, target);
      await Promise.all(
        [...ORIGINAL_PRODUCT_TYPES, ...PRODUCT_TYPES_OF_2_0_0].map(async (productType) => {
          byProduct.set(
            productType,
            await created(target, { obligor_reference: 'demo_prime_multi', creator_platforms: ['youtube', 'stripe'], product_type: productType }),
          );
        }),
      );
    });

    for (const productType of PRODUCT_TYPES_OF_2_0_0) {
      it(`a ${productType} tape: 422 unprocessable at 1.0.0, 1.1.0 and 1.2.0; 200 at 2.0.0`, async () => {
        const id = byProduct.get(productType)!.verification_id;
        for (const version of ['1.0.0', '1.1.0', '1.2.0']) {
          const response = await getTape(target, id, version);
          assert.equal(response.status, 422, `${version}: ${response.text}`);
          const body = response.json as { error: string; message: string };
          assert.equal(body.error, 'unprocessable');
          assert.ok(body.message.includes(productType), `the message names the product type: ${body.message}`);
        }
        const tape = await tapeOf(target, id, '2.0.0');
        assert.equal(tape.eligibility.product_type, productType);
      });
    }

    it('the original product types (rbf, term_loan, securitization_pool) render at 1.0.0, so the 422 is about the type', async () => {
      for (const productType of ORIGINAL_PRODUCT_TYPES) {
        const tape = await tapeOf(target, byProduct.get(productType)!.verification_id, '1.0.0');
        assert.equal(tape.eligibility.product_type, productType);
      }
    });
  });
});
