import type { Principal } from '../principal.ts';

// What the middleware chain adds to a request before its handler runs.
declare module 'express-serve-static-core' {
  interface Request {
    /** Set by the authentication middleware (accounts/) for /api/v1 requests. */
    principal?: Principal;
    requestId?: string;
  }
}

/**
 * The security handler express-openapi-validator calls for `bearerAuth`: the spec lists the roles
 * allowed for each operation as the requirement's scopes (OpenAPI 3.1 allows role names there).
 */
export function requireRole(req: { principal?: Principal }, roles: string[]): true {
  if (!req.principal) throw { status: 401, message: 'Missing Authorization header; send "Authorization: Bearer <API_KEY>".' };
  if (roles.length > 0 && !roles.includes(req.principal.role)) {
    throw { status: 403, message: `This operation needs a key with the ${roles.join(' or ')} role; this key has the ${req.principal.role} role.` };
  }
  return true;
}
