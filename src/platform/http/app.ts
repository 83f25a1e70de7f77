import { createHash, randomUUID } from 'node:crypto';
import { channel } from 'node:diagnostics_channel';
import express, { type Express, type RequestHandler, type Response, type Router } from 'express';
import * as OpenApiValidator from 'express-openapi-validator';
import type { Config } from '../config.ts';
import type { Logger } from '../logger.ts';
import { assertSchemasCompile, listOperations, withPathsAlone, type ApiDocument, type ApiOperation, type OperationId } from './api-document.ts';
import { requireRole } from './request-context.ts';
import { ApiError, noSuchRoute } from './error-catalogue.ts';
import { BodyEncodingError, errorHandler } from './error-handler.ts';
import type { OperationHandler } from './operation-handler.ts';
import { contentTypeOfContract } from './content-type.ts';
import { documents } from './docs.ts';
import { headAsGet } from './head-as-get.ts';
import { matchedOperation, OPERATION_ROUTE_CHANNEL } from './matched-operation.ts';
import { requestLog, type ObserveRequest } from './request-log.ts';
import { rateLimitByKey, type RateLimits } from './rate-limit.ts';

export interface HttpAppDeps {
  config: Pick<Config, 'mode' | 'trustProxy' | 'validateResponses'>;
  logger: Logger;
  /** Resolves the bearer key of every /api/v1 request to `req.principal` (accounts/), or refuses it. */
  authenticate: RequestHandler;
  rateLimits: RateLimits;
  apiDocument: ApiDocument;
  handlers: { [Op in OperationId]?: OperationHandler<Op> };
  /** Operations in the spec whose handlers belong to work not yet delivered, with what delivers them. */
  pendingOperations: Partial<Record<OperationId, string>>;
  /** Counts every finished request (platform/metrics); absent when metrics are off (METRICS_PORT unset). */
  requestMetrics?: ObserveRequest;
  /** Browser pages outside the API (the creator's consent pages, the lender dashboard), mounted before the API. */
  pages?: Array<{ path: string; router: Router }>;
}

/** Requests bodies beyond this are refused as `bad_request` (D4). */
export const MAX_BODY_BYTES = 256 * 1024;

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });
/** A surrogate half without its other half: JSON can write one (`"\\ud800"`) but it is no character. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * Body bytes that are not UTF-8 would otherwise be decoded with U+FFFD in their place and stored as
 * if the client had sent that: refused instead, before any parsing.
 */
function refuseInvalidUtf8(_req: unknown, _res: unknown, body: Buffer): void {
  try {
    strictUtf8.decode(body);
  } catch {
    throw new BodyEncodingError('The request body is not valid UTF-8.');
  }
}

function refuseLoneSurrogates(key: string, value: unknown): unknown {
  if (LONE_SURROGATE.test(key) || (typeof value === 'string' && LONE_SURROGATE.test(value))) {
    throw new BodyEncodingError('The request body contains a lone UTF-16 surrogate (an escape such as \\ud800 without its pair).');
  }
  return value;
}

/** Any operation's handler, as the router sees it: which operation is known only at run time. */
type RoutedHandler = (request: never) => Promise<{ status: number; body?: unknown; headers?: Record<string, string>; serialized?: string }>;

/**
 * Sends a pre-serialised JSON body byte for byte while the response validator is on (without it,
 * `adapt` sends the bytes as they are). It goes through `res.json`, where the validator checks the
 * value, but the send that follows gets the handler's bytes instead of Express's serialisation of
 * the value. A validation failure answers with another status, whose body is left as it is.
 */
function sendSerialized(res: Response, status: number, value: unknown, serialized: string): void {
  const send = res.send;
  res.send = function (this: Response, chunk?: unknown) {
    res.send = send;
    return send.call(this, res.statusCode === status ? serialized : chunk);
  };
  res.json(value);
}

/**
 * The validator coerces integer query parameters with JavaScript's number rules, so `Infinity`,
 * `1e309` or `0x10` pass as numbers (and a page size of Infinity reached the query unbounded). An
 * integer parameter is written in plain decimal digits or it is refused.
 */
