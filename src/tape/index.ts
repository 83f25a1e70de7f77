// Public surface of the Risk Tape engine. Pure: no I/O, no clock, no framework.
export { computeTape, type ComputeOptions, type RiskTape } from './compute-tape.ts';
export { renderTape, renderableVersions, rendersAsStored, TapeVersionUnsupported, FIELDS_SINCE, type RenderedTapes } from './render.ts';
export {
  convertToEuro,
  DEFAULT_RATE_TABLE,
  PRODUCT_TYPES,
  SCHEMA_VERSIONS,
  type ConnectionStatus,
  type Jurisdiction,
  type MonthlyRevenue,
  type Platform,
  type PlatformIncome,
  type ProductType,
  type RateTable,
  type SchemaVersion,
  type SourceAmount,
  type TapeInput,
  type Tier,
} from './income.ts';
export { isProductType, PolicyOverrideError, policyKeys, validatePolicyOverrides, type PolicyProblem, type PolicyValidation } from './eligibility/policy.ts';
export { ND_CATALOGUE, TIER_A_FIELDS, type NdCode } from './data-quality.ts';
export { isSyntheticCreator, SYNTHETIC_CREATORS, syntheticTapeInput, type SyntheticCreator, type SyntheticReference } from './synthetic-creators.ts';
