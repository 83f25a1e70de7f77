import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { renderTape, SCHEMA_VERSIONS } from './index.ts';
import type { RiskTape200 } from '../../generated/tape.ts';

// Section 9: every change after 1.0.0 is non-breaking, so each schema version is a superset of the
// one before: a tape valid at one version stays valid at every later one (its version label aside),
// and no later version requires a field an earlier one did not.
const schemaDir = new URL('../../spec/schemas/tape/', import.meta.url);
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats.default(ajv);
for (const file of readdirSync(schemaDir)) ajv.addSchema(JSON.parse(readFileSync(new URL(file, schemaDir), 'utf8')));
const schemaOf = (version: string) => ajv.getSchema(`https://schemas.creator-income.example/tape/${version}.json`)!;
const goldenDir = new URL('../../spec/examples/tapes/', import.meta.url);
const goldens = readdirSync(goldenDir).map((file) => JSON.parse(readFileSync(new URL(file, goldenDir), 'utf8')) as RiskTape200);

describe('tape schema versions', () => {
  it('has golden tapes to check with', () => assert.equal(goldens.length, 9));

  for (const [i, version] of SCHEMA_VERSIONS.entries()) {
    for (const later of SCHEMA_VERSIONS.slice(i + 1)) {
      it(`keeps every ${version} tape valid at ${later}`, () => {
        for (const golden of goldens) {
          const rendered = { ...renderTape(golden, version), schema_version: later };
          const validate = schemaOf(later);
          assert.ok(validate(rendered), `${golden.obligor_reference} at ${version} → ${later}: ${ajv.errorsText(validate.errors)}`);
        }
      });
    }
  }

  it('requires nothing at a later version that an earlier one did not', () => {
    const required = (version: string) => {
      const schema = JSON.parse(readFileSync(new URL(`${version}.json`, schemaDir), 'utf8'));
      return new Set<string>(schema.required);
    };
    for (const [i, version] of SCHEMA_VERSIONS.entries()) {
      for (const later of SCHEMA_VERSIONS.slice(i + 1)) {
        const added = [...required(later)].filter((field) => !required(version).has(field));
        assert.deepEqual(added, [], `${later} requires ${added.join(', ')} that ${version} does not`);
      }
    }
  });

  it('refuses at an older version the fields introduced later', () => {
    const golden = goldens.find((g) => g.affordability) ?? goldens[0]!;
    const withLaterFields = { ...renderTape(golden, '2.0.0'), schema_version: '1.0.0', jurisdiction_profile: { regime: 'eu_gdpr' } };
    assert.equal(schemaOf('1.0.0')(withLaterFields), false);
  });
});
