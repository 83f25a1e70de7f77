import type { RequestHandler } from 'express';

/**
 * A HEAD request is its GET without the body (RFC 9110, 9.3.2), and Express's own routes answer it
 * so. The operations are routed by express-openapi-validator instead, which looks a request's
 * operation up by its method: the contract lists `get` only, so a HEAD matched nothing and was a
 * 405, that is our 404 (D7), and a load balancer probing `/healthz` with HEAD saw the service as
 * down. Each of the validator's middlewares is therefore shown a HEAD request as a GET, the method
 * put back before anything after it runs; the handler's answer then leaves without its body, as
 * Express's `send` does for HEAD (Content-Length and headers those of the GET).
 */
export function headAsGet(middleware: RequestHandler): RequestHandler {
  return (req, res, next) => {
    if (req.method !== 'HEAD') return middleware(req, res, next);
    req.method = 'GET';
    let restored = false;
    const restore = () => {
      if (restored) return;
      restored = true;
      req.method = 'HEAD';
    };
    try {
      return middleware(req, res, (error?: unknown) => {
        restore();
        next(error);
      });
    } catch (error) {
      restore();
      throw error;
    }
  };
}
