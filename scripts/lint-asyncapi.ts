// Lints the webhook contract (spec/asyncapi.yaml) and every JSON Schema under spec/schemas
// (events and Risk Tape versions): each compiles in Ajv strict mode and each `examples` entry validates.
// Usage: npx tsx scripts/lint-asyncapi.ts   (exit 1 on any error)
import { createHmac } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DiagnosticSeverity, fromFile, Parser } from '@asyncapi/parser';
import { Ajv2020, type ErrorObject, type SchemaObject } from 'ajv/dist/2020.js';
// ajv-formats is CommonJS; under NodeNext its default import is the module object, hence `.default` below.
import addFormats from 'ajv-formats';

// The message examples in asyncapi.yaml are signed with this secret (stated in info.description).
const EXAMPLE_SECRET = 'whsec_example_5b1f0c2e9d4a7f36';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
let failures = 0;
const fail = (msg: string) => {
  failures++;
  console.error(`error: ${msg}`);
};

const { document, diagnostics } = await fromFile(new Parser(), join(root, 'spec/asyncapi.yaml')).parse();
for (const d of diagnostics) {
  const where = `${d.path.join('/') || '(root)'} (line ${d.range.start.line + 1})`;
  console.log(`${DiagnosticSeverity[d.severity]} ${d.code} at ${where}: ${d.message}`);
}
// By name: the diagnostics carry spectral-core's own copy of the enum, a different type from the one exported here.
const errorCount = diagnostics.filter((d) => DiagnosticSeverity[d.severity] === 'Error').length;
console.log(`asyncapi.yaml: ${diagnostics.length} diagnostic(s), ${errorCount} error(s)`);
if (errorCount > 0 || !document) fail('asyncapi.yaml does not parse cleanly');

const ajv = new Ajv2020({ strict: true, allErrors: true });
addFormats.default(ajv);
const why = (v: { errors?: ErrorObject[] | null }) => ajv.errorsText(v.errors, { dataVar: 'example' });
/** The parts of a schema file under spec/schemas that are checked here. */
type SchemaFile = SchemaObject & { examples?: unknown[]; $defs?: Record<string, { examples?: unknown[] }> };
const schemas = ['tape', 'events'].flatMap((folder) => {
  const dir = join(root, 'spec/schemas', folder);
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .map((f) => ({ file: `${folder}/${f}`, schema: JSON.parse(readFileSync(join(dir, f), 'utf8')) as SchemaFile }));
});
// Register every file before compiling any, so relative $refs (common.json#/...) resolve via $id.
for (const { schema } of schemas) ajv.addSchema(schema);

const check = (label: string, ref: string, examples: unknown[] = []) => {
  let validate;
  try {
    validate = ajv.getSchema(ref);
  } catch (e) {
    return fail(`${label}: does not compile: ${(e as Error).message}`);
  }
  if (!validate) return fail(`${label}: ${ref} not found`);
  examples.forEach((ex, i) => {
    if (!validate(ex)) fail(`${label} examples[${i}]: ${why(validate)}`);
  });
};
for (const { file, schema } of schemas) {
  if (!schema.$id) {
    fail(`${file}: no $id`);
    continue;
  }
  check(file, schema.$id, schema.examples);
  for (const [name, def] of Object.entries(schema.$defs ?? {})) {
    check(`${file}#/$defs/${name}`, `${schema.$id}#/$defs/${name}`, def.examples);
  }
}

// The parser does not check message examples in AsyncAPI 3, so do it here, signature included.
const stripParserKeys = (v: unknown): unknown => JSON.parse(JSON.stringify(v), (k: string, x: unknown) => (k.startsWith('x-parser-') ? undefined : x));
for (const message of document?.allMessages() ?? []) {
  const payloadId = message.payload()?.$id();
  // A schema that does not compile was reported above; skip it here instead of throwing.
  let validatePayload;
  try {
    validatePayload = payloadId ? ajv.getSchema(payloadId) : undefined;
  } catch {
    continue;
  }
  const validateHeaders = message.hasHeaders() ? ajv.compile(stripParserKeys(message.headers()!.json()) as SchemaObject) : undefined;
  if (!validatePayload) fail(`message ${message.id()}: payload is not one of the event schemas`);
  for (const [i, ex] of message.examples().all().entries()) {
    const label = `message ${message.id()} examples[${i}]`;
    const payload = ex.payload();
    const headers = ex.headers() as Record<string, string> | undefined;
    if (validatePayload && !validatePayload(payload)) fail(`${label} payload: ${why(validatePayload)}`);
    if (validateHeaders && !validateHeaders(headers)) fail(`${label} headers: ${why(validateHeaders)}`);
    const expected = createHmac('sha256', EXAMPLE_SECRET).update(JSON.stringify(payload)).digest('hex');
    const sent = headers?.['X-Service-Signature']?.replace(/^sha256=/, '');
    if (sent !== expected) fail(`${label}: X-Service-Signature should be sha256=${expected}`);
  }
}

console.log(`JSON schemas: ${schemas.length} file(s) checked`);
if (failures > 0) {
  console.error(`${failures} failure(s)`);
  process.exit(1);
}
console.log('webhook contract OK');
