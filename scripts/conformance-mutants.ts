/**
 * `npm run conformance:mutants [-- --only id,id] [--keep]`: proof that the conformance suite catches
 * bugs. Each mutant is one deliberate defect, a small textual replacement in `src/` that must match
 * exactly once (so the list breaks loudly when the code moves, instead of silently testing nothing).
 * One at a time, the defect is applied to a temporary copy of the repository (node_modules linked,
 * not copied), that copy's server is started as any deployment would be (sandbox, a fresh SQLite
 * file, webhook settings of seconds, no response validation), and the suite runs against it over
 * HTTP with `--base-url`, limited by `--grep` to the tests that concern the defect so each run takes
 * seconds. A mutant is killed when the suite fails; the script exits 0 only when every one is.
 *
 * Before any mutant, the same server unchanged must pass every test the mutants select (the
 * baseline), so a kill is the defect's doing, not a broken subset.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { SERVICE_ENV_NAMES as HARNESS_SERVICE_ENV_NAMES } from '../conformance/service-env.ts';
import { stopProcess } from '../test/support/server-process.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const run = promisify(execFile);

export interface Mutant {
  id: string;
  /** The defect, as a reviewer would describe the bug. */
  defect: string;
  /** Path under the repository root. */
  file: string;
  find: string;
  replace: string;
  /** The suite's tests that concern the defect: a part of their full title, or `/.../`, a regular expression. */
  grep: string;
}

