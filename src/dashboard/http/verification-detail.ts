import type { Request, RequestHandler, Response } from 'express';
import { peerBenchmark } from '../../benchmarks/peer-benchmark.ts';
import { DomainError } from '../../platform/domain-error.ts';
import { renderableVersions } from '../../tape/index.ts';
import { incomeFigures } from '../income-chart.ts';
import { verificationPage, type TapeSummary } from '../pages.ts';
import { noticeOf, one, param, viewerOf, type Dashboard } from './context.ts';

const TAPE_ID = /^tap_[A-Za-z0-9]{1,96}$/;

/** A tape id from a query, checked before it reaches the lifecycle. */
export const tapeIdOf = (req: Request): string | undefined => {
  const tapeId = one(req.query.tape_id);
  if (tapeId !== undefined && !TAPE_ID.test(tapeId)) throw new DomainError('invalid', `There is no tape "${tapeId}".`);
  return tapeId;
};

/** Every tape of a verification, newest first: the history is walked page by page, however long. */
async function tapeHistory({ deps }: Dashboard, lenderId: string, verificationId: string): Promise<TapeSummary[]> {
  const tapes: TapeSummary[] = [];
  for (let after: string | undefined; ;) {
    const page = await deps.lifecycle.tapeHistoryForLender(lenderId, verificationId, { limit: 100, starting_after: after });
    tapes.push(...page.data);
    after = page.data.at(-1)?.tape_id;
    if (!page.has_more || !after) return tapes;
  }
}

/** The verification's page, shown by its GET and as the answer of a form of it that failed. */
export async function showVerification(dashboard: Dashboard, req: Request, res: Response, status: number, extra: { error?: string } = {}) {
  const { deps, html } = dashboard;
  const viewer = viewerOf(res);
  const lenderId = viewer.lender.id;
  const verification = await deps.lifecycle.findForLender(lenderId, param(req, 'id'));
  const timeline = verification && (await deps.lifecycle.timelineForLender(lenderId, verification.verification_id));
  if (!verification || !timeline) throw new DomainError('not_found', `There is no verification ${param(req, 'id')} in your account.`);
  const id = verification.verification_id;
  const completed = verification.status === 'completed';
  // A form's answer shows the latest tape whatever the page was showing.
  const tapeId = req.method === 'GET' ? tapeIdOf(req) : undefined;
  const history = completed ? await tapeHistory(dashboard, lenderId, id) : [];
  const tape = completed ? (await deps.lifecycle.tapeResponseForLender(lenderId, id, '2.0.0', tapeId)).tape : null;
  const shown = tapeId === undefined ? undefined : history.find((t) => t.tape_id === tapeId);
  const benchmark = completed ? await peerBenchmark(deps.benchmarks, lenderId, id) : null;
  const income = completed ? await deps.lifecycle.monthlyIncomeForLender(lenderId, id) : null;
  // Only the versions this tape can be rendered at: a 1.x of a product type added in 2.0.0 is refused (P6).
  const versions = tape ? [...renderableVersions(tape.eligibility.product_type)].reverse() : [];
  return html(
    res,
    status,
    verificationPage(viewer, {
      verification,
      timeline,
      tape,
      benchmark,
      versions,
      history,
      earlier: shown?.latest ? undefined : shown,
      income: income && incomeFigures(income),
      notice: req.method === 'GET' ? noticeOf(req) : undefined,
      ...extra,
    }),
  );
}

export function verificationDetail(dashboard: Dashboard): RequestHandler {
  return (req, res) => showVerification(dashboard, req, res, 200);
}
