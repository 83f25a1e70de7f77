import type { operations } from '../../../generated/api.ts';
import type { Principal } from '../../accounts/model.ts';
import type { OperationId } from './api-document.ts';

type Part<Op extends OperationId, K extends string> = operations[Op]['parameters'] extends Record<K, infer P>
  ? NonNullable<P>
  : Record<string, never>;

type JsonBody<Op extends OperationId> = operations[Op] extends { requestBody: { content: { 'application/json': infer B } } }
  ? B
  : operations[Op] extends { requestBody?: { content: { 'application/json': infer B } } }
    ? B | undefined
    : undefined;

/**
 * What a handler sees of a request: already authenticated and validated against the spec, with
 * nothing of Express in it, so handlers stay thin adapters from HTTP to use-case functions.
 */
export interface OperationRequest<Op extends OperationId = OperationId> {
  params: Part<Op, 'path'>;
  query: Part<Op, 'query'>;
  headers: Part<Op, 'header'>;
  body: JsonBody<Op>;
  /** Null only for the public operations (health probes). */
  principal: Principal | null;
  requestId: string;
}

export interface OperationResponse {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

export type OperationHandler<Op extends OperationId = OperationId> = (request: OperationRequest<Op>) => Promise<OperationResponse>;

/** For handlers of lender- or gdpr_admin-only operations, where the security layer guarantees a principal. */
export function principalOf(request: OperationRequest<any>): Principal {
  if (!request.principal) throw new Error('operation reached without an authenticated principal');
  return request.principal;
}