export const MUTANTS: Mutant[] = [
  {
    id: 'wrong-error-code',
    defect: 'a tape of a 2.0.0 product type asked for at 1.x answered 400 validation_error instead of 422 unprocessable (P6)',
    file: 'src/verifications/verification-lifecycle.ts',
    find: "if (error instanceof TapeVersionUnsupported) throw new DomainError('refused', error.message);",
    replace: "if (error instanceof TapeVersionUnsupported) throw new DomainError('invalid', error.message);",
    grep: 'tapes of the 2.0.0 product types at 1.x are unprocessable',
  },
  {
    id: 'missing-rate-limit-header',
    defect: 'X-RateLimit-Remaining no longer sent',
    file: 'src/platform/http/rate-limit.ts',
    find: "    'X-RateLimit-Remaining': String(Math.max(0, outcome.minute.remainingPoints)),\n",
    replace: '',
    grep: 'probes and published documents',
  },
  {
    id: 'signature-over-reserialised-json',
    defect: 'webhook signature computed over re-serialised JSON, not the bytes sent',
    file: 'src/webhooks/delivery-worker.ts',
    find: "'x-service-signature': signWebhookBodyWith(body, signingSecrets(this.openSecret, endpoint, at)),",
    replace: "'x-service-signature': signWebhookBodyWith(JSON.stringify(JSON.parse(String(body)), null, 1), signingSecrets(this.openSecret, endpoint, at)),",
    grep: 'events to subscribed endpoints',
  },
  {
    id: 'signature-upper-case-hex',
    defect: 'webhook signature sent in upper-case hex (D15 says lowercase)',
    file: 'src/webhooks/verify-signature.ts',
    find: "return `sha256=${createHmac('sha256', secret).update(rawBody).digest('hex')}`;",
    replace: "return `sha256=${createHmac('sha256', secret).update(rawBody).digest('hex').toUpperCase()}`;",
    grep: 'events to subscribed endpoints',
  },
  {
    id: 'cross-lender-read',
    defect: "the tenant check removed from GET /verifications/{id}: another lender's verification is readable",
    file: 'src/verifications/verifications-repository.ts',
    find: "   where v.id = ? and v.lender_id || '' = ?`,",
    replace: "   where v.id = ? and (v.lender_id || '' = ? or 1 = 1)`,",
    grep: 'tenant isolation',
  },
  {
    id: 'idempotency-conflict-200',
    defect: 'an Idempotency-Key reused with another payload replays (200/201) instead of 409 duplicate_request',
    file: 'src/verifications/verification-lifecycle.ts',
    find: '  if (previous.requestFingerprint !== fingerprint) {',
    replace: '  if (false as boolean) {',
    grep: 'duplicate_request (409)',
  },
  {
    id: 'erasure-forgets-a-table',
    defect: "erasure leaves the creator's platform connections to the cascade and reports none erased",
    file: 'src/consent/consent-repository.ts',
    find: "    const connections = await trx('platform_connections').whereIn('verification_id', verificationIds).delete();",
    replace: '    const connections = 0;',
    grep: 'access, export and erase a creator',
  },
  {
    id: 'benchmark-below-privacy-floor',
    defect: 'peer benchmarks published from a cohort below the privacy floor (1 tape, 1 lender instead of 30 and 3)',
    file: 'src/benchmarks/peer-benchmark.ts',
    find: 'export const COHORT_FLOOR = { tapes: 30, lenders: 3 };',
    replace: 'export const COHORT_FLOOR = { tapes: 1, lenders: 1 };',
    grep: 'a peer benchmark',
  },
  {
    id: 'benchmark-counts-own-tapes',
    defect: "a lender's own tapes counted among its peers again (P28): tapes of its own move its answer",
    file: 'src/benchmarks/peer-benchmark.ts',
    find: 'const peers = await deps.benchmarks.cohort(productType, lenderId);',
    replace: 'const peers = await deps.benchmarks.cohort(productType);',
    grep: 'peer benchmarks leave out the asking lender',
  },
  {
    id: 'overlay-in-1.1.0-tape',
    defect: 'overlay blocks shown in a tape rendered at 1.1.0 (they exist from 1.2.0)',
    file: 'src/tape/render.ts',
    find: "jurisdiction_profile: '1.2.0', overlay_blocks: '1.2.0' },",
    replace: "jurisdiction_profile: '1.2.0', overlay_blocks: '1.1.0' },",
    grep: 'attach an overlay to a completed tape',
  },
  {
    id: 'wrong-state-transition',
    defect: 'an expired consent session moves pending_consent to failed, a move the state table does not have',
    file: 'src/verifications/state-machine.ts',
    find: "{ from: 'pending_consent', trigger: 'consent_expired', to: 'expired', emits: 'verification.expired'",
    replace: "{ from: 'pending_consent', trigger: 'consent_expired', to: 'failed', emits: 'verification.expired'",
    grep: 'the state table (x-transitions)',
  },
  {
    id: 'retry-after-missing-on-429',
    defect: 'a 429 rate_limited without Retry-After',
    file: 'src/platform/http/rate-limit.ts',
    find: '      retryAfterSeconds: seconds,\n',
    replace: '',
    grep: 'rate_limited (429) on the pilot key',
  },
  {
    id: 'wrong-tape-rounding',
    defect: 'money on tapes rounded to 10 cents instead of cents',
    file: 'src/tape/round.ts',
    find: 'export const cents = (x: number): number => roundAt(x, 100);',
    replace: 'export const cents = (x: number): number => roundAt(x, 10);',
    grep: 'reproduce their golden tapes',
  },
  {
    id: 'metadata-target-admitted',
    defect: 'with private targets allowed, cloud metadata and link-local webhook targets are admitted too (SSRF)',
    file: 'src/webhooks/target-guard.ts',
    find: "new Set(['public', 'loopback', 'private', 'shared']);",
    replace: "new Set(['public', 'loopback', 'private', 'shared', 'metadata', 'linkLocal']);",
    grep: 'P13: with private targets allowed, metadata',
  },
  {
    id: 'replay-header-missing',
    defect: 'an idempotent replay without Idempotent-Replayed: true',
    file: 'src/verifications/verification-lifecycle.ts',
    find: '        return { body: { ...previous.body, consent_url: verification?.consentUrl ?? previous.body.consent_url }, replayed: true };',
    replace: '        return { body: { ...previous.body, consent_url: verification?.consentUrl ?? previous.body.consent_url }, replayed: false };',
    grep: 'happy: idempotent replay',
  },
  {
    id: 'later-field-in-1.0.0-tape',
    defect: 'the affordability block (from 1.1.0) kept in a tape rendered at 1.0.0',
    file: 'src/tape/render.ts',
    find: "tape: { islamic_compliance: '1.1.0', affordability: '1.1.0',",
    replace: "tape: { islamic_compliance: '1.1.0', affordability: '1.0.0',",
    grep: 'every tape at every schema version',
  },
  // ---- cancel (P24): only pending_consent moves; a repeat answers again without a second event
  {
    id: 'cancel-accepts-processing',
    defect: 'a cancel of a processing verification answered 200 (with the verification unchanged) instead of 422',
    file: 'src/verifications/verification-lifecycle.ts',
    find: "      } else if (record.status !== 'cancelled') {",
    replace: "      } else if (record.status !== 'cancelled' && record.status !== 'processing') {",
    grep: 'cancel from every state but pending_consent',
  },
  {
    id: 'cancel-accepts-failed',
    defect: 'a cancel of a failed (or declined) verification answered 200 instead of 422',
    file: 'src/verifications/verification-lifecycle.ts',
    find: "      } else if (record.status !== 'cancelled') {",
    replace: "      } else if (record.status !== 'cancelled' && record.status !== 'failed') {",
    grep: 'cancel from every state but pending_consent',
  },
  {
    id: 'cancel-accepts-expired',
    defect: 'a cancel of an expired verification answered 200 instead of 422',
    file: 'src/verifications/verification-lifecycle.ts',
    find: "      } else if (record.status !== 'cancelled') {",
    replace: "      } else if (record.status !== 'cancelled' && record.status !== 'expired') {",
    grep: 'cancel from every state but pending_consent',
  },
  {
    id: 'cancel-moves-expired',
    defect: 'an expired verification treated as still waiting for consent: the cancel moves it to cancelled',
    file: 'src/verifications/verification-lifecycle.ts',
    find: "      if (record.status === 'pending_consent') {\n        await moveVerification(store, record, 'cancelled_by_lender', { at: now });",
    replace:
      "      if (record.status === 'pending_consent' || record.status === 'expired') {\n        await moveVerification(store, { ...record, status: 'pending_consent' }, 'cancelled_by_lender', { at: now });",
    grep: 'cancel from every state but pending_consent',
  },
  {
    id: 'cancel-again-sends-event',
    defect: 'cancelling a cancelled verification applies the cancel again: a second verification.cancelled',
    file: 'src/verifications/verification-lifecycle.ts',
    find: "      if (record.status === 'pending_consent') {\n        await moveVerification(store, record, 'cancelled_by_lender', { at: now });",
    replace:
      "      if (record.status === 'pending_consent' || record.status === 'cancelled') {\n        await moveVerification(store, { ...record, status: 'pending_consent' }, 'cancelled_by_lender', { at: now });",
    grep: 'even when the cancel is sent twice',
  },
  {
    id: 'cancel-again-refused',
    defect: 'cancelling a cancelled verification refused with 422 instead of answered again',
    file: 'src/verifications/verification-lifecycle.ts',
    find: "      } else if (record.status !== 'cancelled') {",
    replace: '      } else {',
    grep: 'cancelling again answers the same cancelled verification',
  },
  // ---- webhook secret rotation (P25): default overlap, its end, two rotations, the signing order
  {
    id: 'rotation-default-overlap-hour',
    defect: 'a rotation without overlap_seconds keeps the old secret an hour instead of the documented day',
    file: 'src/webhooks/endpoints.ts',
    find: 'export const DEFAULT_ROTATION_OVERLAP_SECONDS = 86_400;',
    replace: 'export const DEFAULT_ROTATION_OVERLAP_SECONDS = 3_600;',
    grep: 'rotate-secret without a body',
  },
  {
    id: 'rotation-overlap-end-late',
    defect: 'the overlap ends a second after overlap_seconds',
    file: 'src/webhooks/endpoints.ts',
    find: 'new Date(now.getTime() + overlapSeconds * 1000).toISOString()',
    replace: 'new Date(now.getTime() + (overlapSeconds + 1) * 1000).toISOString()',
    grep: 'rotate-secret with a body',
  },
  {
    id: 'rotation-old-secret-signs-past-end',
    defect: 'the rotated-out secret keeps signing for a minute after the overlap ends',
    file: 'src/webhooks/endpoints.ts',
    find: 'endpoint.previousSecretExpiresAt > at.toISOString()',
    replace: 'endpoint.previousSecretExpiresAt > new Date(at.getTime() - 60_000).toISOString()',
    grep: 'rotate-secret with a body',
  },
  {
    id: 'rotation-end-shown-past-end',
    defect: 'previous_secret_expires_at still shown after the overlap has ended',
    file: 'src/webhooks/endpoints.ts',
    find: 'endpoint.previousSecretExpiresAt && endpoint.previousSecretExpiresAt > now.toISOString()',
    replace: 'endpoint.previousSecretExpiresAt',
    grep: 'rotate-secret with a body',
  },
  {
    id: 'rotation-second-keeps-oldest',
    defect: 'a second rotation during an overlap keeps the oldest secret signing and drops the one it replaces',
    file: 'src/webhooks/endpoints.ts',
    find: 'previousSecretCiphertext: overlapSeconds > 0 ? endpoint.secretCiphertext : null,',
    replace: 'previousSecretCiphertext: overlapSeconds > 0 ? (endpoint.previousSecretCiphertext ?? endpoint.secretCiphertext) : null,',
    grep: 'rotate-secret twice in a row',
  },
  {
    id: 'rotation-new-secret-not-stored',
    defect: 'the rotation answers a new secret but keeps signing with the old one',
    file: 'src/webhooks/endpoints.ts',
    find: '    ...endpoint,\n    secretCiphertext: encryptSecret(deps.encryptionKey, secret),',
    replace: '    ...endpoint,\n    secretCiphertext: endpoint.secretCiphertext,',
    grep: 'rotate-secret without a body',
  },
  {
    id: 'rotation-old-secret-first',
    defect: "during an overlap the old secret's signature is listed first",
    file: 'src/webhooks/endpoints.ts',
    find: '    secrets.push(open(endpoint.previousSecretCiphertext));',
    replace: '    secrets.unshift(open(endpoint.previousSecretCiphertext));',
    grep: 'rotate-secret twice in a row',
  },
  // ---- overlays (4.9, D20): the byte limit, the count limit, idempotency across verifications
  {
    id: 'overlay-limit-in-characters',
    defect: 'the 64 KiB limit of an overlay payload counted in characters, not bytes of UTF-8',
    file: 'src/verifications/verification-lifecycle.ts',
    find: 'if (Buffer.byteLength(JSON.stringify(data)) > MAX_OVERLAY_DATA_BYTES) {',
    replace: 'if (JSON.stringify(data).length > MAX_OVERLAY_DATA_BYTES) {',
    grep: 'the 64 KiB are bytes of UTF-8',
  },
  {
    id: 'overlay-limit-exclusive',
    defect: 'a payload of exactly 64 KiB refused (the limit made exclusive)',
    file: 'src/verifications/verification-lifecycle.ts',
    find: 'if (Buffer.byteLength(JSON.stringify(data)) > MAX_OVERLAY_DATA_BYTES) {',
    replace: 'if (Buffer.byteLength(JSON.stringify(data)) >= MAX_OVERLAY_DATA_BYTES) {',
    grep: 'a provider payload over 64 KiB',
  },
  {
    id: 'overlay-51st-accepted',
    defect: 'a 51st overlay attached to one tape',
    file: 'src/verifications/verification-lifecycle.ts',
    find: '      if (existing.length >= MAX_OVERLAYS_PER_TAPE) {',
    replace: '      if (existing.length > MAX_OVERLAYS_PER_TAPE) {',
    grep: 'the 51st overlay on one tape',
  },
  {
    id: 'overlay-key-ignores-verification',
    defect: "an overlay's Idempotency-Key reused on another verification replays the first overlay instead of 409",
    file: 'src/verifications/verification-lifecycle.ts',
    find: "requestFingerprint({ operation: 'createOverlay', verification_id: verificationId, body: request })",
    replace: "requestFingerprint({ operation: 'createOverlay', body: request })",
    grep: 'one Idempotency-Key reused on another verification',
  },
  {
    id: 'overlay-on-unfinished-verification',
    defect: 'an overlay on a verification still pending_consent goes on to rescoring (no tape: a 500) instead of 422',
    file: 'src/verifications/verification-lifecycle.ts',
    find: "      if (record.status !== 'completed') {\n        throw new DomainError('refused', `Verification ${verificationId} is ${record.status}; overlays attach",
    replace:
      "      if (record.status === 'expired') {\n        throw new DomainError('refused', `Verification ${verificationId} is ${record.status}; overlays attach",
    grep: 'a verification that is not completed: 422 unprocessable naming its status',
  },
  // ---- boundaries both ways: page sizes and the retry schedule
  {
    id: 'list-max-page-10',
    defect: 'GET /verifications caps a page at 10 instead of the 100 asked for',
    file: 'src/verifications/verification-lifecycle.ts',
    find: 'const limit = Math.min(Math.max(query.limit ?? 20, 1), 100);',
    replace: 'const limit = Math.min(Math.max(query.limit ?? 20, 1), 10);',
    grep: 'page size both ways',
  },
  {
    id: 'webhook-list-page-one-more',
    defect: 'GET /webhooks answers one endpoint more than limit',
    file: 'src/webhooks/endpoints.ts',
    find: 'const limit = Math.min(Math.max(query.limit ?? 20, 1), 100);',
    replace: 'const limit = Math.min(Math.max(query.limit ?? 20, 1), 100) + 1;',
    grep: 'GET /webhooks pages with limit',
  },
  {
    id: 'retry-schedule-doubled',
    defect: 'retries at twice their WEBHOOK_RETRY_SCHEDULE offsets',
    file: 'src/webhooks/delivery-worker.ts',
    find: 'new Date(firstAttemptAt).getTime() + nextOffset * 1000',
    replace: 'new Date(firstAttemptAt).getTime() + nextOffset * 2000',
    grep: 'always 500: one attempt per schedule entry',
  },
  {
    id: 'retry-schedule-skips-entry',
    defect: 'each retry takes the next-but-one offset: one attempt fewer, the others late',
    file: 'src/webhooks/delivery-worker.ts',
    find: 'const nextOffset = scheduleSeconds[attemptNumber];',
    replace: 'const nextOffset = scheduleSeconds[attemptNumber + 1];',
    grep: 'always 500: one attempt per schedule entry',
  },
  {
    id: 'only-200-acknowledges',
    defect: 'only a 200 acknowledges a delivery: a 204 or 202 is retried',
    file: 'src/webhooks/delivery-worker.ts',
    find: 'const succeeded = statusCode !== null && statusCode >= 200 && statusCode < 300;',
    replace: 'const succeeded = statusCode === 200;',
    grep: 'any 2xx acknowledges',
  },
];

