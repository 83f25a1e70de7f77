// Every figure printed on a tape is rounded here, and every decision is taken on the printed figure,
// so that a credit team recomputing a tape by hand reaches the same tier.

/**
 * Half away from zero at `scale` (100 for cents). The relative nudge undoes binary representation
 * error (1.005 is stored as 1.00499999...), and -0 is normalised because it would survive a deep
 * comparison but not a JSON round trip.
 */
function roundAt(x: number, scale: number): number {
  const r = (Math.sign(x) * Math.round(Math.abs(x) * scale * (1 + 4 * Number.EPSILON))) / scale;
  return r === 0 ? 0 : r;
}

/** Money: euro rounded to cents. */
export const cents = (x: number): number => roundAt(x, 100);

/** Ratios, shares and scores: 4 decimals. */
export const ratio = (x: number): number => roundAt(x, 10_000);

export const clamp = (x: number, lo: number, hi: number): number => Math.min(hi, Math.max(lo, x));
