import { isSyntheticCreator, syntheticTapeInput, type PlatformIncome } from '../tape/index.ts';
import type { FailureReason, Transition } from './state-machine.ts';
import type { CollectionOutcome, IncomeSource } from './verification-lifecycle.ts';
import type { VerificationRecord, VerificationsRepository } from './verifications-repository.ts';

/** Synthetic creator whose income a `test-` verification receives (D11: "a tape from synthetic data"). */
export const SANDBOX_TAPE_SOURCE = 'demo_prime_multi';

export interface SandboxStep {
  trigger: Transition['trigger'];
  reason?: FailureReason;
  /** When the step happens, as a share of SANDBOX_COMPLETE_DELAY_MS after creation. */
  atShareOfDelay: number;
}

/**
 * The `test-` prefixes of section 3 and D11. The outcome arrives after the configured delay;
 * `processing` is entered halfway, so every row of the state table is observable in the sandbox.
 */
const SCENARIOS: Array<{ prefix: string; steps: SandboxStep[] }> = [
  {
    prefix: 'test-complete-',
    steps: [
      { trigger: 'consent_completed', atShareOfDelay: 0.5 },
      { trigger: 'tape_computed', atShareOfDelay: 1 },
    ],
  },
  {
    prefix: 'test-fail-',
    steps: [
      { trigger: 'consent_completed', atShareOfDelay: 0.5 },
      { trigger: 'collection_failed', reason: 'platform_error', atShareOfDelay: 1 },
    ],
  },
  {
    prefix: 'test-revoke-',
    steps: [
      { trigger: 'consent_completed', atShareOfDelay: 0.5 },
      { trigger: 'collection_failed', reason: 'consent_revoked', atShareOfDelay: 1 },
    ],
  },
  {
    prefix: 'test-timeout-',
    steps: [
      { trigger: 'consent_completed', atShareOfDelay: 0.5 },
      { trigger: 'collection_failed', reason: 'timeout', atShareOfDelay: 1 },
    ],
  },
  { prefix: 'test-expire-', steps: [{ trigger: 'consent_expired', atShareOfDelay: 1 }] },
  // Completed as `test-complete-`; their refreshes (P33) fail or find the grant revoked (REFRESH_OUTCOMES).
  ...['test-refresh-fail-', 'test-refresh-revoke-'].map((prefix) => ({
    prefix,
    steps: [
      { trigger: 'consent_completed' as const, atShareOfDelay: 0.5 },
      { trigger: 'tape_computed' as const, atShareOfDelay: 1 },
    ],
  })),
];

/** The `test-` prefixes whose refreshes do not read income (P33): every one fails, or the first finds the grant revoked. */
const REFRESH_OUTCOMES: Array<{ prefix: string; reason: 'platform_error' | 'consent_revoked' }> = [
  { prefix: 'test-refresh-fail-', reason: 'platform_error' },
  { prefix: 'test-refresh-revoke-', reason: 'consent_revoked' },
];

/** Each new month of a sandbox refresh earns this share of the month before it. */
export const SANDBOX_REFRESH_MONTHLY_FACTOR = 0.9;

export function sandboxSteps(obligorReference: string): SandboxStep[] | null {
  return SCENARIOS.find((scenario) => obligorReference.startsWith(scenario.prefix))?.steps ?? null;
}

export function stepDelayMs(step: SandboxStep, delayMs: number): number {
  return Math.round(step.atShareOfDelay * delayMs);
}

/**
 * Synthetic income for a sandbox verification, one entry per requested platform: a synthetic
 * creator's own series, otherwise SANDBOX_TAPE_SOURCE's income for the requested platforms. A
 * platform not in `connected` (when given) has no data, as a creator who left it unconnected. A
 * platform is connected at `now` unless `connected` knows when (its synthetic account's time, P35),
 * so a refresh's tape shows the connection time of the first, as a grant's would.
 */
export function sandboxIncome(
  verification: Pick<VerificationRecord, 'id' | 'obligorReference' | 'creatorPlatforms'>,
  now: Date,
  connected?: ReadonlyMap<string, string | null>,
): PlatformIncome[] {
  const reference = verification.obligorReference;
  const since = (income: PlatformIncome): PlatformIncome => ({ ...income, connectedAt: connected?.get(income.platform) ?? income.connectedAt });
  if (isSyntheticCreator(reference)) return syntheticTapeInput(reference, { now, verificationId: verification.id }).platforms.map(since);
  const source = syntheticTapeInput(SANDBOX_TAPE_SOURCE, { now, verificationId: verification.id }).platforms;
  return verification.creatorPlatforms.map((platform) => {
    const income = source.find((p) => p.platform === platform);
    return income && (!connected || connected.has(platform)) ? since(income) : { platform, status: 'not_connected' as const, months: [] };
  });
}

/**
 * The income a sandbox refresh reads (P33), deterministic: refresh `n` is the first collection's
 * series with its `n` oldest months dropped and `n` new months added, each earning
 * SANDBOX_REFRESH_MONTHLY_FACTOR of the month before, the newest month being the last complete one
 * before the refresh. So every refresh finds a falling income, and its tape shows it sooner or later.
 */
export function sandboxRefreshIncome(
  verification: Pick<VerificationRecord, 'id' | 'obligorReference' | 'creatorPlatforms'>,
  refresh: number,
  now: Date,
  connected?: ReadonlyMap<string, string | null>,
): CollectionOutcome {
  const scripted = REFRESH_OUTCOMES.find((outcome) => verification.obligorReference.startsWith(outcome.prefix));
  if (scripted) return { kind: 'failed', reason: scripted.reason, platform: verification.creatorPlatforms[0]! };
  const platforms = sandboxIncome(verification, now, connected).map((income): PlatformIncome => {
    if (income.status !== 'connected' || income.months.length === 0) return income;
    const amounts = income.months.map((m) => ({ sourceAmount: m.sourceAmount, amountEur: m.amountEur }));
    for (let i = 0; i < refresh; i++) {
      const last = amounts[amounts.length - 1]!;
      const scaled = (value: number) => Math.round(value * SANDBOX_REFRESH_MONTHLY_FACTOR * 100) / 100;
      amounts.push({ sourceAmount: scaled(last.sourceAmount), amountEur: last.amountEur === null ? null : scaled(last.amountEur) });
    }
    const kept = amounts.slice(refresh);
    // The labels stay those of the months before `now`: the series moves, the calendar does not.
    return { ...income, months: income.months.map((m, i) => ({ ...m, ...kept[i]! })) };
  });
  return { kind: 'collected', platforms };
}

/** The sandbox's income source (D10: no real providers): synthetic income for the platforms the creator connected. */
export function sandboxIncomeSource(verifications: Pick<VerificationsRepository, 'connectedPlatforms'>): IncomeSource {
  return {
    collect: async (verification, now) => ({
      kind: 'collected',
      platforms: sandboxIncome(verification, now, await verifications.connectedPlatforms(verification.id)),
    }),
    collectAgain: async (verification, refresh, now) =>
      sandboxRefreshIncome(verification, refresh, now, await verifications.connectedPlatforms(verification.id)),
  };
}