/** The service's variables, none inherited from the calling shell (as the suite's own harness does). */
const SERVICE_ENV_NAMES = [...HARNESS_SERVICE_ENV_NAMES, 'TEST_POSTGRES_URL'];
const SANDBOX_DELAY_MS = '1000';
const RETRY_SCHEDULE = '0,1,2';
const WEBHOOK_TIMEOUT_MS = '2000';

function baseEnv(settings: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of SERVICE_ENV_NAMES) delete env[name];
  return { ...env, ...settings };
}

/** The copy: everything but node_modules (linked) and .git; `src/` is mutated in place and restored. */
function copyRepository(into: string): string {
  const copy = join(into, 'repo');
  cpSync(ROOT, copy, {
    recursive: true,
    filter: (source) => {
      const relative = source.slice(ROOT.length + 1).split('/')[0];
      return relative !== 'node_modules' && relative !== '.git';
    },
  });
  symlinkSync(join(ROOT, 'node_modules'), join(copy, 'node_modules'), 'dir');
  return copy;
}

function occurrences(text: string, needle: string): number {
  let count = 0;
  for (let at = text.indexOf(needle); at >= 0; at = text.indexOf(needle, at + 1)) count++;
  return count;
}

/** Every mutant's text must be in its file exactly once; all are checked before anything runs. */
export function checkMutants(mutants: Mutant[]): string[] {
  const problems: string[] = [];
  const ids = new Set<string>();
  for (const mutant of mutants) {
    if (ids.has(mutant.id)) problems.push(`${mutant.id}: the id is used twice`);
    ids.add(mutant.id);
    const path = join(ROOT, mutant.file);
    if (!existsSync(path)) {
      problems.push(`${mutant.id}: ${mutant.file} does not exist`);
      continue;
    }
    const found = occurrences(readFileSync(path, 'utf8'), mutant.find);
    if (found !== 1) problems.push(`${mutant.id}: the text to replace occurs ${found} times in ${mutant.file}, not once:\n    ${JSON.stringify(mutant.find)}`);
  }
  return problems;
}

