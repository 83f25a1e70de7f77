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
