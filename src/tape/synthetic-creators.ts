// The nine synthetic creators of the sandbox (section 2.6): fixed monthly series, as data. The last
// amount of each series is the as-of month, the month before `now`, so a sandbox tape computed on any
// day has the same figures; only its dates move.
import type { OverlayBlock } from '../../generated/tape.ts';
import {
  convertToEuro,
  DEFAULT_RATE_TABLE,
  type Jurisdiction,
  monthOfDate,
  monthString,
  type Platform,
  type ProductType,
  type RateTable,
  type TapeInput,
  type Tier,
} from './income.ts';

export interface SyntheticCreator {
  /** Profile as section 2.6 states it. */
  profile: string;
  /** Tier section 2.6 states, for rbf under the default policy. */
  tier: Tier;
  /** Monthly amounts in the platform's currency, oldest first. */
  series: Partial<Record<Platform, { currency: string; amounts: readonly number[] }>>;
}

export const SYNTHETIC_CREATORS = {
  demo_prime_multi: {
    profile: 'multi-platform, stable, 24+ months',
    tier: 'prime',
    series: {
      youtube: {
        currency: 'EUR',
        amounts: [
          5362.24, 5557.63, 5673.07, 5418.05, 5561.33, 5636.49, 5460.1, 5126.31, 5242.16, 5373.49, 5089.96, 5163.81, 5761.32, 5971.25, 6095.28, 5821.28,
          5975.23, 6055.98, 5866.46, 5507.83, 5632.31, 5773.41, 5468.77, 5548.13, 6190.1, 6415.65, 6548.92, 6254.52, 6419.93, 6506.7,
        ],
      },
      stripe: {
        currency: 'EUR',
        amounts: [
          3418.8, 3555.29, 3633.06, 3440.19, 3538.19, 3586.33, 3451.25, 3201.96, 3279.79, 3368.67, 3156.57, 3203.73, 3629.66, 3774.57, 3857.14, 3652.37,
          3756.42, 3807.53, 3664.11, 3399.45, 3482.08, 3576.44, 3351.26, 3401.33, 3853.53, 4007.38, 4095.04, 3877.65, 3988.1, 4042.37,
        ],
      },
    },
  },
  single_platform_95: {
    profile: 'YouTube-only, high concentration',
    tier: 'standard',
    series: {
      youtube: {
        currency: 'EUR',
        amounts: [
          6246.4, 6418.37, 6517.83, 6284.62, 6408.93, 6471.9, 6310.35, 6009.4, 6109.02, 6221.98, 5967.53, 6029.65, 6552.91, 6733.32, 6837.66, 6593, 6723.41,
          6789.48, 6620, 6304.29, 6408.79, 6527.29, 6260.36, 6325.52,
        ],
      },
    },
  },
  volatile_subprime: {
    profile: 'high volatility, short history, drawdowns',
    tier: 'subprime',
    series: {
      youtube: { currency: 'EUR', amounts: [1850, 5400.4, 1200.15, 4300, 2100.8, 6100, 1400.35, 3200, 4700.6] },
    },
  },
  short_history_5mo: {
    profile: '5 months of data',
    tier: 'subprime',
    series: {
      youtube: { currency: 'EUR', amounts: [2400.1, 2550.45, 2480, 2620.3, 2700.95] },
      stripe: { currency: 'EUR', amounts: [900, 950.2, 880.6, 1010.05, 990.4] },
    },
  },
  seasonal_spikes: {
    // A travel creator: two identical years, peaking in the summer months.
    profile: 'seasonal revenue',
    tier: 'standard',
    series: {
      youtube: {
        currency: 'EUR',
        amounts: [
          2104.96, 1996.8, 1606.8, 1705.21, 2115.36, 2652, 3396.9, 5345.34, 6402.5, 5674.24, 2774.2, 2276.82, 2104.96, 1996.8, 1606.8, 1705.21, 2115.36, 2652,
          3396.9, 5345.34, 6402.5, 5674.24, 2774.2, 2276.82,
        ],
      },
      stripe: {
        currency: 'EUR',
        amounts: [
          819.72, 1013.76, 648.9, 635.67, 732.24, 826.2, 994.95, 1409.76, 1684.35, 1517.76, 873, 788.13, 819.72, 1013.76, 648.9, 635.67, 732.24, 826.2, 994.95,
          1409.76, 1684.35, 1517.76, 873, 788.13,
        ],
      },
    },
  },
  demo_subprime_multi: {
    profile: 'multi-platform, declining',
    tier: 'subprime',
    series: {
      youtube: {
        currency: 'EUR',
        amounts: [
          6072, 5898.24, 5695.49, 5356.19, 5182.71, 4990.08, 4720.03, 4414, 4263.41, 4121.96, 3869.33, 3726.04, 3720.37, 3613.91, 3489.68, 3281.79, 3175.5,
          3057.47,
        ],
      },
      stripe: {
        currency: 'EUR',
        amounts: [
          2530, 2470.4, 2397.9, 2266.8, 2204.81, 2133.91, 2028.94, 1907.28, 1851.8, 1799.69, 1698.18, 1643.82, 1649.86, 1611, 1563.72, 1478.23, 1437.8, 1391.57,
        ],
      },
    },
  },
  'demo-yt-mid': {
    profile: 'mid-tier YouTube',
    tier: 'standard',
    series: {
      youtube: {
        currency: 'EUR',
        amounts: [
          3584, 3679, 3732.29, 3595.16, 3662.62, 3694.93, 3599.11, 3424.05, 3477.34, 3538.11, 3390.04, 3421.92, 3715.17, 3813.66, 3868.9, 3726.75, 3796.68,
          3830.16, 3730.84, 3549.37,
        ],
      },
    },
  },
  'demo-stripe-micro': {
    // Reported in US dollars, so the sandbox shows the conversion of D17.
    profile: 'Stripe-only, micro revenue',
    tier: 'standard',
    series: {
      stripe: {
        currency: 'USD',
        amounts: [328.6, 348.59, 359.36, 327.85, 341.76, 347.87, 325.45, 285.31, 296.06, 308.49, 274.23, 280.19, 344.72, 365.69],
      },
    },
  },
  'demo-yt-nano': {
    profile: 'nano YouTube, minimal history',
    tier: 'subprime',
    series: { youtube: { currency: 'EUR', amounts: [48.2, 61.75, 55.1, 72.4] } },
  },
} as const satisfies Record<string, SyntheticCreator>;

