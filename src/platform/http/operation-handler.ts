import type { operations } from '../../../generated/api.ts';
import type { Principal } from '../principal.ts';
import type { OperationId } from './api-document.ts';

type Part<Op extends OperationId, K extends string> = operations[Op]['parameters'] extends Record<K, infer P> ? NonNullable<P> : Record<string, never>;

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

type Responses<Op extends OperationId> = operations[Op]['responses'];

/** The body the spec gives a response: its (only) media type's schema, or nothing (204). */
type BodyOf<R> = R extends { content: infer Content } ? Content[keyof Content] : undefined;

/**
 * What a handler answers, derived from `operations[Op]['responses']` of generated/api.ts: only a
 * status the spec lists for the operation, with that status's body. A field removed or retyped in
 * spec/ therefore breaks the type check of every handler that still sends it. Errors are thrown,
 * not returned.
 */
export type OperationResponse<Op extends OperationId = OperationId> = {
  [Status in keyof Responses<Op> & (200 | 201 | 202 | 204)]: {
    status: Status;
    headers?: Record<string, string>;
    /**
     * The body already serialised, sent byte for byte instead of serialising `body` (which it must
     * be the JSON of): for a response whose exact bytes something else covers, such as a signature.
     * `body` is then read only by the response validator, so it may be a getter that parses late.
     */
    serialized?: string;
  } & (BodyOf<Responses<Op>[Status]> extends undefined ? { body?: undefined } : { body: BodyOf<Responses<Op>[Status]> });
}[keyof Responses<Op> & (200 | 201 | 202 | 204)];

export type OperationHandler<Op extends OperationId = OperationId> = (request: OperationRequest<Op>) => Promise<OperationResponse<Op>>;

/** For handlers of lender- or gdpr_admin-only operations, where the security layer guarantees a principal. */
export function principalOf(request: Pick<OperationRequest, 'principal'>): Principal {
  if (!request.principal) throw new Error('operation reached without an authenticated principal');
  return request.principal;
}
