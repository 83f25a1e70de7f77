import type { RequestHandler } from 'express';
import type { ApiOperation } from './api-document.ts';

/**
 * What the validator is told of a request whose media type no operation of the contract takes: one
 * value for all of them, which it refuses (415, `bad_request` in the catalogue) where the operation
 * takes a body and ignores where it takes none, as it did each of them.
 */
export const UNSUPPORTED_MEDIA_TYPE = 'application/x-unsupported';

/** A media type as the contract may write one for a request body: `type/subtype`, no wildcard, no parameter. */
const CONCRETE_MEDIA_TYPE = /^[a-z0-9!#$&^_.+-]+\/[a-z0-9!#$&^_.+-]+$/;

/**
 * The Content-Type the validator is given for a request's header: none for none (or one without a
 * media type), the media type alone, lower-cased, when an operation of the contract takes it, and
 * UNSUPPORTED_MEDIA_TYPE for any other. The validator picks the request body's schema by the media
 * type only, as this keeps it (a parameter such as `charset` never changes its choice; the JSON parser
 * before it has read the charset already), so every request is judged as with its own header.
 */
export function contractContentType(header: string | undefined, accepted: ReadonlySet<string>): string | undefined {
  // Split and trimmed as express-openapi-validator reads it.
  const mediaType = header?.split(';')[0]!.toLowerCase().trim();
  if (!mediaType) return undefined;
  return accepted.has(mediaType) ? mediaType : UNSUPPORTED_MEDIA_TYPE;
}

/**
 * Put in front of express-openapi-validator: it replaces each request's Content-Type with the few the
 * contract can tell apart. The validator's request and response validators keep what they compile
 * for each operation under the Content-Type text of the request, for ever: any caller could vary its
 * parameters (`; v=1`, `; v=2`...), or on an operation without a body its media type, and have new
 * validators compiled and kept on every request, the server's memory growing without bound. Given
 * these, an operation without a request body is never given a Content-Type (it does not look at
 * one), and an operation with one is given one of its media types, UNSUPPORTED_MEDIA_TYPE or none
 * (contractContentType). A request without the header, every usual read, is passed on untouched.
 */
export function contentTypeOfContract(operations: ApiOperation[]): RequestHandler {
  const concrete = (types: string[]) => {
    const lowerCased = types.map((type) => type.toLowerCase());
    // A wildcard (`application/*`) or a parameter in the contract would take media types this does
    // not keep: fail at start, not by refusing requests the contract accepts.
    const unusual = lowerCased.filter((type) => !CONCRETE_MEDIA_TYPE.test(type) || type === UNSUPPORTED_MEDIA_TYPE);
    if (unusual.length > 0) throw new Error(`Request body media types contentTypeOfContract cannot keep: ${unusual.join(', ')}`);
    return new Set(lowerCased);
  };
  const routes = operations.map((operation) => ({
    method: operation.method.toUpperCase(),
    pattern: operation.exactPath,
    accepted: operation.requestMediaTypes.length > 0 ? concrete(operation.requestMediaTypes) : undefined,
  }));
  // Paths the validator matches that are no operation's exact path (`/healthz/`), for which it refuses
  // or finds nothing: any media type of the contract or none.
  const anyAccepted = concrete(operations.flatMap((operation) => operation.requestMediaTypes));
  return (req, _res, next) => {
    const header = req.headers['content-type'];
    if (header === undefined) return next();
    const method = req.method === 'HEAD' ? 'GET' : req.method;
    const route = routes.find((candidate) => candidate.method === method && candidate.pattern.test(req.path));
    const forwarded = route && !route.accepted ? undefined : contractContentType(header, route?.accepted ?? anyAccepted);
    if (forwarded === undefined) delete req.headers['content-type'];
    else if (forwarded !== header) req.headers['content-type'] = forwarded;
    next();
  };
}