function refuseNonDecimalIntegers(operation: ApiOperation, originalUrl: string): void {
  if (operation.integerQueryParameters.length === 0) return;
  const query = new URLSearchParams(originalUrl.split('?')[1] ?? '');
  for (const name of operation.integerQueryParameters) {
    for (const value of query.getAll(name)) {
      if (!/^(0|[1-9][0-9]{0,8})$/.test(value)) {
        const issue = 'must be an integer written in decimal digits';
        throw new ApiError('validation_error', `query.${name}: ${issue}`, { details: [{ field: `query.${name}`, issue }] });
      }
    }
  }
}

function adapt(operation: ApiOperation, handler: RoutedHandler, validateResponses: boolean): RequestHandler {
  return async (req, res) => {
    refuseNonDecimalIntegers(operation, req.originalUrl);
    // The validator has checked params, query, headers and body against the spec by now, which is
    // what makes these the operation's types.
    const request = {
      params: req.params,
      query: req.query,
      // Spelled as in the spec (and the generated types), not as Node lower-cases them.
      headers: Object.fromEntries(operation.headerParameters.map((name) => [name, req.get(name)])),
      body: req.body as unknown,
      principal: req.principal ?? null,
      requestId: req.requestId!,
    };
    const response = await handler(request as never);
    for (const [name, value] of Object.entries(response.headers ?? {})) res.setHeader(name, value);
    res.status(response.status);
    // A pre-serialised body is sent without reading `body`, which may be parsed only when read (the tape).
    if (response.serialized !== undefined && !validateResponses) res.type('application/json').send(response.serialized);
    else if (response.serialized !== undefined) sendSerialized(res, response.status, response.body, response.serialized);
    else if (response.body === undefined) res.end();
    else res.json(response.body);
  };
}

/** The API's paths: every request under it is authenticated, counted and matched against the contract. */
const API_PREFIX = '/api/v1';

/**
 * Whether a request is under API_PREFIX, as `app.use(API_PREFIX, ...)` would mount it (a
 * case-sensitive prefix of whole segments), without the mount: a mounted layer has Express strip the
 * prefix from the URL and put it back, which makes the URL be parsed again for each layer after it.
 */
function isApiPath(path: string): boolean {
  return path === API_PREFIX || path.startsWith(`${API_PREFIX}/`);
}

/**
 * The handlers one after another in one Express layer, each handing over with `next()` as in its own
 * layer; the first error (thrown, rejected or passed to `next`) goes to Express's error handling and
 * skips the rest. Every layer is a turn of the router's loop with its own match and parameter
 * objects, on every request.
 */
export function inSeries(handlers: RequestHandler[]): RequestHandler {
  return (req, res, next) => {
    let index = 0;
    const step = (error?: unknown): void => {
      // As Express reads `next(value)`: a falsy value or 'route' carries on (to the next handler of
      // the series, not past the rest of it); anything else is an error.
      if (error && error !== 'route') return next(error);
      const handler = handlers[index++];
      if (!handler) return next();
      try {
        const result: unknown = handler(req, res, step);
        // As Express's own layers treat a handler's promise: a rejection is an error, whatever its value.
        if (result instanceof Promise) result.catch((rejection: unknown) => next(rejection || new Error('Rejected promise')));
      } catch (thrown) {
        next(thrown || new Error('Thrown without a value'));
      }
    };
    step();
  };
}

/** The contract's API_PREFIX paths as patterns: a `{parameter}` is one path segment, the rest literal. */
function onlyContractRoutes(operations: ApiOperation[]): RequestHandler {
  const routes = operations
    .filter((operation) => operation.path.startsWith(`${API_PREFIX}/`))
    .map((operation) => ({ method: operation.method.toUpperCase(), pattern: operation.exactPath }));
  return (req, _res, next) => {
    const known = routes.some((route) => (route.method === req.method || (req.method === 'HEAD' && route.method === 'GET')) && route.pattern.test(req.path));
    next(known ? undefined : noSuchRoute());
  };
}

/**
 * The paths a polling lender or a creation requests (docs/persistence.md lists their statements),
 * each validated by a validator of its own.
 */
