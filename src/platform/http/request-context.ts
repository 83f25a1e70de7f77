import type { Principal } from '../principal.ts';
import type { Outcome as RateLimitOutcome } from './rate-limit.ts';

// What the middleware chain adds to a request before its handler runs.
declare module 'express-serve-static-core' {
  interface Request {
    /** Set by the authentication middleware (accounts/) for /api/v1 requests. */
    principal?: Principal;
    /** Set with the principal when the same statement counted the request against the key's quota. */
    rateLimitOutcome?: RateLimitOutcome;
    requestId?: string;
  }
}

/** express-openapi-validator answers a security handler's throw with the thrown value's `status` and `message`. */
class SecurityRefusal extends Error {
  readonly status: 401 | 403;

  constructor(status: 401 | 403, message: string) {
    super(message);
    this.name = 'SecurityRefusal';
    this.status = status;
  }
}

/**
 * The security handler express-openapi-validator calls for `bearerAuth`: the spec lists the roles
 * allowed for each operation as the requirement's scopes (OpenAPI 3.1 allows role names there).
 */
export function requireRole(req: { principal?: Principal }, roles: string[]): true {
  if (!req.principal) throw new SecurityRefusal(401, 'Missing Authorization header; send "Authorization: Bearer <API_KEY>".');
  if (roles.length > 0 && !roles.includes(req.principal.role)) {
    throw new SecurityRefusal(403, `This operation needs a key with the ${roles.join(' or ')} role; this key has the ${req.principal.role} role.`);
  }
  return true;
}
