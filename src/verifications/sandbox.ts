import type { FailureReason, Transition } from './state-machine.ts';

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
  { prefix: 'test-complete-', steps: [{ trigger: 'consent_completed', atShareOfDelay: 0.5 }, { trigger: 'tape_computed', atShareOfDelay: 1 }] },
  { prefix: 'test-fail-', steps: [{ trigger: 'consent_completed', atShareOfDelay: 0.5 }, { trigger: 'collection_failed', reason: 'platform_error', atShareOfDelay: 1 }] },
  { prefix: 'test-revoke-', steps: [{ trigger: 'consent_completed', atShareOfDelay: 0.5 }, { trigger: 'collection_failed', reason: 'consent_revoked', atShareOfDelay: 1 }] },
  { prefix: 'test-timeout-', steps: [{ trigger: 'consent_completed', atShareOfDelay: 0.5 }, { trigger: 'collection_failed', reason: 'timeout', atShareOfDelay: 1 }] },
  { prefix: 'test-expire-', steps: [{ trigger: 'consent_expired', atShareOfDelay: 1 }] },
];

export function sandboxSteps(obligorReference: string): SandboxStep[] | null {
  return SCENARIOS.find((scenario) => obligorReference.startsWith(scenario.prefix))?.steps ?? null;
}

export function stepDelayMs(step: SandboxStep, delayMs: number): number {
  return Math.round(step.atShareOfDelay * delayMs);
}
