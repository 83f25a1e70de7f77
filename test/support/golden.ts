import type { SyntheticReference } from '../../src/tape/index.ts';

/** `now` of the golden tapes in spec/examples/tapes: their as-of month is 2026-10. */
export const GOLDEN_NOW = '2026-11-21T10:16:00.000Z';

/** `vrf_golden` + the reference in PascalCase, e.g. vrf_goldenDemoYtMid. */
export const goldenVerificationId = (reference: SyntheticReference): string =>
  `vrf_golden${reference
    .split(/[-_]/)
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join('')}`;
