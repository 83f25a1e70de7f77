import type { RequestHandler } from 'express';
import { DomainError } from '../../platform/domain-error.ts';
import { PRODUCT_TYPES } from '../../tape/index.ts';
import { VERIFICATION_STATES } from '../../verifications/state-machine.ts';
import type { VerificationLifecycle } from '../../verifications/verification-lifecycle.ts';
import { verificationListPage, type ListFilters } from '../pages.ts';
import { one, viewerOf, type Dashboard } from './context.ts';

/** `/dashboard` itself: the dashboard opens on the verifications. */
export function home(): RequestHandler {
  return (_req, res) => res.redirect(303, '/dashboard/verifications');
}

export function verificationList({ deps, html }: Dashboard): RequestHandler {
  return async (req, res) => {
    const viewer = viewerOf(res);
    const filters: ListFilters = {};
    for (const name of ['status', 'obligor_reference', 'product_type', 'created_gte', 'created_lt'] as const) {
      const value = one(req.query[name])?.trim();
      if (value) filters[name] = value;
    }
    const limit = one(req.query.limit);
    if (limit && /^\d{1,3}$/.test(limit)) filters.limit = Math.min(Math.max(Number(limit), 1), 100);
    const page = { filters, statuses: VERIFICATION_STATES, productTypes: PRODUCT_TYPES };
    try {
      if (filters.status && !(VERIFICATION_STATES as readonly string[]).includes(filters.status))
        throw new DomainError('invalid', `There is no status "${filters.status}".`);
      if (filters.product_type && !(PRODUCT_TYPES as readonly string[]).includes(filters.product_type)) {
        throw new DomainError('invalid', `There is no product type "${filters.product_type}".`);
      }
      type ListQuery = Parameters<VerificationLifecycle['listForLender']>[1];
      const { status, ...others } = filters;
      const list = await deps.lifecycle.listForLender(viewer.lender.id, {
        ...(others as Omit<ListQuery, 'status'>),
        // The page's form picks one state; the API takes several.
        status: status ? [status as NonNullable<ListQuery['status']>[number]] : undefined,
        starting_after: one(req.query.starting_after),
      });
      return html(res, 200, verificationListPage(viewer, { ...page, data: list.data, hasMore: list.has_more }));
    } catch (error) {
      if (!(error instanceof DomainError) || error.kind !== 'invalid') throw error;
      return html(res, 400, verificationListPage(viewer, { ...page, data: [], hasMore: false, error: error.message }));
    }
  };
}
