// Input of the engine: monthly revenue per platform, converted to euro with a replaceable
// reference-rate table (D17), plus what the verification and the lender account know.
import type { OverlayBlock, RiskTape200 } from '../../generated/tape.ts';
import { cents } from './round.ts';

export type Platform = RiskTape200['platforms'][number];
export type ProductType = RiskTape200['eligibility']['product_type'];
export type Tier = RiskTape200['eligibility']['tier'];
export type Trend = RiskTape200['metrics']['trend_3m'];
export type ConnectionStatus = RiskTape200['platform_connections'][number]['status'];
export type Jurisdiction = NonNullable<RiskTape200['jurisdiction_profile']>['regime'];

export type SchemaVersion = '1.0.0' | '1.1.0' | '1.2.0' | '2.0.0';
/** Oldest first; a field introduced at one version exists at every later one. */
export const SCHEMA_VERSIONS: readonly SchemaVersion[] = ['1.0.0', '1.1.0', '1.2.0', '2.0.0'];
export const versionAtLeast = (version: SchemaVersion, since: SchemaVersion): boolean => SCHEMA_VERSIONS.indexOf(version) >= SCHEMA_VERSIONS.indexOf(since);

export const PRODUCT_TYPES: readonly ProductType[] = ['rbf', 'term_loan', 'securitization_pool', 'revenue_loan', 'venture_debt', 'murabaha', 'hpp'];

/** One monthly figure as the platform reported it. */
export interface SourceAmount {
  /** Calendar month, `YYYY-MM`. */
  month: string;
  /** ISO 4217 code. */
  currency: string;
  amount: number;
}

/** One monthly figure after conversion; `amountEur` is null when the currency has no rate (D17). */
export interface MonthlyRevenue {
  month: string;
  sourceCurrency: string;
  sourceAmount: number;
  amountEur: number | null;
}

export interface PlatformIncome {
  platform: Platform;
  status: ConnectionStatus;
  connectedAt?: string | null;
  /** Any order; several records for one month (e.g. two currencies) are added together. */
  months: readonly MonthlyRevenue[];
}

export interface TapeInput {
  verificationId: string;
  obligorReference: string;
  productType: ProductType;
  /** One entry per requested platform, in request order; a platform never connected has status `not_connected`. */
  platforms: readonly PlatformIncome[];
  /** The lender account's data-protection regime (D9). */
  jurisdiction: Jurisdiction;
  /** The lender's overrides for this product type (D9); validated, refused with PolicyOverrideError. */
  policyOverrides?: Readonly<Record<string, unknown>>;
  /** Enables the affordability block (D21). */
  declaredMonthlyObligationsEur?: number | null;
  /** Overlays attached to the verification (D20), oldest first. */
  overlays?: readonly OverlayBlock[];
}

/** Reference rates in the ECB convention: units of the currency per 1 euro. */
export interface RateTable {
  source: string;
  asOf: string;
  unitsPerEur: Readonly<Record<string, number>>;
}

/**
 * Sandbox default. Illustrative values in the ECB convention, not live rates: a production operator
 * replaces this table with its own reference rates (D17).
 */
export const DEFAULT_RATE_TABLE: RateTable = {
  source: 'Illustrative euro reference rates (sandbox default; replace in production)',
  asOf: '2026-01-02',
  unitsPerEur: {
    EUR: 1,
    USD: 1.08,
    GBP: 0.85,
    CHF: 0.95,
    JPY: 160,
    CAD: 1.47,
    AUD: 1.63,
    SEK: 11.2,
    NOK: 11.6,
    DKK: 7.46,
    PLN: 4.3,
  },
};

/** Converts each figure to euro cents; a currency without a usable rate gives `amountEur: null`, never a guess. */
export function convertToEuro(table: RateTable, amounts: readonly SourceAmount[]): MonthlyRevenue[] {
  return amounts.map(({ month, currency, amount }) => {
    const code = currency.toUpperCase();
    const rate = Object.hasOwn(table.unitsPerEur, code) ? table.unitsPerEur[code] : undefined;
    const usable = rate !== undefined && Number.isFinite(rate) && rate > 0 && Number.isFinite(amount);
    return { month, sourceCurrency: code, sourceAmount: amount, amountEur: usable ? cents(amount / rate) : null };
  });
}

const digitsAt = (s: string, from: number, to: number): number => {
  let n = 0;
  for (let i = from; i < to; i++) {
    const d = s.charCodeAt(i) - 48;
    if (d < 0 || d > 9) return -1;
    n = n * 10 + d;
  }
  return n;
};

/** `YYYY-MM` as a month count, so months compare and subtract as integers. Hand-parsed: this runs per record. */
export function monthIndex(month: string): number {
  const year = month.length === 7 && month.charCodeAt(4) === 45 ? digitsAt(month, 0, 4) : -1;
  const m = year < 0 ? -1 : digitsAt(month, 5, 7);
  if (m < 1 || m > 12) throw new TypeError(`month must be YYYY-MM, got ${JSON.stringify(month)}`);
  return year * 12 + m - 1;
}

export const monthOfDate = (d: Date): number => d.getUTCFullYear() * 12 + d.getUTCMonth();

export const monthString = (index: number): string => `${String(Math.floor(index / 12)).padStart(4, '0')}-${String((index % 12) + 1).padStart(2, '0')}`;

/** Last calendar day of a month, `YYYY-MM-DD`. */
export function lastDayOfMonth(index: number): string {
  const d = new Date(0);
  d.setUTCFullYear(Math.floor(index / 12), (index % 12) + 1, 0);
  return `${monthString(index)}-${String(d.getUTCDate()).padStart(2, '0')}`;
}