export type SyntheticReference = keyof typeof SYNTHETIC_CREATORS;

export const isSyntheticCreator = (reference: string): reference is SyntheticReference => Object.hasOwn(SYNTHETIC_CREATORS, reference);

export interface SyntheticOptions {
  now: Date;
  verificationId: string;
  productType?: ProductType;
  jurisdiction?: Jurisdiction;
  policyOverrides?: Readonly<Record<string, unknown>>;
  declaredMonthlyObligationsEur?: number | null;
  overlays?: readonly OverlayBlock[];
  rates?: RateTable;
}

/** The engine input of a synthetic creator: every platform connected at `now`, series ending the month before. */
export function syntheticTapeInput(reference: SyntheticReference, options: SyntheticOptions): TapeInput {
  const { now, rates = DEFAULT_RATE_TABLE } = options;
  const asOf = monthOfDate(now) - 1;
  const series: SyntheticCreator['series'] = SYNTHETIC_CREATORS[reference].series;
  return {
    verificationId: options.verificationId,
    obligorReference: reference,
    productType: options.productType ?? 'rbf',
    jurisdiction: options.jurisdiction ?? 'eu_gdpr',
    policyOverrides: options.policyOverrides,
    declaredMonthlyObligationsEur: options.declaredMonthlyObligationsEur,
    overlays: options.overlays,
    platforms: Object.entries(series).map(([platform, { currency, amounts }]) => ({
      platform: platform as Platform,
      status: 'connected',
      connectedAt: now.toISOString(),
      months: convertToEuro(
        rates,
        amounts.map((amount, i) => ({ month: monthString(asOf - amounts.length + 1 + i), currency, amount })),
      ),
    })),
  };
}