async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolvePort(port));
    });
  });
}

interface Keys {
  lender: string;
  otherLender: string;
  thirdLender: string;
  gdpr: string;
  pilot: string;
}

/** Accounts and keys made once with the operator CLI (D23) in a template database, copied for every server. */
async function makeTemplateDatabase(copy: string, file: string): Promise<Keys> {
  const env = baseEnv({ DATABASE_URL: `sqlite:${file}`, SERVICE_MODE: 'sandbox', LOG_LEVEL: 'warn' });
  const admin = async <T>(...args: string[]): Promise<T> => {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', 'src/admin/cli.ts', ...args, '--json'], { cwd: copy, env, timeout: 60_000 });
    return JSON.parse(stdout) as T;
  };
  const a = await admin<{ id: string }>('lender', 'create', '--name', 'Mutants Lender A');
  const b = await admin<{ id: string }>('lender', 'create', '--name', 'Mutants Lender B');
  const c = await admin<{ id: string }>('lender', 'create', '--name', 'Mutants Lender C');
  const lender = await admin<{ api_key: string }>('key', 'create', '--lender', a.id, '--role', 'lender');
  const otherLender = await admin<{ api_key: string }>('key', 'create', '--lender', b.id, '--role', 'lender');
  const thirdLender = await admin<{ api_key: string }>('key', 'create', '--lender', c.id, '--role', 'lender');
  const gdpr = await admin<{ api_key: string }>('key', 'create', '--lender', a.id, '--role', 'gdpr_admin');
  const pilot = await admin<{ id: string; api_key: string }>('key', 'create', '--lender', a.id, '--role', 'lender');
  await admin('key', 'limit', '--key-id', pilot.id, '--rate-limit', '60', '--burst', '10');
  return { lender: lender.api_key, otherLender: otherLender.api_key, thirdLender: thirdLender.api_key, gdpr: gdpr.api_key, pilot: pilot.api_key };
}