const PATHS_VALIDATED_ALONE = [
  `${API_PREFIX}/verifications/{verification_id}`,
  `${API_PREFIX}/verifications/{verification_id}/tape`,
  `${API_PREFIX}/verifications`,
];

/**
 * The validator's middlewares for a request, chosen by its path: one validator for each of
 * PATHS_VALIDATED_ALONE, given a document with that path alone, and one for every other path.
 * express-openapi-validator looks a request's route up by compiling the pattern of each of its
 * document's routes in turn until one matches, on every request; with the whole contract that was
 * about ten patterns before the status read's and cost it a quarter of its CPU (docs/performance.md,
 * "Speed-ups in the code"). With the path alone, one. Each validator has the components its paths
 * reach, so what it checks of them is the same; given the whole contract's, each spent about 150 ms
 * of the start preparing what its paths never use.
 */
function validatorByPath(document: ApiDocument, operations: ApiOperation[], validatorOf: (document: ApiDocument) => RequestHandler[]): RequestHandler {
  const alone = PATHS_VALIDATED_ALONE.map((path) => {
    const pattern = operations.find((operation) => operation.path === path)?.exactPath;
    if (!pattern) throw new Error(`${path} is no path of the contract`);
    return { pattern, validate: inSeries(validatorOf(withPathsAlone(document, [path]))) };
  });
  const otherPaths = Object.keys(document.paths).filter((path) => !PATHS_VALIDATED_ALONE.includes(path));
  const others = inSeries(validatorOf(withPathsAlone(document, otherPaths)));
  return (req, res, next) => (alone.find(({ pattern }) => pattern.test(req.path))?.validate ?? others)(req, res, next);
}

/**
 * Every operation's handler in one layer, picked by the operation express-openapi-validator has
 * matched (its route lookup runs before, on every API request). A layer per operation had Express
 * match each request's path against each operation's pattern in turn, up to twenty of them, before
 * reaching its own (docs/performance.md). Requests it matched to no operation go on to the 404.
 */
function byOperation(routes: Map<string, { operation: ApiOperation; handle: RequestHandler }>): RequestHandler {
  const announced = channel(OPERATION_ROUTE_CHANNEL);
  // Named: tracing names the layer's span by it.
  return function operationHandler(req, res, next) {
    const matched = matchedOperation(req);
    const found = matched && routes.get(matched.operationId);
    // The validator's own patterns also take the path with a trailing slash (`/healthz/`), which is
    // no path of the contract: that goes on to the 404, as Express's strict routes sent it.
    if (!matched || !found?.operation.exactPath.test(req.path)) return next();
    // Express gives each layer the parameters of its own path, none for this one: the operation's
    // are those the validator matched and checked, decoded as Express decodes them.
    req.params = matched.pathParams;
    if (announced.hasSubscribers) announced.publish({ route: found.operation.expressPath });
    return found.handle(req, res, next);
  };
}

function pending(operationId: OperationId, deliveredBy: string): RequestHandler {
  return () => {
    throw new ApiError('service_unavailable', `${operationId} is not available on this deployment yet (${deliveredBy}).`, {
      retryAfterSeconds: 3600,
    });
  };
}

/**
 * Digests of the documents whose every schema this process has compiled (`assertSchemasCompile`).
 * The check depends on a document's content alone, and it was an eighth of the CPU of the quick
 * test tier, which builds some forty apps of one contract (docs/performance.md, "Speed-ups in the
 * code"). A service builds one app, so it checks once either way.
 */
const checkedDocuments = new Set<string>();

/**
 * Builds the Express app from the bundled OpenAPI document: every route comes from the spec, so an
 * operation cannot exist without its contract, and every request is validated against it.
 */
