// Shared by the tape tests: the tape JSON Schemas compiled with Ajv 2020, and small input builders.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv2020, type SchemaObject, type ValidateFunction } from 'ajv/dist/2020.js';
// ajv-formats is CommonJS; under NodeNext its default import is the module object.
import addFormats from 'ajv-formats';
import { convertToEuro, DEFAULT_RATE_TABLE, monthIndex, monthString, type PlatformIncome, type SchemaVersion, type TapeInput } from '../../src/tape/income.ts';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

const ajv = new Ajv2020({ strict: true, allErrors: true });
addFormats.default(ajv);
const dir = join(ROOT, 'spec/schemas/tape');
for (const f of readdirSync(dir).filter((f) => f.endsWith('.json'))) ajv.addSchema(JSON.parse(readFileSync(join(dir, f), 'utf8')) as SchemaObject);

const validators = new Map<SchemaVersion, ValidateFunction>();
/** Schema errors of `tape` against its version's JSON Schema; empty when valid. */
export function schemaErrors(tape: unknown, version: SchemaVersion): string {
  let validate = validators.get(version);
  if (!validate) {
    validate = ajv.getSchema(`https://schemas.creator-income.example/tape/${version}.json`)!;
    validators.set(version, validate);
  }
  return validate(tape) ? '' : ajv.errorsText(validate.errors);
}

/** `now` whose last complete month is 2026-10. */
export const NOW = new Date('2026-11-15T12:00:00Z');

/** A connected platform whose amounts (euro unless `currency`) end in `lastMonth`. */
export function platform(
  name: PlatformIncome['platform'],
  amounts: readonly number[],
  options: { lastMonth?: string; currency?: string; status?: PlatformIncome['status'] } = {},
): PlatformIncome {
  const end = monthIndex(options.lastMonth ?? '2026-10');
  const currency = options.currency ?? 'EUR';
  return {
    platform: name,
    status: options.status ?? 'connected',
    connectedAt: null,
    months: convertToEuro(
      DEFAULT_RATE_TABLE,
      amounts.map((amount, i) => ({ month: monthString(end - amounts.length + 1 + i), currency, amount })),
    ),
  };
}

export function input(platforms: PlatformIncome[], extra: Partial<TapeInput> = {}): TapeInput {
  return {
    verificationId: 'vrf_test0001',
    obligorReference: 'obligor-1',
    productType: 'rbf',
    jurisdiction: 'eu_gdpr',
    platforms,
    ...extra,
  };
}

/** Every number anywhere in `value`, with its path. */
export function numbersIn(value: unknown, path = '$'): [string, number][] {
  if (typeof value === 'number') return [[path, value]];
  if (value === null || typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([k, v]) => numbersIn(v, `${path}.${k}`));
}
