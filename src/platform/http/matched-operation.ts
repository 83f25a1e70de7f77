import type { Request } from 'express';

/** What express-openapi-validator puts on a request whose path and method it found in the contract. */
interface ValidatorMetadata {
  openapi?: { schema?: { operationId?: string }; pathParams?: Record<string, string> };
}

/**
 * The contract operation express-openapi-validator matched for the request, once its route lookup
 * has run (every API request, before any handler), with the path parameters it decoded.
 */
export function matchedOperation(req: Request): { operationId: string; pathParams: Record<string, string> } | undefined {
  const { openapi } = req as ValidatorMetadata;
  const operationId = openapi?.schema?.operationId;
  return operationId === undefined ? undefined : { operationId, pathParams: openapi!.pathParams ?? {} };
}

/**
 * Where the app announces, synchronously, the Express-style route of the operation each API request
 * is handed to (`{ route: '/api/v1/verifications/:verification_id' }`). The operations share one
 * Express layer (app.ts), so Express's OpenTelemetry instrumentation sees no route of theirs; tracing
 * subscribes here to name the request's span by it. Nothing is published without a subscriber.
 */
export const OPERATION_ROUTE_CHANNEL = 'creator-income-verification:operation-route';
