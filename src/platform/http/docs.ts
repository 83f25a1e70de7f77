import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import express, { type RequestHandler, type Response } from 'express';
import { Marked, type Tokens } from 'marked';
import { BASE_CSS, escapeHtml } from '../html.ts';
import { noSuchRoute } from './error-catalogue.ts';
import { unframed } from './page-headers.ts';

const require = createRequire(import.meta.url);
const swaggerUiDir = dirname(require.resolve('swagger-ui-dist/package.json'));
const specDir = new URL('../../../spec/', import.meta.url);

// Served from our own origin (no CDN): the docs page works on a closed network and under a strict CSP.
const docsPage = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Creator Income Verification Service API</title>
  <link rel="icon" type="image/png" href="/docs/assets/favicon-32x32.png">
  <link rel="stylesheet" href="/docs/assets/swagger-ui.css">
</head>
<body>
  <p style="font-family: sans-serif; margin: 1rem 2rem;">
    <a href="/docs/changelog">Changelog</a> (API and Risk Tape schema versions) ·
    <a href="/openapi.json">OpenAPI</a> · <a href="/asyncapi.yaml">AsyncAPI (webhooks)</a> ·
    <a href="/.well-known/jwks.json">Tape signing keys</a>
  </p>
  <div id="swagger-ui"></div>
  <script src="/docs/assets/swagger-ui-bundle.js"></script>
  <script src="/docs/init.js"></script>
</body>
</html>`;

/**
 * "Try it out" sends requests to the deployment that serves this page: its origin is put first in
 * the document's servers, in the browser, so /openapi.json itself stays the same for every host
 * (nothing is taken from a Host header) and generators still see the templated server.
 */
const docsInit = `fetch('/openapi.json')
  .then(function (response) { return response.json(); })
  .then(function (spec) {
    spec.servers = [{ url: window.location.origin, description: 'This deployment (the one serving this page)' }].concat(spec.servers || []);
    window.ui = SwaggerUIBundle({ spec: spec, dom_id: '#swagger-ui', deepLinking: true });
  });`;

const CHANGELOG_CSS = `${BASE_CSS}
main { max-width: 52rem; }
code { font-size: .92em; background: #eef0f3; padding: 0 .2em; border-radius: .2em; overflow-wrap: anywhere; }
nav { font-size: .95rem; }
`;

/**
 * docs/changelog.md as an HTML page. The Markdown is the repository's own file, read once at start;
 * raw HTML in it is shown as text all the same, and a link to another repository file (which this
 * server does not serve) is left as its text. The page runs no script: its policy allows only its
 * own inline style, by hash.
 */
function changelogPage(markdown: string): { html: string; csp: string } {
  const marked = new Marked({
    gfm: true,
    async: false,
    renderer: {
      html: ({ text }: Tokens.HTML | Tokens.Tag) => escapeHtml(text),
      link(token: Tokens.Link) {
        const inner = this.parser.parseInline(token.tokens);
        if (!/^(https:\/\/|\/(?!\/))/.test(token.href)) return inner;
        return `<a href="${escapeHtml(token.href)}">${inner}</a>`;
      },
    },
  });
  const body = marked.parse(markdown, { async: false });
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Changelog · Creator Income Verification Service API</title>
<link rel="icon" type="image/png" href="/docs/assets/favicon-32x32.png">
<style>${CHANGELOG_CSS}</style>
</head>
<body>
<main>
<nav><a href="/docs">API reference</a> · <a href="/openapi.json">OpenAPI</a> · <a href="/asyncapi.yaml">AsyncAPI (webhooks)</a></nav>
${body}
</main>
</body>
</html>`;
  const styleHash = createHash('sha256').update(CHANGELOG_CSS).digest('base64');
  return { html, csp: `default-src 'none'; style-src 'sha256-${styleHash}'; img-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'` };
}

/**
 * A folder's files, for GET and HEAD. express.static would answer another method itself, with 405
 * and an empty body; here it is the app's 404 like any method the contract does not have (D7).
 */
function filesIn(folder: string): RequestHandler {
  const serve = express.static(folder, { index: false, fallthrough: false });
  return (req, res, next) => {
    if (req.method === 'GET' || req.method === 'HEAD') serve(req, res, next);
    else next();
  };
}

/** The paths the documents below are served under; nothing else reaches their router. */
export const DOCUMENT_PATHS = /^\/(docs|openapi\.json|asyncapi\.yaml|schemas|examples)(\/|$)/;

/**
 * The published contract and a browsable docs page, served without authentication. One layer of the
 * app, entered only for DOCUMENT_PATHS: as eight layers of their own, every API request was matched
 * against each of them first (docs/performance.md).
 */
export function documents(apiDocument: Record<string, unknown>): RequestHandler {
  // As the app routes (D7): no trailing-slash or upper-case variants.
  const router = express.Router({ strict: true, caseSensitive: true });
  // Serialised before the validator gets the object: it annotates the document it is given.
  const openapiJson = JSON.stringify(apiDocument);
  const asyncApiYaml = readFileSync(new URL('asyncapi.yaml', specDir), 'utf8');
  const changelog = changelogPage(readFileSync(new URL('../../../docs/changelog.md', import.meta.url), 'utf8'));
  router.get('/openapi.json', (_req, res) => {
    res.type('application/json').send(openapiJson);
  });
  router.get('/asyncapi.yaml', (_req, res) => {
    res.type('application/yaml').send(asyncApiYaml);
  });
  // The AsyncAPI document refers to ./schemas/...; serving that folder keeps its references resolvable.
  router.use('/schemas', filesIn(new URL('schemas', specDir).pathname));
  // The OpenAPI document's tape examples point at ./examples/...; serve them beside it.
  router.use('/examples', filesIn(new URL('examples', specDir).pathname));
  router.get('/docs', (_req, res) => {
    unframed(res).type('html').send(docsPage);
  });
  router.get('/docs/changelog', (_req, res: Response) => {
    // The docs page's headers, with a policy of its own that allows no script at all.
    unframed(res).setHeader('Content-Security-Policy', changelog.csp);
    res.type('html').send(changelog.html);
  });
  router.get('/docs/init.js', (_req, res) => {
    res.type('application/javascript').send(docsInit);
  });
  router.use('/docs/assets', filesIn(swaggerUiDir));
  // What the routes above do not serve (another method, `/docs/`) is the app's 404 (D7), as when
  // they were the app's own routes; without this, Express's router would answer OPTIONS itself.
  router.use((_req, _res, next) => next(noSuchRoute()));
  // Named: tracing names the layer's span by it.
  return function publishedDocuments(req, res, next) {
    if (!DOCUMENT_PATHS.test(req.path)) return next();
    router(req, res, next);
  };
}