function freshDatabase(template: string, file: string): void {
  for (const suffix of ['', '-wal', '-shm']) if (existsSync(template + suffix)) copyFileSync(template + suffix, file + suffix);
}

interface Server {
  child: ChildProcess;
  baseUrl: string;
  output: () => string;
}

async function startServer(copy: string, database: string, caDir: string): Promise<Server> {
  const port = await freePort();
  const env = baseEnv({
    PORT: String(port),
    HOST: '127.0.0.1',
    SERVICE_MODE: 'sandbox',
    DATABASE_URL: `sqlite:${database}`,
    LOG_LEVEL: 'warn',
    SANDBOX_COMPLETE_DELAY_MS: SANDBOX_DELAY_MS,
    NODE_EXTRA_CA_CERTS: join(caDir, 'ca.pem'),
    WEBHOOK_ALLOW_PRIVATE_TARGETS: '1',
    WEBHOOK_RETRY_SCHEDULE: RETRY_SCHEDULE,
    WEBHOOK_TIMEOUT_MS: WEBHOOK_TIMEOUT_MS,
  });
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], { cwd: copy, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const keep = (chunk: Buffer) => (output = (output + chunk.toString()).slice(-8_000));
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const baseUrl = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline && child.exitCode === null) {
    try {
      const response = await fetch(`${baseUrl}/readyz`, { signal: AbortSignal.timeout(2_000) });
      await response.text();
      if (response.status === 200) return { child, baseUrl, output: () => output };
    } catch {
      // not listening yet
    }
    await new Promise((done) => setTimeout(done, 200));
  }
  await stopProcess(child);
  throw new Error(`the server did not become ready:\n${output}`);
}

