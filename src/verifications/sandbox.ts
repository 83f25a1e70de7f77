import { isSyntheticCreator, syntheticTapeInput, type PlatformIncome } from '../tape/index.ts';
import type { FailureReason, Transition } from './state-machine.ts';
import type { IncomeSource } from './verification-lifecycle.ts';
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
];

export function sandboxSteps(obligorReference: string): SandboxStep[] | null {
  return SCENARIOS.find((scenario) => obligorReference.startsWith(scenario.prefix))?.steps ?? null;
}

export function stepDelayMs(step: SandboxStep, delayMs: number): number {
  return Math.round(step.atShareOfDelay * delayMs);
}

/**
 * Synthetic income for a sandbox verification, one entry per requested platform: a synthetic
 * creator's own series, otherwise SANDBOX_TAPE_SOURCE's income for the requested platforms. A
 * platform not in `connected` (when given) has no data, as a creator who left it unconnected.
 */
export function sandboxIncome(
  verification: Pick<VerificationRecord, 'id' | 'obligorReference' | 'creatorPlatforms'>,
  now: Date,
  connected?: ReadonlySet<string>,
): PlatformIncome[] {
  const reference = verification.obligorReference;
  if (isSyntheticCreator(reference)) return [...syntheticTapeInput(reference, { now, verificationId: verification.id }).platforms];
  const source = syntheticTapeInput(SANDBOX_TAPE_SOURCE, { now, verificationId: verification.id }).platforms;
  return verification.creatorPlatforms.map((platform) => {
    const income = source.find((p) => p.platform === platform);
    return income && (!connected || connected.has(platform)) ? income : { platform, status: 'not_connected' as const, months: [] };
  });
}

/** The sandbox's income source (D10: no real providers): synthetic income for the platforms the creator connected. */
export function sandboxIncomeSource(verifications: Pick<VerificationsRepository, 'connectedPlatforms'>): IncomeSource {
  return {
    collect: async (verification, now) => ({
      kind: 'collected',
      platforms: sandboxIncome(verification, now, await verifications.connectedPlatforms(verification.id)),
    }),
  };
}