export function createHttpApp(deps: HttpAppDeps): Express {
  const { apiDocument } = deps;
  const digest = createHash('sha256').update(JSON.stringify(apiDocument)).digest('base64');
  if (!checkedDocuments.has(digest)) {
    assertSchemasCompile(apiDocument);
    checkedDocuments.add(digest);
  }
  const operations = listOperations(apiDocument);

  const app = express();
  app.disable('x-powered-by');
  app.set('query parser', 'extended');
  // Only the contract's paths exist: no trailing-slash or upper-case variants of them (D7, P8).
  app.set('strict routing', true);
  app.set('case sensitive routing', true);
  app.set('trust proxy', deps.config.trustProxy);
  app.set('etag', false);

  const logRequest = requestLog(deps.logger, deps.requestMetrics);
  const jsonBodies = express.json({
    limit: MAX_BODY_BYTES,
    strict: true,
    type: ['application/json', 'application/*+json'],
    verify: refuseInvalidUtf8,
    reviver: refuseLoneSurrogates,
  });
  // Its middlewares: route lookup, security, request and response validation.
  const validatorOf = (document: ApiDocument): RequestHandler[] => {
    const validator = OpenApiValidator.middleware({
      apiSpec: document as never,
      validateRequests: { allowUnknownQueryParameters: false },
      validateResponses: deps.config.validateResponses ? { removeAdditional: false } : false,
      validateSecurity: { handlers: { bearerAuth: (req, scopes) => requireRole(req, scopes) } },
      validateFormats: true,
      ignoreUndocumented: false,
      // The browser pages. The documents never get here: their layer answers every request it enters.
      ignorePaths: /^\/(consent|dashboard)(\/|$)/,
    }) as RequestHandler[];
    // Each of them shown a HEAD request as its GET (head-as-get.ts).
    return validator.map(headAsGet);
  };
  // In front of the validator, after the JSON parser has read the body by its own Content-Type: the
  // validator is given one of a few Content-Types, so that it compiles and keeps a bounded number
  // of validators whatever callers send (content-type.ts).
  const validated = [contentTypeOfContract(operations), validatorByPath(apiDocument, operations, validatorOf)];
  const routes = new Map<string, { operation: ApiOperation; handle: RequestHandler }>();
  for (const operation of operations) {
    const handler = deps.handlers[operation.operationId];
    const deliveredBy = deps.pendingOperations[operation.operationId];
    const handle = handler ? adapt(operation, handler, deps.config.validateResponses) : pending(operation.operationId, deliveredBy ?? 'no handler');
    routes.set(operation.operationId, { operation, handle });
  }
  const toOperation = byOperation(routes);
  const notFound: RequestHandler = (_req, _res, next) => next(noSuchRoute());

  // An API request is handled in one Express layer, start to end: each layer is a turn of the
  // router's loop with its own match and parameter objects, on every request (docs/performance.md).
  // Authentication first: a caller without a valid key learns nothing about its request body.
  // P8, D7: once the caller is known, a path or method the contract does not have is 404 at once,
  // before its body is parsed, validated or its role checked (a trailing slash or another case is
  // another path).
  const api = inSeries([
    deps.authenticate,
    rateLimitByKey(deps.rateLimits, deps.config.mode),
    onlyContractRoutes(operations),
    jsonBodies,
    ...validated,
    toOperation,
    notFound,
  ]);

  // What every request gets first (the request id, the common headers, the log with the metrics),
  // in the same layer.
  app.use((req, res, next) => {
    const incoming = req.get('x-request-id');
    req.requestId = incoming && /^[A-Za-z0-9._-]{1,64}$/.test(incoming) ? incoming : randomUUID();
    res.setHeader('X-Request-Id', req.requestId);
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    logRequest(req, res);
    if (isApiPath(req.path)) return api(req, res, next);
    next();
  });

  // Everything else: the documents, the browser pages, and the 404 of any other path, through the
  // same body parser and validator as the API (which ignores the pages and finds no operation for the rest).
  app.use(documents(apiDocument));
  for (const page of deps.pages ?? []) app.use(page.path, page.router);
  app.use(jsonBodies);
  app.use(inSeries(validated));
  app.use(toOperation);

  app.use(notFound);
  const bodyFields = new Map(operations.map((operation) => [operation.operationId as string, operation.bodyFields]));
  app.use(errorHandler(deps.logger, (operationId) => bodyFields.get(operationId) ?? []));
  return app;
}