/** The suite, from this repository, against `baseUrl`: exit status 0 all passed, 1 a test failed. */
async function runSuite(baseUrl: string, keys: Keys, caDir: string, grep: string, junit: string): Promise<{ code: number; output: string }> {
  const args = [
    '--import',
    'tsx',
    join(ROOT, 'conformance', 'cli.ts'),
    '--base-url',
    baseUrl,
    '--key',
    keys.lender,
    '--other-lender-key',
    keys.otherLender,
    '--third-lender-key',
    keys.thirdLender,
    '--gdpr-key',
    keys.gdpr,
    '--pilot-key',
    keys.pilot,
    '--ca-dir',
    caDir,
    '--sandbox-delay-ms',
    SANDBOX_DELAY_MS,
    '--retry-schedule',
    RETRY_SCHEDULE,
    '--webhook-timeout-ms',
    WEBHOOK_TIMEOUT_MS,
    '--private-targets-allowed',
    '1',
    '--grep',
    grep,
    '--junit',
    junit,
  ];
  return new Promise((done, reject) => {
    const child = spawn(process.execPath, args, { cwd: ROOT, env: baseEnv({}), stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('error', reject);
    child.once('close', (code) => done({ code: code ?? 1, output }));
  });
}

/** JUnit counts of one run. */
function countsOf(junit: string): { tests: number; failures: number; skipped: number } {
  if (!existsSync(junit)) return { tests: 0, failures: 0, skipped: 0 };
  const head = /<testsuites [^>]*tests="(\d+)" failures="(\d+)" skipped="(\d+)"/.exec(readFileSync(junit, 'utf8'));
  return { tests: Number(head?.[1] ?? 0), failures: Number(head?.[2] ?? 0), skipped: Number(head?.[3] ?? 0) };
}

const asRegExpSource = (grep: string) => (/^\/.*\/$/.test(grep) ? grep.slice(1, -1) : grep.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));

interface Outcome {
  mutant: Mutant;
  result: 'killed' | 'survived' | 'error';
  detail: string;
  seconds: number;
}

async function main(): Promise<number> {
  const argv = process.argv.slice(2);
  const onlyAt = argv.indexOf('--only');
  const only = onlyAt >= 0 ? new Set((argv[onlyAt + 1] ?? '').split(',')) : undefined;
  const keep = argv.includes('--keep');
  const mutants = only ? MUTANTS.filter((m) => only.has(m.id)) : MUTANTS;
  if (only && mutants.length !== only.size) {
    console.error(`unknown mutant ids; known: ${MUTANTS.map((m) => m.id).join(', ')}`);
    return 2;
  }
  const problems = checkMutants(MUTANTS);
  if (problems.length > 0) {
    console.error(`The mutant list no longer matches the code (fix scripts/conformance-mutants.ts):\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    return 2;
  }

  const work = mkdtempSync(join(tmpdir(), 'conformance-mutants-'));
  const started = Date.now();
  try {
    const copy = copyRepository(work);
    const caDir = join(work, 'ca');
    await run('bash', [join(ROOT, 'scripts', 'make-test-ca.sh'), caDir]);
    const template = join(work, 'template.sqlite');
    const keys = await makeTemplateDatabase(copy, template);
    console.log(`conformance:mutants: ${mutants.length} mutants, one at a time, in ${work}`);

    // Baseline: the unchanged service passes every selected test, or no kill would mean anything.
    const everything = `/${[...new Set(mutants.map((m) => asRegExpSource(m.grep)))].join('|')}/`;
    freshDatabase(template, join(work, 'baseline.sqlite'));
    const baselineServer = await startServer(copy, join(work, 'baseline.sqlite'), caDir);
    const baselineJunit = join(work, 'baseline.xml');
    const baseline = await runSuite(baselineServer.baseUrl, keys, caDir, everything, baselineJunit).finally(() => stopProcess(baselineServer.child));
    const counts = countsOf(baselineJunit);
    if (baseline.code !== 0 || counts.tests === 0) {
      console.error(`Baseline: the unchanged service does not pass the selected tests (exit ${baseline.code}):\n${baseline.output.slice(-6_000)}`);
      return 2;
    }
    console.log(`baseline (no mutant): ${counts.tests} tests, ${counts.skipped} skipped, all passed`);

    const outcomes: Outcome[] = [];
    for (const mutant of mutants) {
      const path = join(copy, mutant.file);
      const original = readFileSync(path, 'utf8');
      const mutantStarted = Date.now();
      let outcome: Outcome;
      writeFileSync(
        path,
        original.replace(mutant.find, () => mutant.replace),
      );
      try {
        const database = join(work, `${mutant.id}.sqlite`);
        freshDatabase(template, database);
        let server: Server | undefined;
        try {
          server = await startServer(copy, database, caDir);
        } catch (error) {
          outcome = { mutant, result: 'killed', detail: `the server did not start: ${(error as Error).message.split('\n')[0]}`, seconds: 0 };
        }
        if (server) {
          const junit = join(work, `${mutant.id}.xml`);
          const result = await runSuite(server.baseUrl, keys, caDir, `/${asRegExpSource(mutant.grep)}/`, junit).finally(() => stopProcess(server.child));
          const c = countsOf(junit);
          outcome =
            c.tests === 0
              ? { mutant, result: 'error', detail: `no test matched ${mutant.grep}`, seconds: 0 }
              : result.code === 1
                ? { mutant, result: 'killed', detail: `${c.failures} of ${c.tests} tests failed`, seconds: 0 }
                : result.code === 0
                  ? { mutant, result: 'survived', detail: `${c.tests} tests passed (${c.skipped} skipped)`, seconds: 0 }
                  : { mutant, result: 'error', detail: `the suite exited ${result.code}: ${result.output.slice(-2_000)}`, seconds: 0 };
        }
      } finally {
        writeFileSync(path, original);
      }
      outcome!.seconds = (Date.now() - mutantStarted) / 1000;
      outcomes.push(outcome!);
      console.log(`${outcome!.result.padEnd(8)} ${mutant.id} (${outcome!.seconds.toFixed(0)} s): ${mutant.defect} — ${outcome!.detail}`);
    }

    const killed = outcomes.filter((o) => o.result === 'killed').length;
    console.log(`\nmutation score: ${killed}/${outcomes.length} killed in ${((Date.now() - started) / 1000).toFixed(0)} s`);
    for (const o of outcomes.filter((x) => x.result !== 'killed')) console.log(`  ${o.result}: ${o.mutant.id} (${o.mutant.file}): ${o.mutant.defect}`);
    return killed === outcomes.length ? 0 : 1;
  } finally {
    if (keep) console.log(`kept ${work}`);
    else rmSync(work, { recursive: true, force: true });
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      console.error(error instanceof Error ? (error.stack ?? error.message) : String(error));
      process.exitCode = 2;
    },
  );
}
