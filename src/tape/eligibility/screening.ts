// AML, KYB and credit bureau overlays judge the creator, not the income, so no income figure can
// show them: each verdict the engine reads becomes a flag of its own, and an adverse one limits the
// tier for every product type (P34). A verdict it cannot read is never guessed at; it asks for review.
import type { OverlayBlock } from '../../../generated/tape.ts';
import { normaliseVerdict } from '../blocks.ts';
import type { Finding } from './types.ts';

export type ScreeningType = Exclude<OverlayBlock['type'], 'sharia_screening'>;

interface ScreeningRule {
  /** How a flag's message names the overlay. */
  name: string;
  /** Normalised statuses (normaliseVerdict) that lift the adverse flag. */
  favourable: readonly string[];
  adverse: readonly string[];
  /** Flag of an adverse latest verdict and the best tier it leaves. */
  adverseFlag: { code: string; limit: 'ineligible' | 'subprime' };
  /** Flag of a latest status that is in neither list. */
  reviewFlag: { code: string };
}

/** Checked against the table of docs/scoring.md section 4 by scoring-doc.test.ts. */
export const SCREENING_RULES = {
  aml: {
    name: 'AML screening',
    favourable: ['clear', 'no_hit', 'no_match', 'negative'],
    adverse: ['hit', 'match', 'potential_match', 'positive'],
    // Lending to a sanctioned or listed person is not a matter of degree: nothing until cleared.
    adverseFlag: { code: 'AML_HIT', limit: 'ineligible' },
    reviewFlag: { code: 'AML_REVIEW_REQUIRED' },
  },
  kyb: {
    name: 'KYB check',
    favourable: ['pass', 'passed', 'verified', 'approved', 'clear'],
    adverse: ['fail', 'failed', 'rejected', 'not_verified', 'declined'],
    // A business that could not be verified cannot be the borrower, whatever it earns.
    adverseFlag: { code: 'KYB_FAILED', limit: 'ineligible' },
    reviewFlag: { code: 'KYB_REVIEW_REQUIRED' },
  },
  credit_bureau: {
    name: 'Credit bureau report',
    favourable: ['clear', 'satisfactory', 'no_adverse'],
    adverse: ['adverse', 'default', 'delinquent', 'insolvency'],
    // The engine weighs no bureau score against the income; it only keeps an adverse record from
    // presenting as prime or standard, and leaves refusal to the lender, who knows the bureau's scale.
    adverseFlag: { code: 'CREDIT_BUREAU_ADVERSE', limit: 'subprime' },
    reviewFlag: { code: 'CREDIT_BUREAU_REVIEW_REQUIRED' },
  },
} as const satisfies Record<ScreeningType, ScreeningRule>;

export const SCREENING_TYPES = Object.keys(SCREENING_RULES) as ScreeningType[];

function verdictOf(rule: ScreeningRule, status: string): 'favourable' | 'adverse' | undefined {
  const verdict = normaliseVerdict(status);
  if (rule.adverse.includes(verdict)) return 'adverse';
  if (rule.favourable.includes(verdict)) return 'favourable';
  return undefined;
}

/** On equal observed_at the later attached wins, as for sharia_screening (blocks.ts). */
const notEarlier = (o: OverlayBlock, than: OverlayBlock | undefined) => !than || Date.parse(o.observed_at) >= Date.parse(than.observed_at);

const said = (o: OverlayBlock, name: string) => `${name} by ${o.provider} observed at ${o.observed_at} reported ${JSON.stringify(o.status)}`;

/**
 * Per type, the latest overlay with a status the engine reads decides; a later one it cannot read
 * neither lifts nor sets the adverse flag (else any odd status would clear a hit) but asks for review.
 */
export function screeningFindings(overlays: readonly OverlayBlock[]): Finding[] {
  const out: Finding[] = [];
  for (const type of SCREENING_TYPES) {
    const rule: ScreeningRule = SCREENING_RULES[type];
    let latest: OverlayBlock | undefined;
    let decisive: OverlayBlock | undefined;
    for (const o of overlays) {
      if (o.type !== type) continue;
      if (notEarlier(o, latest)) latest = o;
      if (verdictOf(rule, o.status) !== undefined && notEarlier(o, decisive)) decisive = o;
    }
    if (decisive && verdictOf(rule, decisive.status) === 'adverse') {
      const { code, limit } = rule.adverseFlag;
      const until = limit === 'ineligible' ? 'ineligible' : `at most ${limit}`;
      out.push({ code, limit, message: `${said(decisive, rule.name)}: ${until} until a later ${type} overlay reports ${rule.favourable[0]}.` });
    }
    if (latest && latest !== decisive)
      out.push({
        code: rule.reviewFlag.code,
        limit: null,
        severity: 'warning',
        message: `${said(latest, rule.name)}, which is not a verdict the service reads (docs/scoring.md); review the report${
          decisive ? `. The ${rule.name} verdict of ${decisive.observed_at} still applies` : ''
        }.`,
      });
  }
  return out;
}
