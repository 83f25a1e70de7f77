// Versioned rendering (D5): the internal tape at an older schema version, fields introduced later
// left out. Renderings share nested objects with the tape; treat both as immutable values.
import type { RiskTape100, RiskTape110, RiskTape120, RiskTape200 } from '../../generated/tape.ts';
import { ndCodeExistsAt } from './data-quality.ts';
import { type ProductType, SCHEMA_VERSIONS, type SchemaVersion, versionAtLeast } from './income.ts';

export interface RenderedTapes {
  '1.0.0': RiskTape100;
  '1.1.0': RiskTape110;
  '1.2.0': RiskTape120;
  '2.0.0': RiskTape200;
}

/** Version that introduced each optional field; everything else exists since 1.0.0. */
export const FIELDS_SINCE = {
  tape: { islamic_compliance: '1.1.0', affordability: '1.1.0', jurisdiction_profile: '1.2.0', overlay_blocks: '1.2.0' },
  eligibility: {
    income_capacity_annual: '2.0.0',
    recommended_monthly_ceiling_pct: '2.0.0',
    income_stability_score: '2.0.0',
    income_trend: '2.0.0',
  },
} as const satisfies Record<string, Record<string, SchemaVersion>>;

const V1_PRODUCT_TYPES: ReadonlySet<ProductType> = new Set(['rbf', 'term_loan', 'securitization_pool']);

/** The product type did not exist at the requested version; the API answers 422 unprocessable. */
export class TapeVersionUnsupported extends Error {
  override readonly name = 'TapeVersionUnsupported';
  constructor(
    readonly productType: ProductType,
    readonly version: SchemaVersion,
  ) {
    super(`A ${productType} tape cannot be rendered at schema ${version}: product type ${productType} was added in 2.0.0.`);
  }
}

/** The versions a tape of this product type can be rendered at (P6), oldest first: renderTape refuses the others. */
export function renderableVersions(productType: ProductType): readonly SchemaVersion[] {
  return V1_PRODUCT_TYPES.has(productType) ? SCHEMA_VERSIONS : SCHEMA_VERSIONS.filter((version) => versionAtLeast(version, '2.0.0'));
}

function omitLater<T extends object>(obj: T, since: Readonly<Record<string, SchemaVersion>>, version: SchemaVersion): T {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(obj)) if (!(k in since) || versionAtLeast(version, since[k]!)) out[k] = v;
  return out as T;
}

/** The version tapes are stored at: renderTape returns the stored tape itself, so its JSON is the stored text. */
export function rendersAsStored(version: SchemaVersion): version is '2.0.0' {
  return version === '2.0.0';
}

export function renderTape<V extends SchemaVersion>(tape: RiskTape200, version: V): RenderedTapes[V] {
  if (!SCHEMA_VERSIONS.includes(version)) throw new RangeError(`unknown tape schema version ${JSON.stringify(version)}`);
  if (rendersAsStored(version)) return tape as RenderedTapes[V];
  const productType = tape.eligibility.product_type;
  if (!V1_PRODUCT_TYPES.has(productType)) throw new TapeVersionUnsupported(productType, version);
  const summary = tape.data_quality.nd_code_summary.filter((e) => ndCodeExistsAt(e.code, version));
  return {
    ...omitLater(tape, FIELDS_SINCE.tape, version),
    schema_version: version,
    eligibility: omitLater(tape.eligibility, FIELDS_SINCE.eligibility, version),
    data_quality: { ...tape.data_quality, nd_codes: [...new Set(summary.map((e) => e.code))], nd_code_summary: summary },
  } as RenderedTapes[V];
}
