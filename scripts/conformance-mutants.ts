/**
 * `npm run conformance:mutants [-- --group g,g] [--only id,id] [--keep] [--write-rows]`: proof that the conformance suite catches
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
import { matrixRows } from '../conformance/matrix.ts';
import { SERVICE_ENV_NAMES as HARNESS_SERVICE_ENV_NAMES } from '../conformance/service-env.ts';
import { stopProcess } from '../test/support/server-process.ts';
import { keyOptions, makeSuiteKeys, type SuiteKeys } from './support/conformance-keys.ts';

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
  /** The group it runs in (`--group`); CI runs the groups one after another, each a step of its own. */
  group: MutantGroup;
  /**
   * The rows of the conformance matrix (conformance/matrix.ts) whose rule the defect breaks: the
   * matrix lists, per row, the mutants its tests kill (conformance/mutant-rows.ts, generated from
   * this list with `--write-rows` and checked against it by scripts/conformance-mutants.test.ts).
   */
  rows: string[];
}

export const MUTANT_GROUPS = ['lifecycle', 'tapes', 'webhooks', 'platform', 'monitoring'] as const;
export type MutantGroup = (typeof MUTANT_GROUPS)[number];

export const MUTANTS: Mutant[] = [
  {
    id: 'wrong-error-code',
    group: 'tapes',
    rows: ['op:getVerificationTape 422 unprocessable'],
    defect: 'a tape of a 2.0.0 product type asked for at 1.x answered 400 validation_error instead of 422 unprocessable (P6)',
    file: 'src/verifications/verification-lifecycle.ts',
    find: "if (error instanceof TapeVersionUnsupported) throw new DomainError('refused', error.message);",
    replace: "if (error instanceof TapeVersionUnsupported) throw new DomainError('invalid', error.message);",
    grep: 'tapes of the 2.0.0 product types at 1.x are unprocessable',
  },
  {
    id: 'missing-rate-limit-header',
    group: 'platform',
    rows: ['header:X-RateLimit-Remaining'],
    defect: 'X-RateLimit-Remaining no longer sent',
    file: 'src/platform/http/rate-limit.ts',
    find: "    'X-RateLimit-Remaining': String(Math.max(0, outcome.minute.remainingPoints)),\n",
    replace: '',
    grep: 'probes and published documents',
  },
  {
    id: 'signature-over-reserialised-json',
    group: 'webhooks',
    rows: ['header:X-Service-Signature'],
    defect: 'webhook signature computed over re-serialised JSON, not the bytes sent',
    file: 'src/webhooks/delivery-worker.ts',
    find: "'x-service-signature': signWebhookBodyWith(body, signingSecrets(this.openSecret, endpoint, at)),",
    replace: "'x-service-signature': signWebhookBodyWith(JSON.stringify(JSON.parse(String(body)), null, 1), signingSecrets(this.openSecret, endpoint, at)),",
    grep: 'events to subscribed endpoints',
  },
  {
    id: 'signature-upper-case-hex',
    group: 'webhooks',
    rows: ['header:X-Service-Signature'],
    defect: 'webhook signature sent in upper-case hex (D15 says lowercase)',
    file: 'src/webhooks/verify-signature.ts',
    find: "return `sha256=${createHmac('sha256', secret).update(rawBody).digest('hex')}`;",
    replace: "return `sha256=${createHmac('sha256', secret).update(rawBody).digest('hex').toUpperCase()}`;",
    grep: 'events to subscribed endpoints',
  },
  {
    id: 'cross-lender-read',
    group: 'lifecycle',
    rows: ['op:getVerification 404 not_found'],
    defect: "the tenant check removed from GET /verifications/{id}: another lender's verification is readable",
    file: 'src/verifications/verifications-repository.ts',
    find: "   where v.id = ? and v.lender_id || '' = ?`,",
    replace: "   where v.id = ? and (v.lender_id || '' = ? or 1 = 1)`,",
    grep: 'tenant isolation',
  },
  {
    id: 'idempotency-conflict-200',
    group: 'lifecycle',
    rows: ['op:createVerification 409 duplicate_request'],
    defect: 'an Idempotency-Key reused with another payload replays (200/201) instead of 409 duplicate_request',
    file: 'src/verifications/verification-lifecycle.ts',
    find: '  if (previous.requestFingerprint !== fingerprint) {',
    replace: '  if (false as boolean) {',
    grep: 'duplicate_request (409)',
  },
  {
    id: 'erasure-forgets-a-table',
    group: 'platform',
    rows: ['op:gdprErase 200'],
    defect: "erasure leaves the creator's platform connections to the cascade and reports none erased",
    file: 'src/consent/consent-repository.ts',
    find: "    const connections = await trx('platform_connections').whereIn('verification_id', verificationIds).delete();",
    replace: '    const connections = 0;',
    grep: 'access, export and erase a creator',
  },
  {
    id: 'benchmark-below-privacy-floor',
    group: 'tapes',
    rows: ['op:getBenchmark 200'],
    defect: 'peer benchmarks published from a cohort below the privacy floor (1 tape, 1 lender instead of 30 and 3)',
    file: 'src/benchmarks/peer-benchmark.ts',
    find: 'const COHORT_FLOOR = { tapes: 30, lenders: 3 };',
    replace: 'const COHORT_FLOOR = { tapes: 1, lenders: 1 };',
    grep: 'a peer benchmark',
  },
  {
    id: 'benchmark-counts-own-tapes',
    group: 'tapes',
    rows: ['op:getBenchmark 200'],
    defect: "a lender's own tapes counted among its peers again (P28): tapes of its own move its answer",
    file: 'src/benchmarks/peer-benchmark.ts',
    find: 'const peers = await deps.benchmarks.cohort(productType, lenderId);',
    replace: 'const peers = await deps.benchmarks.cohort(productType);',
    grep: 'peer benchmarks leave out the asking lender',
  },
  {
    id: 'benchmark-floor-two-lenders',
    group: 'tapes',
    rows: ['op:getBenchmark 200'],
    defect: 'peers shown from two other lenders: the floor of three lenders (P22) lowered by one',
    file: 'src/benchmarks/peer-benchmark.ts',
    find: 'const COHORT_FLOOR = { tapes: 30, lenders: 3 };',
    replace: 'const COHORT_FLOOR = { tapes: 30, lenders: 2 };',
    grep: 'shows peers from 30 tapes of 3 other lenders',
  },
  {
    id: 'benchmark-floor-29-tapes',
    group: 'tapes',
    rows: ['op:getBenchmark 200'],
    defect: 'peers shown from 29 tapes: the floor of 30 tapes (P22) lowered by one',
    file: 'src/benchmarks/peer-benchmark.ts',
    find: 'return peers.tapes >= COHORT_FLOOR.tapes && ',
    replace: 'return peers.tapes >= COHORT_FLOOR.tapes - 1 && ',
    grep: 'shows peers from 30 tapes of 3 other lenders',
  },
  {
    id: 'benchmark-size-unrounded',
    group: 'tapes',
    rows: ['op:getBenchmark 200'],
    defect: "a peer cohort's size published as counted, not rounded down to a multiple of 10: each added tape shows",
    file: 'src/benchmarks/peer-benchmark.ts',
    find: 'size: usePeers ? Math.floor(peers.tapes / COHORT_SIZE_STEP) * COHORT_SIZE_STEP : cohort.tapes,',
    replace: 'size: usePeers ? peers.tapes : cohort.tapes,',
    grep: '/falls back to the reference population while one lender|shows peers from 30 tapes of 3 other lenders/',
  },
  {
    id: 'benchmark-dominance-ignored',
    group: 'tapes',
    rows: ['op:getBenchmark 200'],
    defect: 'peers shown while one lender holds more than half of them: the dominance rule (P28) dropped',
    file: 'src/benchmarks/peer-benchmark.ts',
    find: ' && largest <= DOMINANCE.share * peers.tapes;',
    replace: ';',
    grep: 'falls back to the reference population while one lender',
  },
  {
    id: 'benchmark-dominance-at-half',
    group: 'tapes',
    rows: ['op:getBenchmark 200'],
    defect: 'the dominance rule (P28) refuses a lender holding exactly half of the peers, not only more than half',
    file: 'src/benchmarks/peer-benchmark.ts',
    find: ' && largest <= DOMINANCE.share * peers.tapes;',
    replace: ' && largest < DOMINANCE.share * peers.tapes;',
    grep: 'falls back to the reference population while one lender',
  },
  {
    id: 'benchmark-peer-quartiles-from-reference',
    group: 'tapes',
    rows: ['op:getBenchmark 200'],
    defect: "a benchmark labelled `peers` whose quartiles are the reference population's",
    file: 'src/benchmarks/peer-benchmark.ts',
    find: 'const cohort = usePeers ? peers : deps.reference[productType]!;',
    replace: 'const cohort = deps.reference[productType]!;',
    grep: 'shows peers from 30 tapes of 3 other lenders',
  },
  {
    id: 'overlay-in-1.1.0-tape',
    group: 'tapes',
    rows: ['tape:1.1.0'],
    defect: 'overlay blocks shown in a tape rendered at 1.1.0 (they exist from 1.2.0)',
    file: 'src/tape/render.ts',
    find: "jurisdiction_profile: '1.2.0', overlay_blocks: '1.2.0' },",
    replace: "jurisdiction_profile: '1.2.0', overlay_blocks: '1.1.0' },",
    grep: 'attach an overlay to a completed tape',
  },
  {
    id: 'wrong-state-transition',
    group: 'lifecycle',
    rows: ['transition:pending_consent->expired'],
    defect: 'an expired consent session moves pending_consent to failed, a move the state table does not have',
    file: 'src/verifications/state-machine.ts',
    find: "{ from: 'pending_consent', trigger: 'consent_expired', to: 'expired', emits: 'verification.expired'",
    replace: "{ from: 'pending_consent', trigger: 'consent_expired', to: 'failed', emits: 'verification.expired'",
    grep: 'the state table (x-transitions)',
  },
  {
    id: 'retry-after-missing-on-429',
    group: 'platform',
    rows: ['header:Retry-After'],
    defect: 'a 429 rate_limited without Retry-After',
    file: 'src/platform/http/rate-limit.ts',
    find: '      retryAfterSeconds: seconds,\n',
    replace: '',
    grep: 'rate_limited (429) on the pilot key',
  },
  {
    id: 'sandbox-connections-without-accounts',
    group: 'platform',
    rows: ['op:gdprAccess 200'],
    defect: 'sandbox connections without synthetic account data (P35): no address to find them by, no account, no connection time',
    file: 'src/service.ts',
    find: "...(config.mode === 'sandbox' ? [recordSandboxAccounts(consent, encryptionKey)] : [])",
    replace: '',
    grep: 'every connection has a synthetic account',
  },
  {
    id: 'sandbox-account-connected-now',
    group: 'platform',
    rows: ['op:gdprAccess 200'],
    defect: "a sandbox connection's account dated when it was stored, not when the tape says it was connected",
    file: 'src/consent/sandbox-accounts.ts',
    find: 'connectedAt: connection.connected_at }',
    replace: 'connectedAt: new Date(Date.parse(connection.connected_at) + 1000).toISOString() }',
    grep: 'every connection has a synthetic account',
  },
  {
    id: 'key-rate-limit-ignored',
    group: 'platform',
    rows: ['limit:pilot quota'],
    defect: "a key's own limit set by the operator ignored: the key gets its plan's quota",
    file: 'src/platform/http/rate-limit.ts',
    find: '  if (key) return key;\n',
    replace: '',
    grep: '/the pilot key shows its own quota|rate_limited \\(429\\) on the pilot key/',
  },
  {
    id: 'burst-window-ignored',
    group: 'platform',
    rows: ['limit:pilot quota'],
    defect: 'the one-second burst window no longer counted: only the minute limits a key',
    file: 'src/platform/http/rate-limit.ts',
    find: '      await this.limiter(quota.burst, 1).consume(subject);\n',
    replace: '',
    grep: 'trip the burst limit of 10',
  },
  {
    id: 'quota-per-endpoint',
    group: 'platform',
    rows: ['limit:quota scope'],
    defect: "a key's quota counted per path instead of one quota for all endpoints (D8)",
    file: 'src/platform/http/rate-limit.ts',
    find: 'await limits.consume(`key:${principal.keyId}`, quota)',
    replace: 'await limits.consume(`key:${principal.keyId}:${req.path}`, quota)',
    grep: 'one quota for all endpoints',
  },
  {
    id: 'anonymous-limit-per-guessed-key',
    group: 'platform',
    rows: ['limit:quota scope'],
    defect: 'requests without a valid key limited per key presented instead of per client address: every guess has a fresh quota',
    file: 'src/platform/http/rate-limit.ts',
    find: "  const outcome = await limits.consume(`ip:${req.ip ?? 'unknown'}`, ANONYMOUS_QUOTA);",
    replace: "  const outcome = await limits.consume(`ip:${req.ip ?? 'unknown'}:${req.get('authorization') ?? ''}`, ANONYMOUS_QUOTA);",
    grep: 'requests at once with keys nobody issued',
  },
  {
    id: 'wrong-tape-rounding',
    group: 'tapes',
    rows: ['tape:2.0.0'],
    defect: 'money on tapes rounded to 10 cents instead of cents',
    file: 'src/tape/round.ts',
    find: 'export const cents = (x: number): number => roundAt(x, 100);',
    replace: 'export const cents = (x: number): number => roundAt(x, 10);',
    grep: 'reproduce their golden tapes',
  },
  {
    id: 'metadata-target-admitted',
    group: 'webhooks',
    rows: ['op:createWebhook 400 validation_error'],
    defect: 'with private targets allowed, cloud metadata and link-local webhook targets are admitted too (SSRF)',
    file: 'src/webhooks/target-guard.ts',
    find: "new Set(['public', 'loopback', 'private', 'shared']);",
    replace: "new Set(['public', 'loopback', 'private', 'shared', 'metadata', 'linkLocal']);",
    grep: 'P13: with private targets allowed, metadata',
  },
  {
    id: 'replay-header-missing',
    group: 'lifecycle',
    rows: ['header:Idempotent-Replayed'],
    defect: 'an idempotent replay without Idempotent-Replayed: true',
    file: 'src/verifications/verification-lifecycle.ts',
    find: '        return { body: { ...previous.body, consent_url: verification?.consentUrl ?? previous.body.consent_url }, replayed: true };',
    replace: '        return { body: { ...previous.body, consent_url: verification?.consentUrl ?? previous.body.consent_url }, replayed: false };',
    grep: 'happy: idempotent replay',
  },
  {
    id: 'later-field-in-1.0.0-tape',
    group: 'tapes',
    rows: ['tape:1.0.0'],
    defect: 'the affordability block (from 1.1.0) kept in a tape rendered at 1.0.0',
    file: 'src/tape/render.ts',
    find: "tape: { islamic_compliance: '1.1.0', affordability: '1.1.0',",
    replace: "tape: { islamic_compliance: '1.1.0', affordability: '1.0.0',",
    grep: 'every tape at every schema version',
  },
  // ---- cancel (P24): only pending_consent moves; a repeat answers again without a second event
  {
    id: 'cancel-accepts-processing',
    group: 'lifecycle',
    rows: ['op:cancelVerification 422 unprocessable'],
    defect: 'a cancel of a processing verification answered 200 (with the verification unchanged) instead of 422',
    file: 'src/verifications/verification-lifecycle.ts',
    find: "      } else if (record.status !== 'cancelled') {",
    replace: "      } else if (record.status !== 'cancelled' && record.status !== 'processing') {",
    grep: 'cancel from every state but pending_consent',
  },
  {
    id: 'cancel-accepts-failed',
    group: 'lifecycle',
    rows: ['op:cancelVerification 422 unprocessable'],
    defect: 'a cancel of a failed (or declined) verification answered 200 instead of 422',
    file: 'src/verifications/verification-lifecycle.ts',
    find: "      } else if (record.status !== 'cancelled') {",
    replace: "      } else if (record.status !== 'cancelled' && record.status !== 'failed') {",
    grep: 'cancel from every state but pending_consent',
  },
  {
    id: 'cancel-accepts-expired',
    group: 'lifecycle',
    rows: ['op:cancelVerification 422 unprocessable'],
    defect: 'a cancel of an expired verification answered 200 instead of 422',
    file: 'src/verifications/verification-lifecycle.ts',
    find: "      } else if (record.status !== 'cancelled') {",
    replace: "      } else if (record.status !== 'cancelled' && record.status !== 'expired') {",
    grep: 'cancel from every state but pending_consent',
  },
  {
    id: 'cancel-moves-expired',
    group: 'lifecycle',
    rows: ['op:cancelVerification 422 unprocessable'],
    defect: 'an expired verification treated as still waiting for consent: the cancel moves it to cancelled',
    file: 'src/verifications/verification-lifecycle.ts',
    find: "      if (record.status === 'pending_consent') {\n        await moveVerification(store, record, 'cancelled_by_lender', { at: now }, this.monitoring);",
    replace:
      "      if (record.status === 'pending_consent' || record.status === 'expired') {\n        await moveVerification(store, { ...record, status: 'pending_consent' }, 'cancelled_by_lender', { at: now }, this.monitoring);",
    grep: 'cancel from every state but pending_consent',
  },
  {
    id: 'cancel-again-sends-event',
    group: 'lifecycle',
    rows: ['event:verification.cancelled'],
    defect: 'cancelling a cancelled verification applies the cancel again: a second verification.cancelled',
    file: 'src/verifications/verification-lifecycle.ts',
    find: "      if (record.status === 'pending_consent') {\n        await moveVerification(store, record, 'cancelled_by_lender', { at: now }, this.monitoring);",
    replace:
      "      if (record.status === 'pending_consent' || record.status === 'cancelled') {\n        await moveVerification(store, { ...record, status: 'pending_consent' }, 'cancelled_by_lender', { at: now }, this.monitoring);",
    grep: 'even when the cancel is sent twice',
  },
  {
    id: 'cancel-again-refused',
    group: 'lifecycle',
    rows: ['op:cancelVerification 200'],
    defect: 'cancelling a cancelled verification refused with 422 instead of answered again',
    file: 'src/verifications/verification-lifecycle.ts',
    find: "      } else if (record.status !== 'cancelled') {",
    replace: '      } else {',
    grep: 'cancelling again answers the same cancelled verification',
  },
  // ---- webhook secret rotation (P25): default overlap, its end, two rotations, the signing order
  {
    id: 'rotation-default-overlap-hour',
    group: 'webhooks',
    rows: ['op:rotateWebhookSecret 200'],
    defect: 'a rotation without overlap_seconds keeps the old secret an hour instead of the documented day',
    file: 'src/webhooks/endpoints.ts',
    find: 'export const DEFAULT_ROTATION_OVERLAP_SECONDS = 86_400;',
    replace: 'export const DEFAULT_ROTATION_OVERLAP_SECONDS = 3_600;',
    grep: 'rotate-secret without a body',
  },
  {
    id: 'rotation-overlap-end-late',
    group: 'webhooks',
    rows: ['op:rotateWebhookSecret 200'],
    defect: 'the overlap ends a second after overlap_seconds',
    file: 'src/webhooks/endpoints.ts',
    find: 'new Date(now.getTime() + overlapSeconds * 1000).toISOString()',
    replace: 'new Date(now.getTime() + (overlapSeconds + 1) * 1000).toISOString()',
    grep: 'rotate-secret with a body',
  },
  {
    id: 'rotation-old-secret-signs-past-end',
    group: 'webhooks',
    rows: ['op:rotateWebhookSecret 200', 'header:X-Service-Signature'],
    defect: 'the rotated-out secret keeps signing for a minute after the overlap ends',
    file: 'src/webhooks/endpoints.ts',
    find: 'endpoint.previousSecretExpiresAt > at.toISOString()',
    replace: 'endpoint.previousSecretExpiresAt > new Date(at.getTime() - 60_000).toISOString()',
    grep: 'rotate-secret with a body',
  },
  {
    id: 'rotation-end-shown-past-end',
    group: 'webhooks',
    rows: ['op:rotateWebhookSecret 200'],
    defect: 'previous_secret_expires_at still shown after the overlap has ended',
    file: 'src/webhooks/endpoints.ts',
    find: 'endpoint.previousSecretExpiresAt && endpoint.previousSecretExpiresAt > now.toISOString()',
    replace: 'endpoint.previousSecretExpiresAt',
    grep: 'rotate-secret with a body',
  },
  {
    id: 'rotation-second-keeps-oldest',
    group: 'webhooks',
    rows: ['op:rotateWebhookSecret 200', 'header:X-Service-Signature'],
    defect: 'a second rotation during an overlap keeps the oldest secret signing and drops the one it replaces',
    file: 'src/webhooks/endpoints.ts',
    find: 'previousSecretCiphertext: overlapSeconds > 0 ? endpoint.secretCiphertext : null,',
    replace: 'previousSecretCiphertext: overlapSeconds > 0 ? (endpoint.previousSecretCiphertext ?? endpoint.secretCiphertext) : null,',
    grep: 'rotate-secret twice in a row',
  },
  {
    id: 'rotation-new-secret-not-stored',
    group: 'webhooks',
    rows: ['op:rotateWebhookSecret 200', 'header:X-Service-Signature'],
    defect: 'the rotation answers a new secret but keeps signing with the old one',
    file: 'src/webhooks/endpoints.ts',
    find: '    ...endpoint,\n    secretCiphertext: encryptSecret(deps.encryptionKey, secret),',
    replace: '    ...endpoint,\n    secretCiphertext: endpoint.secretCiphertext,',
    grep: 'rotate-secret without a body',
  },
  {
    id: 'rotation-old-secret-first',
    group: 'webhooks',
    rows: ['header:X-Service-Signature'],
    defect: "during an overlap the old secret's signature is listed first",
    file: 'src/webhooks/endpoints.ts',
    find: '    secrets.push(open(endpoint.previousSecretCiphertext));',
    replace: '    secrets.unshift(open(endpoint.previousSecretCiphertext));',
    grep: 'rotate-secret twice in a row',
  },
  // ---- overlays (4.9, D20): the byte limit, the count limit, idempotency across verifications
  {
    id: 'overlay-limit-in-characters',
    group: 'tapes',
    rows: ['op:createOverlay 400 validation_error'],
    defect: 'the 64 KiB limit of an overlay payload counted in characters, not bytes of UTF-8',
    file: 'src/verifications/verification-lifecycle.ts',
    find: 'if (Buffer.byteLength(JSON.stringify(data)) > MAX_OVERLAY_DATA_BYTES) {',
    replace: 'if (JSON.stringify(data).length > MAX_OVERLAY_DATA_BYTES) {',
    grep: 'the 64 KiB are bytes of UTF-8',
  },
  {
    id: 'overlay-limit-exclusive',
    group: 'tapes',
    rows: ['op:createOverlay 400 validation_error'],
    defect: 'a payload of exactly 64 KiB refused (the limit made exclusive)',
    file: 'src/verifications/verification-lifecycle.ts',
    find: 'if (Buffer.byteLength(JSON.stringify(data)) > MAX_OVERLAY_DATA_BYTES) {',
    replace: 'if (Buffer.byteLength(JSON.stringify(data)) >= MAX_OVERLAY_DATA_BYTES) {',
    grep: 'a provider payload over 64 KiB',
  },
  {
    id: 'overlay-51st-accepted',
    group: 'tapes',
    rows: ['op:createOverlay 422 unprocessable'],
    defect: 'a 51st overlay attached to one tape',
    file: 'src/verifications/verification-lifecycle.ts',
    find: '      if (existing.length >= MAX_OVERLAYS_PER_TAPE) {',
    replace: '      if (existing.length > MAX_OVERLAYS_PER_TAPE) {',
    grep: 'the 51st overlay on one tape',
  },
  {
    id: 'overlay-key-ignores-verification',
    group: 'tapes',
    rows: ['op:createOverlay 409 duplicate_request'],
    defect: "an overlay's Idempotency-Key reused on another verification replays the first overlay instead of 409",
    file: 'src/verifications/verification-lifecycle.ts',
    find: "requestFingerprint({ operation: 'createOverlay', verification_id: verificationId, body: request })",
    replace: "requestFingerprint({ operation: 'createOverlay', body: request })",
    grep: 'one Idempotency-Key reused on another verification',
  },
  {
    id: 'overlay-on-unfinished-verification',
    group: 'tapes',
    rows: ['op:createOverlay 422 unprocessable'],
    defect: 'an overlay on a verification still pending_consent goes on to rescoring (no tape: a 500) instead of 422',
    file: 'src/verifications/verification-lifecycle.ts',
    find: "      if (record.status !== 'completed') {\n        throw new DomainError('refused', `Verification ${verificationId} is ${record.status}; overlays attach",
    replace:
      "      if (record.status === 'expired') {\n        throw new DomainError('refused', `Verification ${verificationId} is ${record.status}; overlays attach",
    grep: 'a verification that is not completed: 422 unprocessable naming its status',
  },
  // ---- screening overlays (P34): what an aml, kyb or credit_bureau verdict does to the tape
  {
    id: 'aml-hit-only-caps-the-tier',
    group: 'tapes',
    rows: ['op:createOverlay 201'],
    defect: 'an AML hit flagged but the tape left eligible at subprime instead of ineligible (P34)',
    file: 'src/tape/eligibility/screening.ts',
    find: "adverseFlag: { code: 'AML_HIT', limit: 'ineligible' },",
    replace: "adverseFlag: { code: 'AML_HIT', limit: 'subprime' },",
    grep: 'an aml hit: AML_HIT, critical, and ineligible at every schema version',
  },
  {
    id: 'kyb-failure-only-caps-the-tier',
    group: 'tapes',
    rows: ['op:createOverlay 201'],
    defect: 'a failed KYB check flagged but the tape left eligible at subprime instead of ineligible (P34)',
    file: 'src/tape/eligibility/screening.ts',
    find: "adverseFlag: { code: 'KYB_FAILED', limit: 'ineligible' },",
    replace: "adverseFlag: { code: 'KYB_FAILED', limit: 'subprime' },",
    grep: 'a failed kyb check makes the tape ineligible',
  },
  {
    id: 'screening-last-attached-decides',
    group: 'tapes',
    rows: ['op:createOverlay 201'],
    defect: 'the screening verdict attached last decides instead of the one observed last (P34)',
    file: 'src/tape/eligibility/screening.ts',
    find: 'if (verdictOf(rule, o.status) !== undefined && notEarlier(o, decisive)) decisive = o;',
    replace: 'if (verdictOf(rule, o.status) !== undefined) decisive = o;',
    grep: 'an aml verdict observed earlier than the one on the tape does not overturn it',
  },
  {
    id: 'unread-status-lifts-aml-hit',
    group: 'tapes',
    rows: ['op:createOverlay 201'],
    defect: 'any later status, even one the service does not read, lifts an AML hit (P34)',
    file: 'src/tape/eligibility/screening.ts',
    find: 'if (verdictOf(rule, o.status) !== undefined && notEarlier(o, decisive)) decisive = o;',
    replace: 'if (notEarlier(o, decisive)) decisive = o;',
    grep: 'a status the service does not read asks for review and does not lift an aml hit',
  },
  // ---- boundaries both ways: page sizes and the retry schedule
  {
    id: 'list-max-page-10',
    group: 'lifecycle',
    rows: ['op:listVerifications 200'],
    defect: 'GET /verifications caps a page at 10 instead of the 100 asked for',
    file: 'src/verifications/verification-lifecycle.ts',
    find: 'const limit = Math.min(Math.max(query.limit ?? 20, 1), 100);\n    const { verifications, hasMore }',
    replace: 'const limit = Math.min(Math.max(query.limit ?? 20, 1), 10);\n    const { verifications, hasMore }',
    grep: 'page size both ways',
  },
  {
    id: 'webhook-list-page-one-more',
    group: 'webhooks',
    rows: ['op:listWebhooks 200'],
    defect: 'GET /webhooks answers one endpoint more than limit',
    file: 'src/webhooks/endpoints.ts',
    find: 'const limit = Math.min(Math.max(query.limit ?? 20, 1), 100);',
    replace: 'const limit = Math.min(Math.max(query.limit ?? 20, 1), 100) + 1;',
    grep: 'GET /webhooks pages with limit',
  },
  {
    id: 'retry-schedule-doubled',
    group: 'webhooks',
    rows: ['delivery:retry'],
    defect: 'retries at twice their WEBHOOK_RETRY_SCHEDULE offsets',
    file: 'src/webhooks/delivery-worker.ts',
    find: 'new Date(firstAttemptAt).getTime() + nextOffset * 1000',
    replace: 'new Date(firstAttemptAt).getTime() + nextOffset * 2000',
    grep: 'always 500: one attempt per schedule entry',
  },
  {
    id: 'retry-schedule-skips-entry',
    group: 'webhooks',
    rows: ['delivery:retry'],
    defect: 'each retry takes the next-but-one offset: one attempt fewer, the others late',
    file: 'src/webhooks/delivery-worker.ts',
    find: 'const nextOffset = scheduleSeconds[attemptNumber];',
    replace: 'const nextOffset = scheduleSeconds[attemptNumber + 1];',
    grep: 'always 500: one attempt per schedule entry',
  },
  {
    id: 'only-200-acknowledges',
    group: 'webhooks',
    rows: ['delivery:acknowledgement'],
    defect: 'only a 200 acknowledges a delivery: a 204 or 202 is retried',
    file: 'src/webhooks/delivery-worker.ts',
    find: 'const succeeded = statusCode !== null && statusCode >= 200 && statusCode < 300;',
    replace: 'const succeeded = statusCode === 200;',
    grep: 'any 2xx acknowledges',
  },
  // ---- lifecycle: creation, the list, the state table's rows and the events its moves emit
  {
    id: 'list-unknown-cursor-empty-page',
    group: 'lifecycle',
    rows: ['op:listVerifications 400 validation_error'],
    defect: 'a starting_after that is none of the lender’s verifications answers an empty last page instead of 400',
    file: 'src/verifications/verification-lifecycle.ts',
    find: "      if (!after) throw new DomainError('invalid', `starting_after: no verification ${query.starting_after}`, 'query.starting_after');",
    replace: '      if (!after) return { data: [], has_more: false };',
    grep: 'starting_after=vrf_neverissued',
  },
  {
    id: 'events-unknown-cursor-empty-page',
    group: 'lifecycle',
    rows: ['op:listEvents 400 validation_error'],
    defect: 'a starting_after that is none of the lender’s events answers an empty last page instead of 400',
    file: 'src/verifications/verification-lifecycle.ts',
    find: "      if (position === null) throw new DomainError('invalid', `starting_after: no event ${query.starting_after}`, 'query.starting_after');",
    replace: '      if (position === null) return { data: [], has_more: false };',
    grep: 'starting_after=evt_neverissued',
  },
  {
    id: 'events-of-every-lender',
    group: 'lifecycle',
    rows: ['op:listEvents 200', 'op:listEvents 400 validation_error'],
    defect: 'GET /events lists every lender’s events, and takes another lender’s event as a cursor',
    file: 'src/verifications/verifications-repository.ts',
    find: "const query = this.reader('events').where({ lender_id: lenderId })",
    replace: "const query = this.reader('events').whereNot({ lender_id: '' })",
    grep: "another lender's key sees none of this lender's events",
  },
  {
    id: 'events-oldest-first',
    group: 'lifecycle',
    rows: ['op:listEvents 200'],
    defect: 'GET /events lists the oldest events first',
    file: 'src/verifications/verifications-repository.ts',
    find: ".orderBy('sequence', 'desc')\n      .limit(limit + 1)",
    replace: ".orderBy('sequence', 'asc')\n      .limit(limit + 1)",
    grep: 'GET /api/v1/events',
  },
  {
    id: 'events-type-filter-ignored',
    group: 'lifecycle',
    rows: ['op:listEvents 200'],
    defect: 'the type filter of GET /events ignored',
    file: 'src/verifications/verification-lifecycle.ts',
    find: '      type: query.type,\n',
    replace: '      type: undefined,\n',
    grep: 'GET /api/v1/events',
  },
  {
    id: 'list-several-statuses-first-only',
    group: 'lifecycle',
    rows: ['op:listVerifications 200'],
    defect: 'GET /verifications?status=a,b lists the verifications in the first state only',
    file: 'src/verifications/verifications-repository.ts',
    find: "    if (filter.status?.length === 1) void query.andWhere('status', filter.status[0]!);",
    replace: "    if (filter.status?.length) void query.andWhere('status', filter.status[0]!);",
    grep: 'status=a,b lists the verifications in either state',
  },
  {
    id: 'list-ending-before-farthest-page',
    group: 'lifecycle',
    rows: ['op:listVerifications 200'],
    defect: 'ending_before answers the newest verifications instead of the nearest newer ones',
    file: 'src/verifications/verifications-repository.ts',
    find: "    const order = filter.before ? 'asc' : 'desc';\n    return query\n      .orderBy([\n        { column: 'created_at', order },",
    replace: "    const order = 'desc';\n    return query\n      .orderBy([\n        { column: 'created_at', order },",
    grep: 'ending_before: the nearest newer verifications',
  },
  {
    id: 'deliveries-status-filter-ignored',
    group: 'webhooks',
    rows: ['op:listWebhookDeliveries 200'],
    defect: 'the status filter of an endpoint’s delivery log ignored',
    file: 'src/webhooks/webhooks-repository.ts',
    find: '    const filter: DeliveryLogFilter = { status: query.status, createdGte: query.createdGte, createdLt: query.createdLt };',
    replace: '    const filter: DeliveryLogFilter = { status: undefined, createdGte: query.createdGte, createdLt: query.createdLt };',
    grep: 'status=a,b, created_gte and created_lt select deliveries',
  },
  {
    id: 'list-created-lt-ignored',
    group: 'lifecycle',
    rows: ['op:listVerifications 200'],
    defect: 'the created_lt filter of GET /verifications ignored',
    file: 'src/verifications/verification-lifecycle.ts',
    find: "      createdLt: instant(query.created_lt, 'created_lt'),",
    replace: '      createdLt: undefined,',
    grep: 'filters: product_type, status',
  },
  {
    id: 'list-status-filter-ignored',
    group: 'lifecycle',
    rows: ['op:listVerifications 200'],
    defect: 'the status filter of GET /verifications ignored',
    file: 'src/verifications/verification-lifecycle.ts',
    find: '      status: query.status,\n',
    replace: '      status: undefined,\n',
    grep: 'filters: product_type, status',
  },
  {
    id: 'consent-session-six-days',
    group: 'lifecycle',
    rows: ['limit:consent session'],
    defect: 'the consent session lasts 6 days instead of 7 (expires_at a day early)',
    file: 'src/verifications/verification-lifecycle.ts',
    find: 'export const CONSENT_SESSION_MS = 7 * 24 * 60 * 60 * 1000;',
    replace: 'export const CONSENT_SESSION_MS = 6 * 24 * 60 * 60 * 1000;',
    grep: 'D2: completed_at only when completed',
  },
  {
    id: 'default-product-type',
    group: 'lifecycle',
    rows: ['op:createVerification 201'],
    defect: 'a verification created without product_type defaults to term_loan instead of rbf',
    file: 'src/verifications/verification-lifecycle.ts',
    find: "productType: request.product_type ?? 'rbf',",
    replace: "productType: request.product_type ?? 'term_loan',",
    grep: 'defaults applied',
  },
  {
    id: 'lender-name-ignored',
    group: 'lifecycle',
    rows: ['op:createVerification 201'],
    defect: 'the lender_name of the request ignored: the account name shown instead',
    file: 'src/verifications/verification-lifecycle.ts',
    find: 'lenderName: request.lender_name ?? principal.lender.name,',
    replace: 'lenderName: principal.lender.name,',
    grep: 'kept as given',
  },
  {
    id: 'idempotency-key-case-sensitive',
    group: 'lifecycle',
    rows: ['header:Idempotency-Key'],
    defect: 'an Idempotency-Key compared case-sensitively when claimed (P12)',
    file: 'src/verifications/verification-lifecycle.ts',
    find: 'store.claimIdempotencyKey(lenderId, idempotencyKey.toLowerCase(), fingerprint,',
    replace: 'store.claimIdempotencyKey(lenderId, idempotencyKey, fingerprint,',
    grep: 'compared case-insensitively',
  },
  {
    id: 'synthetic-waits-for-consent',
    group: 'lifecycle',
    rows: ['transition:new->completed'],
    defect: 'a synthetic creator in the sandbox waits for consent instead of completing at creation',
    file: 'src/verifications/verification-lifecycle.ts',
    find: 'if (sandbox && isSyntheticCreator(record.obligorReference)) {',
    replace: "if (sandbox && isSyntheticCreator(record.obligorReference) && record.productType === 'hpp') {",
    grep: 'a synthetic creator is completed in the creation response itself',
  },
  {
    id: 'fail-scenario-wrong-reason',
    group: 'lifecycle',
    rows: ['transition:processing->failed'],
    defect: 'a test-fail- verification fails with reason timeout instead of platform_error (D11)',
    file: 'src/verifications/sandbox.ts',
    find: "{ trigger: 'collection_failed', reason: 'platform_error', atShareOfDelay: 1 },",
    replace: "{ trigger: 'collection_failed', reason: 'timeout', atShareOfDelay: 1 },",
    grep: 'failure_reason platform_error (test-fail-)',
  },
  {
    id: 'revoke-scenario-wrong-reason',
    group: 'lifecycle',
    rows: ['transition:processing->failed'],
    defect: 'a test-revoke- verification fails with reason platform_error instead of consent_revoked (D11)',
    file: 'src/verifications/sandbox.ts',
    find: "{ trigger: 'collection_failed', reason: 'consent_revoked', atShareOfDelay: 1 },",
    replace: "{ trigger: 'collection_failed', reason: 'platform_error', atShareOfDelay: 1 },",
    grep: 'failure_reason consent_revoked (test-revoke-)',
  },
  {
    id: 'expire-scenario-misspelt',
    group: 'lifecycle',
    rows: ['transition:pending_consent->expired'],
    defect: 'the sandbox expiry scenario listens to test-expired- instead of test-expire- (D11): nothing expires',
    file: 'src/verifications/sandbox.ts',
    find: "{ prefix: 'test-expire-', steps:",
    replace: "{ prefix: 'test-expired-', steps:",
    grep: 'consent_expired]-> expired: observed with',
  },
  {
    id: 'completed-event-not-emitted',
    group: 'lifecycle',
    rows: ['event:verification.completed', 'transition:processing->completed'],
    defect: 'processing → completed emits no verification.completed',
    file: 'src/verifications/state-machine.ts',
    find: "trigger: 'tape_computed', to: 'completed', emits: 'verification.completed',",
    replace: "trigger: 'tape_computed', to: 'completed', emits: null,",
    grep: 'each endpoint receives exactly the events it subscribed to',
  },
  {
    id: 'cancelled-event-not-emitted',
    group: 'lifecycle',
    rows: ['event:verification.cancelled', 'transition:pending_consent->cancelled'],
    defect: 'a cancel emits no verification.cancelled',
    file: 'src/verifications/state-machine.ts',
    find: "    emits: 'verification.cancelled',",
    replace: '    emits: null,',
    grep: 'receives it once, signed and valid',
  },
  {
    id: 'failed-event-without-reason',
    group: 'lifecycle',
    rows: ['event:verification.failed'],
    defect: "verification.failed's data without the failure reason",
    file: 'src/verifications/verification-events.ts',
    find: "data: { ...ids, status: 'failed', reason } };",
    replace: "data: { ...ids, status: 'failed' } };",
    grep: 'each endpoint receives exactly the events it subscribed to',
  },
  {
    id: 'expired-event-wrong-status',
    group: 'lifecycle',
    rows: ['event:verification.expired'],
    defect: "verification.expired's data says status completed (copied from the completed event)",
    file: 'src/verifications/verification-events.ts',
    find: "data: { ...ids, status: 'expired' } };",
    replace: "data: { ...ids, status: 'completed' } };",
    grep: 'each endpoint receives exactly the events it subscribed to',
  },
  {
    id: 'event-occurred-at-not-move-time',
    group: 'lifecycle',
    rows: ['event:verification.completed', 'event:verification.failed'],
    defect: "an event's occurred_at is when it was written, not the time of the move (updated_at)",
    file: 'src/verifications/verification-lifecycle.ts',
    find: '{ verificationId: verification.id, obligorReference: verification.obligorReference }, at, change.reason),',
    replace: '{ verificationId: verification.id, obligorReference: verification.obligorReference }, new Date(Date.now() + 1).toISOString(), change.reason),',
    grep: 'every scenario shows its path of states',
  },
  {
    id: 'decline-wrong-reason',
    group: 'lifecycle',
    rows: ['transition:pending_consent->failed'],
    defect: "a creator's decline recorded with reason platform_error instead of consent_declined (the move is refused)",
    file: 'src/verifications/verification-lifecycle.ts',
    find: "move('consent_declined', { reason: 'consent_declined' })",
    replace: "move('consent_declined', { reason: 'platform_error' })",
    grep: 'a creator declines on the consent page',
  },
  {
    id: 'cancel-unknown-refused',
    group: 'lifecycle',
    rows: ['op:cancelVerification 404 not_found'],
    defect: 'a cancel of an id never issued answered 422 instead of 404',
    file: 'src/verifications/verification-lifecycle.ts',
    find: "      if (!record) throw new DomainError('not_found', `No verification ${verificationId}.`);\n      if (record.status === 'pending_consent') {",
    replace: "      if (!record) throw new DomainError('refused', `No verification ${verificationId}.`);\n      if (record.status === 'pending_consent') {",
    grep: 'cancel an id never issued',
  },
  {
    id: 'cancel-other-lender',
    group: 'lifecycle',
    rows: ['op:cancelVerification 404 not_found'],
    defect: "the tenant check left out of cancel: another lender's verification is cancelled",
    file: 'src/verifications/verification-lifecycle.ts',
    find: "      const [record] = await store.lockOwned(lenderId, [verificationId]);\n      if (!record) throw new DomainError('not_found', `No verification ${verificationId}.`);\n      if (record.status === 'pending_consent') {",
    replace:
      "      const record = await store.lock(verificationId);\n      if (!record) throw new DomainError('not_found', `No verification ${verificationId}.`);\n      if (record.status === 'pending_consent') {",
    grep: "cancel another lender's verification",
  },
  // ---- tapes: versions, product types, signatures, overlays, benchmarks
  {
    id: 'default-tape-version-1.2.0',
    group: 'tapes',
    rows: ['tape:2.0.0', 'op:getVerificationTape 200'],
    defect: 'GET /verifications/{id}/tape without schema_version renders 1.2.0 instead of 2.0.0 (D5)',
    file: 'src/verifications/http/getVerificationTape.ts',
    find: "request.query.schema_version ?? '2.0.0',",
    replace: "request.query.schema_version ?? '1.2.0',",
    grep: 'without schema_version the tape is 2.0.0',
  },
  {
    id: 'tape-404-without-status',
    group: 'tapes',
    rows: ['op:getVerificationTape 404 not_found'],
    defect: "the 404 of a tape not yet computed no longer names the verification's status",
    file: 'src/verifications/verification-lifecycle.ts',
    find: 'is ${found.status}; its tape exists once it is completed.`);',
    replace: 'has no tape.`);',
    grep: 'whose message names its status',
  },
  {
    id: 'tape-of-pending-is-422',
    group: 'tapes',
    rows: ['op:getVerificationTape 404 not_found'],
    defect: 'the tape of a verification not yet completed answered 422 instead of 404 (D5)',
    file: 'src/verifications/verification-lifecycle.ts',
    find: "throw new DomainError('not_found', `Verification ${verificationId} is ${found.status}; its tape exists",
    replace: "throw new DomainError('refused', `Verification ${verificationId} is ${found.status}; its tape exists",
    grep: 'a verification that is not completed: 404 not_found whose message names its status',
  },
  {
    id: 'tape-signed-over-pretty-json',
    group: 'tapes',
    rows: ['header:X-Tape-Signature'],
    defect: 'X-Tape-Signature computed over the tape re-serialised with indentation, not the bytes sent (P26)',
    file: 'src/verifications/http/getVerificationTape.ts',
    find: "const signature = await sign(Buffer.from(json, 'utf8'));",
    replace: "const signature = await sign(Buffer.from(JSON.stringify(JSON.parse(json), null, 2), 'utf8'));",
    grep: 'X-Tape-Signature verifies over the raw bytes',
  },
  {
    id: 'jurisdiction-profile-in-1.1.0',
    group: 'tapes',
    rows: ['tape:1.1.0'],
    defect: 'jurisdiction_profile (from 1.2.0) kept in a tape rendered at 1.1.0',
    file: 'src/tape/render.ts',
    find: "jurisdiction_profile: '1.2.0', overlay_blocks",
    replace: "jurisdiction_profile: '1.1.0', overlay_blocks",
    grep: 'at 1.1.0: valid for that version',
  },
  {
    id: 'eligibility-2.0-field-in-1.2.0',
    group: 'tapes',
    rows: ['tape:1.2.0'],
    defect: "eligibility's income_trend (from 2.0.0) kept in a tape rendered at 1.2.0",
    file: 'src/tape/render.ts',
    find: "    income_trend: '2.0.0',",
    replace: "    income_trend: '1.2.0',",
    grep: 'at 1.2.0: valid for that version',
  },
  {
    id: 'v2-product-renders-at-1x',
    group: 'tapes',
    rows: ['op:getVerificationTape 422 unprocessable'],
    defect: 'an hpp tape (a 2.0.0 product type) rendered at 1.x instead of 422 (P6)',
    file: 'src/tape/render.ts',
    find: "new Set(['rbf', 'term_loan', 'securitization_pool']);",
    replace: "new Set(['rbf', 'term_loan', 'securitization_pool', 'hpp']);",
    grep: 'a hpp tape: 422 unprocessable at 1.0.0',
  },
  {
    id: 'v1-product-refused-at-1x',
    group: 'tapes',
    rows: ['tape:1.0.0', 'op:getVerificationTape 200'],
    defect: 'a securitization_pool tape (a 1.0.0 product type) refused at 1.x',
    file: 'src/tape/render.ts',
    find: "new Set(['rbf', 'term_loan', 'securitization_pool']);",
    replace: "new Set(['rbf', 'term_loan']);",
    grep: 'the original product types (rbf, term_loan, securitization_pool) render at 1.0.0',
  },
  {
    id: 'sharia-earliest-verdict-decides',
    group: 'tapes',
    rows: ['op:createOverlay 201'],
    defect: 'the earliest sharia_screening verdict by observed_at decides islamic_compliance instead of the latest (D20)',
    file: 'src/tape/blocks.ts',
    find: 'Date.parse(o.observed_at) >= Date.parse(decisive.observed_at)',
    replace: 'Date.parse(o.observed_at) <= Date.parse(decisive.observed_at)',
    grep: 'the latest verdict by observed_at decides',
  },
  {
    id: 'sharia-non-compliant-shown-compliant',
    group: 'tapes',
    rows: ['op:createOverlay 201'],
    defect: 'islamic_compliance.status compliant whatever the verdict',
    file: 'src/tape/blocks.ts',
    find: "status: eligible ? 'compliant' : 'non_compliant',",
    replace: "status: 'compliant',",
    grep: 'the latest verdict by observed_at decides',
  },
  {
    id: 'overlay-event-named-completed',
    group: 'tapes',
    rows: ['event:tape.updated'],
    defect: 'an overlay announced as verification.completed instead of tape.updated',
    file: 'src/verifications/verification-lifecycle.ts',
    find: "    name: 'tape.updated',",
    replace: "    name: 'verification.completed',",
    grep: 'tape.updated to subscribed endpoints',
  },
  {
    id: 'tape-updated-without-schema-version',
    group: 'tapes',
    rows: ['event:tape.updated'],
    defect: "tape.updated's data without the tape's schema_version",
    file: 'src/verifications/verification-events.ts',
    find: "data: { ...ids, status: 'completed', schema_version: schemaVersion },",
    replace: "data: { ...ids, status: 'completed' },",
    grep: 'tape.updated to subscribed endpoints',
  },
  {
    id: 'overlay-moves-tape-generated-at',
    group: 'tapes',
    rows: ['op:createOverlay 201'],
    defect: 'an overlay rescores the tape as of now: tape_generated_at and the income window move (P21)',
    file: 'src/verifications/verification-lifecycle.ts',
    find: 'const scoredAt = new Date(stored.tape.tape_generated_at);',
    replace: 'const scoredAt = now;',
    grep: 'the income figures and tape_generated_at stay as they were',
  },
  {
    id: 'overlay-replay-not-flagged',
    group: 'tapes',
    rows: ['header:Idempotent-Replayed', 'op:createOverlay 201'],
    defect: 'an overlay replayed by its Idempotency-Key without Idempotent-Replayed: true',
    file: 'src/verifications/verification-lifecycle.ts',
    find: 'if (previous) return { body: previous.body, replayed: true };',
    replace: 'if (previous) return { body: previous.body, replayed: false };',
    grep: 'with an Idempotency-Key: the same request is answered again',
  },
  {
    id: 'overlay-unknown-verification-422',
    group: 'tapes',
    rows: ['op:createOverlay 404 not_found'],
    defect: 'an overlay on an unknown verification answered 422 instead of 404',
    file: 'src/verifications/verification-lifecycle.ts',
    find: "      if (!record) throw new DomainError('not_found', `No verification ${verificationId}.`);\n      if (record.status !== 'completed') {",
    replace: "      if (!record) throw new DomainError('refused', `No verification ${verificationId}.`);\n      if (record.status !== 'completed') {",
    grep: 'an unknown verification, and another lender',
  },
  {
    id: 'benchmark-404-without-status',
    group: 'tapes',
    rows: ['op:getBenchmark 404 not_found'],
    defect: "the benchmark's 404 for a verification not completed no longer names its status",
    file: 'src/benchmarks/peer-benchmark.ts',
    find: 'is ${found.status}; its benchmark exists once it is completed.`);',
    replace: 'has no benchmark.`);',
    grep: 'an unknown verification, or one that is not completed: 404 not_found',
  },
  // ---- webhooks: management, the test event, delivery headers, the timeout, replays
  {
    id: 'endpoint-limit-21',
    group: 'webhooks',
    rows: ['limit:webhook endpoints per lender', 'op:createWebhook 422 unprocessable'],
    defect: 'a lender may register 21 webhook endpoints instead of 20 (P14)',
    file: 'src/webhooks/endpoints.ts',
    find: 'export const MAX_ENDPOINTS_PER_LENDER = 20;',
    replace: 'export const MAX_ENDPOINTS_PER_LENDER = 21;',
    grep: 'P14: at most',
  },
  {
    id: 'webhook-unknown-cursor-empty-page',
    group: 'webhooks',
    rows: ['op:listWebhooks 400 validation_error'],
    defect: "GET /webhooks with a cursor not of the lender's endpoints answers an empty page instead of 400",
    file: 'src/webhooks/endpoints.ts',
    find: "    if (!cursor) throw new DomainError('invalid', `starting_after: no webhook endpoint ${query.starting_after}`, 'query.starting_after');",
    replace: '    if (!cursor) return { data: [], has_more: false };',
    grep: 'GET /webhooks pages with limit',
  },
  {
    id: 'delete-unknown-webhook-204',
    group: 'webhooks',
    rows: ['op:deleteWebhook 404 not_found'],
    defect: 'DELETE of an unknown (or already deleted) webhook endpoint answers 204 instead of 404',
    file: 'src/webhooks/endpoints.ts',
    find: "  if (!(await deps.webhooks.deleteEndpoint(lenderId, webhookId, deps.now().toISOString()))) {\n    throw new DomainError('not_found', `No webhook endpoint ${webhookId}.`);\n  }",
    replace: '  await deps.webhooks.deleteEndpoint(lenderId, webhookId, deps.now().toISOString());',
    grep: 'register, list and delete webhook endpoints',
  },
  {
    id: 'test-event-500-succeeded',
    group: 'webhooks',
    rows: ['op:sendWebhookTest 200'],
    defect: 'a test event answered 500 by the receiver reported as succeeded',
    file: 'src/webhooks/endpoints.ts',
    find: '    succeeded: statusCode !== null && statusCode >= 200 && statusCode < 300,',
    replace: '    succeeded: statusCode !== null,',
    grep: 'test to a receiver answering 500',
  },
  {
    id: 'test-event-wrong-event-header',
    group: 'webhooks',
    rows: ['event:webhook.test', 'header:X-Service-Event'],
    defect: 'a test event sent with X-Service-Event: verification.completed instead of webhook.test',
    file: 'src/webhooks/endpoints.ts',
    find: "deps.post(endpoint, JSON.stringify(event), 'webhook.test', deliveryId, now)",
    replace: "deps.post(endpoint, JSON.stringify(event), 'verification.completed', deliveryId, now)",
    grep: 'test: 200 with the receiver answer',
  },
  {
    id: 'delivery-without-event-header',
    group: 'webhooks',
    rows: ['header:X-Service-Event'],
    defect: 'deliveries sent without X-Service-Event',
    file: 'src/webhooks/delivery-worker.ts',
    find: "          'x-service-event': eventName,\n",
    replace: '',
    grep: 'each endpoint receives exactly the events it subscribed to',
  },
  {
    id: 'delivery-id-per-attempt',
    group: 'webhooks',
    rows: ['header:X-Service-Delivery', 'delivery:retry'],
    defect: 'each attempt of a delivery sent under a new X-Service-Delivery (a retry looks like a new delivery)',
    file: 'src/webhooks/delivery-worker.ts',
    find: "          'x-service-delivery': deliveryId,",
    replace: "          'x-service-delivery': randomUUID(),",
    grep: '500 then 200: two requests with the same X-Service-Delivery',
  },
  {
    id: 'delivery-not-json',
    group: 'webhooks',
    rows: ['delivery:acknowledgement'],
    defect: 'deliveries sent as text/plain instead of application/json',
    file: 'src/webhooks/delivery-worker.ts',
    find: "          'content-type': 'application/json',",
    replace: "          'content-type': 'text/plain',",
    grep: 'each endpoint receives exactly the events it subscribed to',
  },
  {
    id: 'receiver-timeout-tripled',
    group: 'webhooks',
    rows: ['limit:webhook receiver timeout'],
    defect: 'a receiver is waited for three times WEBHOOK_TIMEOUT_MS before the attempt fails',
    file: 'src/webhooks/delivery-worker.ts',
    find: 'signal: AbortSignal.timeout(this.options.timeoutMs),',
    replace: 'signal: AbortSignal.timeout(this.options.timeoutMs * 3),',
    grep: 'a receiver slower than WEBHOOK_TIMEOUT_MS',
  },
  {
    id: 'retry-offsets-from-last-attempt',
    group: 'webhooks',
    rows: ['delivery:retry'],
    defect: 'retry offsets counted from the previous attempt instead of the first (D14): later attempts late',
    file: 'src/webhooks/delivery-worker.ts',
    find: 'new Date(firstAttemptAt).getTime() + nextOffset * 1000',
    replace: 'attemptedAt.getTime() + nextOffset * 1000',
    grep: 'always 500: one attempt per schedule entry',
  },
  {
    id: 'last-attempt-left-pending',
    group: 'webhooks',
    rows: ['delivery:failed and replayed'],
    defect: 'after its last attempt a delivery stays pending instead of failed',
    file: 'src/webhooks/delivery-worker.ts',
    find: "? { status: 'failed' as const, firstAttemptAt, nextAttemptAt: null }",
    replace: "? { status: 'pending' as const, firstAttemptAt, nextAttemptAt: null }",
    grep: 'always 500: one attempt per schedule entry',
  },
  {
    id: 'replay-of-pending-accepted',
    group: 'webhooks',
    rows: ['op:replayWebhookDelivery 422 unprocessable'],
    defect: 'a delivery still being retried can be replayed (only one never attempted is refused)',
    file: 'src/webhooks/deliveries.ts',
    find: "  if (original.status === 'pending') {",
    replace: "  if (original.status === 'pending' && original.attempts.length === 0) {",
    grep: 'a delivery still being attempted cannot be replayed',
  },
  {
    id: 'replay-without-replay-of',
    group: 'webhooks',
    rows: ['op:replayWebhookDelivery 202', 'delivery:failed and replayed'],
    defect: 'a replay does not say which delivery it replays (replay_of null)',
    file: 'src/webhooks/deliveries.ts',
    find: '    replayOf: original.id,',
    replace: '    replayOf: null,',
    grep: 'a delivered event can be replayed too',
  },
  {
    id: 'replay-unknown-delivery-422',
    group: 'webhooks',
    rows: ['op:replayWebhookDelivery 404 not_found'],
    defect: 'a replay of an unknown delivery id answered 422 instead of 404',
    file: 'src/webhooks/deliveries.ts',
    find: "  if (!original) throw new DomainError('not_found',",
    replace: "  if (!original) throw new DomainError('refused',",
    grep: 'an unknown delivery id, or one of another endpoint',
  },
  {
    id: 'signatures-joined-without-comma',
    group: 'webhooks',
    rows: ['header:X-Service-Signature', 'op:rotateWebhookSecret 200'],
    defect: "during a rotation's overlap the two signatures are separated by a space instead of a comma",
    file: 'src/webhooks/verify-signature.ts',
    find: "return secrets.map((secret) => signWebhookBody(rawBody, secret)).join(', ');",
    replace: "return secrets.map((secret) => signWebhookBody(rawBody, secret)).join(' ');",
    grep: 'during the overlap a delivery carries both signatures',
  },
  // ---- platform: authentication, data-protection requests
  {
    id: 'bearer-takes-first-of-two-tokens',
    group: 'platform',
    rows: ['header:Authorization'],
    defect: 'Authorization: Bearer with two tokens accepted with the first one',
    file: 'src/accounts/http/authenticate.ts',
    find: 'const match = /^Bearer +(\\S+)$/i.exec(header.trim());',
    replace: 'const match = /^Bearer +(\\S+)/i.exec(header.trim());',
    grep: 'refuses Bearer with two tokens',
  },
  {
    id: 'gdpr-unknown-creator-empty-report',
    group: 'platform',
    rows: ['op:gdprAccess 404 not_found', 'op:gdprExport 404 not_found'],
    defect: 'an access or export request for a creator with no data answers an empty report instead of 404',
    file: 'src/gdpr/data-subject-requests.ts',
    find: '  if (found.size === 0) throw',
    replace: '  if (found.size < 0) throw',
    grep: 'for a creator with no data: 404 not_found',
  },
  {
    id: 'gdpr-closed-session-shown-expired',
    group: 'platform',
    rows: ['op:gdprAccess 200'],
    defect: "the access report calls a completed verification's consent session expired instead of closed",
    file: 'src/gdpr/data-subject-requests.ts',
    find: "state: open ? 'open' : expired ? 'expired' : 'closed'",
    replace: "state: open ? 'open' : 'expired'",
    grep: 'a completed sandbox verification: its tape and its event are in the report',
  },
  {
    id: 'gdpr-report-omits-tapes',
    group: 'platform',
    rows: ['op:gdprAccess 200', 'op:gdprExport 200'],
    defect: "the access report and export leave out the creator's tapes",
    file: 'src/gdpr/data-subject-requests.ts',
    find: '      tapes: held.tapes,',
    replace: '      tapes: [],',
    grep: 'a completed sandbox verification: its tape and its event are in the report',
  },
  {
    id: 'gdpr-report-omits-overlays',
    group: 'platform',
    rows: ['op:gdprAccess 200', 'op:gdprExport 200'],
    defect: "the access report and export leave out the overlays attached to the creator's tapes",
    file: 'src/gdpr/data-subject-requests.ts',
    find: '      overlays: held.overlays.map((overlay) => ({ ...overlay, verification_id: verification.id })),',
    replace: '      overlays: [],',
    grep: 'erase a completed creator',
  },
  {
    id: 'gdpr-report-omits-events',
    group: 'platform',
    rows: ['op:gdprAccess 200', 'op:gdprExport 200'],
    defect: "the access report and export leave out the creator's webhook events",
    file: 'src/gdpr/data-subject-requests.ts',
    find: '      webhook_events: held.events.map((e) => ({',
    replace: '      webhook_events: held.events.slice(0, 0).map((e) => ({',
    grep: 'a completed sandbox verification: its tape and its event are in the report',
  },
  {
    id: 'gdpr-export-format-changed',
    group: 'platform',
    rows: ['op:gdprExport 200'],
    defect: 'the export carries another export_format than creator-income-export/1',
    file: 'src/gdpr/data-subject-requests.ts',
    find: "export const EXPORT_FORMAT = 'creator-income-export/1';",
    replace: "export const EXPORT_FORMAT = 'creator-income-export/2';",
    grep: 'export: the same content as a download',
  },
  {
    id: 'gdpr-receipt-miscounts-tapes',
    group: 'platform',
    rows: ['op:gdprErase 200'],
    defect: 'the erasure receipt reports 0 tapes erased (a misspelt count name)',
    file: 'src/gdpr/data-subject-requests.ts',
    find: "      tapes: count('tapes'),",
    replace: "      tapes: count('tape'),",
    grep: 'erase a completed creator',
  },
  {
    id: 'return-url-origin-unchecked',
    group: 'platform',
    rows: ['op:createVerification 400 validation_error'],
    defect: "a return_url is taken whatever its origin: an open redirect on the creator's pages",
    file: 'src/accounts/return-origins.ts',
    find: '  if (!origins.includes(url.origin)) {',
    replace: '  if (origins.length < 0) {',
    grep: 'whose origin the lender did not register',
  },
  {
    id: 'return-url-credentials-taken',
    group: 'platform',
    rows: ['op:createVerification 400 validation_error'],
    defect: 'a return_url carrying a user name and password is taken (its origin is a registered one)',
    file: 'src/accounts/return-origins.ts',
    find: "  if (url.username !== '' || url.password !== '') return 'must not carry a user name or password';",
    replace: '',
    grep: 'plain http to a public host',
  },
  {
    id: 'return-url-outcome-fixed',
    group: 'platform',
    rows: ['op:createVerification 201'],
    defect: "the link back to the lender's app always says outcome=completed",
    file: 'src/accounts/return-origins.ts',
    find: "  url.searchParams.set('outcome', outcome);",
    replace: "  url.searchParams.set('outcome', 'completed');",
    grep: 'links back with outcome=cancelled',
  },
  {
    id: 'return-url-not-shown',
    group: 'platform',
    rows: ['op:createVerification 201'],
    defect: 'the verification resource leaves out the return_url it was created with',
    file: 'src/verifications/verification-rows-repository.ts',
    find: '  if (record.returnUrl !== null) resource.return_url = record.returnUrl;',
    replace: '',
    grep: 'the resource shows the return_url',
  },
  {
    id: 'obligor-reference-email-taken',
    group: 'platform',
    rows: ['op:createVerification 400 validation_error'],
    defect: "an email address is taken as an obligor_reference: personal data on the creator's pages and in lists",
    file: 'src/verifications/obligor-reference.ts',
    find: "  if (EMAIL.test(reference)) return 'looks like an email address; use your own id for the creator, never personal data';",
    replace: '',
    grep: 'email address as obligor_reference',
  },
  {
    id: 'gdpr-receipt-miscounts-overlays',
    group: 'platform',
    rows: ['op:gdprErase 200'],
    defect: 'the erasure receipt reports 0 overlays erased (a misspelt count name)',
    file: 'src/gdpr/data-subject-requests.ts',
    find: "      overlays: count('overlays'),",
    replace: "      overlays: count('overlay'),",
    grep: 'erase a completed creator',
  },
  {
    id: 'disabled-endpoint-still-subscribed',
    group: 'webhooks',
    rows: ['op:updateWebhook 200'],
    defect: 'a disabled endpoint still gets a delivery for each event recorded while it is disabled (P29), sent once it is enabled',
    file: 'src/webhooks/webhooks-repository.ts',
    find: 'rows.map(toEndpoint).filter((endpoint) => endpoint.disabledAt === null && endpoint.events.includes(eventName));',
    replace: 'rows.map(toEndpoint).filter((endpoint) => endpoint.events.includes(eventName));',
    grep: 'a disabled endpoint gets nothing for an event meanwhile',
  },
  {
    id: 'held-deliveries-never-resumed',
    group: 'webhooks',
    rows: ['op:updateWebhook 200', 'delivery:retry'],
    defect: 'enabling an endpoint again leaves the deliveries held while it was disabled unsent for good (P29)',
    file: 'src/webhooks/webhooks-repository.ts',
    find: "      if (change.enabled === true) await pending.whereNull('next_attempt_at').update({ next_attempt_at: at });\n",
    replace: '',
    grep: 'a delivery pending when its endpoint is disabled is held',
  },
  {
    id: 'update-other-lenders-endpoint',
    group: 'webhooks',
    rows: ['op:updateWebhook 404 not_found'],
    defect: "PATCH /webhooks/{id} changes another lender's endpoint: the tenant check left out of the update",
    file: 'src/webhooks/webhooks-repository.ts',
    find: "      const updated = await trx('webhook_endpoints')\n        .where({ id: webhookId, lender_id: lenderId })",
    replace: "      const updated = await trx('webhook_endpoints')\n        .where({ id: webhookId })",
    grep: "another lender's key: 404 not_found as for an id never issued",
  },
  {
    id: 'patch-url-skips-target-guard',
    group: 'webhooks',
    rows: ['op:updateWebhook 400 validation_error'],
    defect: 'a url changed by PATCH is stored without the target guard (D16): an endpoint registered at a public address can be moved to a metadata address',
    file: 'src/webhooks/endpoints.ts',
    find: 'const url = request.url === undefined ? undefined : await checkedUrl(deps, request.url);',
    replace: 'const url = request.url;',
    grep: 'the target guard applies to a new url as at registration',
  },
  {
    id: 'monitoring-window-a-month-long',
    group: 'monitoring',
    rows: ['op:createVerification 201', 'event:verification.monitoring_ended'],
    defect: 'the monitoring window is one month longer than the creator agreed to',
    file: 'src/verifications/monitoring.ts',
    find: '    endsAt: schedule.markAt(at, monitoring.months).toISOString(),',
    replace: '    endsAt: schedule.markAt(at, monitoring.months + 1).toISOString(),',
    grep: '/window `months` long|a one-month window/',
  },
  {
    id: 'refresh-daily-limit-gone',
    group: 'monitoring',
    rows: ['op:refreshVerification 429 rate_limited'],
    defect: "a lender can refresh on demand as often as it likes, reading the creator's income again and again",
    file: 'src/verifications/monitoring.ts',
    find: 'export const DEMANDED_REFRESH_SPACING_MS = 24 * 60 * 60 * 1000;',
    replace: 'export const DEMANDED_REFRESH_SPACING_MS = 0;',
    grep: 'one on demand a day',
  },
  {
    id: 'refresh-waiting-not-refused',
    group: 'monitoring',
    rows: ['op:refreshVerification 409 duplicate_request'],
    defect: 'a second refresh on demand is queued while the first still waits',
    file: 'src/verifications/verification-lifecycle.ts',
    find: '      if (monitoring.refreshRequestedAt) {',
    replace: '      if (false) {',
    grep: 'a second one while the first waits',
  },
  {
    id: 'refresh-before-first-tape',
    group: 'monitoring',
    rows: ['op:refreshVerification 422 unprocessable'],
    defect: 'a refresh is accepted for monitoring still waiting for its first tape',
    file: 'src/verifications/verification-lifecycle.ts',
    find: "      if (!monitoring || monitoring.state !== 'active') {",
    replace: "      if (!monitoring || monitoring.state === 'ended') {",
    grep: 'monitoring not active',
  },
  {
    id: 'stop-announced-every-time',
    group: 'monitoring',
    rows: ['op:stopMonitoring 200', 'event:verification.monitoring_ended'],
    defect: 'stopping monitoring that already ended sends verification.monitoring_ended again',
    file: 'src/verifications/verification-lifecycle.ts',
    find: "      if (record.monitoring.state !== 'ended') {",
    replace: '      if (true) {',
    grep: 'ended with stopped_by_lender',
  },
  {
    id: 'stop-reason-wrong',
    group: 'monitoring',
    rows: ['op:stopMonitoring 200', 'event:verification.monitoring_ended'],
    defect: "a lender's stop is reported as a cancellation",
    file: 'src/verifications/verification-lifecycle.ts',
    find: "        await endMonitoring(store, { ...record, monitoring: record.monitoring }, 'stopped_by_lender', now, this.monitoring);",
    replace: "        await endMonitoring(store, { ...record, monitoring: record.monitoring }, 'cancelled_by_lender', now, this.monitoring);",
    grep: 'ended with stopped_by_lender',
  },
  {
    id: 'refresh-forgets-earlier-tape',
    group: 'monitoring',
    rows: ['op:listVerificationTapes 200', 'op:refreshVerification 202'],
    defect: 'a refresh overwrites the latest tape: the earlier one is gone from the history',
    file: 'src/verifications/verification-lifecycle.ts',
    find: '  await store.retireTape(record.id);\n',
    replace: '',
    grep: 'a new latest tape, the history',
  },
  {
    id: 'tape-changes-swapped',
    group: 'monitoring',
    rows: ['event:tape.updated'],
    defect: "tape.updated's changes give the maximum advance after as before and before as after",
    file: 'src/verifications/monitoring.ts',
    find: '    max_advance_eur: { before: before.eligibility.max_advance_eur, after: after.eligibility.max_advance_eur },',
    replace: '    max_advance_eur: { before: after.eligibility.max_advance_eur, after: before.eligibility.max_advance_eur },',
    grep: 'tape.updated saying what changed',
  },
  {
    id: 'refresh-failure-unannounced',
    group: 'monitoring',
    rows: ['event:verification.refresh_failed'],
    defect: 'a refresh that failed after its retries is counted but never announced',
    file: 'src/verifications/verification-lifecycle.ts',
    find: '        failedForGood = true;\n',
    replace: '',
    grep: 'test-refresh-fail-',
  },
  {
    id: 'refused-grant-keeps-monitoring',
    group: 'monitoring',
    rows: ['event:verification.monitoring_ended'],
    defect: 'a refused grant leaves monitoring active, to be tried again every month',
    file: 'src/verifications/verification-lifecycle.ts',
    find: "        return endMonitoring(store, monitored, 'grant_revoked', at, this.monitoring);",
    replace: '        return;',
    grep: 'test-refresh-revoke-',
  },
  {
    id: 'window-never-ends',
    group: 'monitoring',
    rows: ['event:verification.monitoring_ended'],
    defect: 'monitoring stays active after its window: nothing more is scheduled and nothing says it ended',
    file: 'src/verifications/verification-lifecycle.ts',
    find: "      if (lastMark) await endMonitoring(store, monitored, 'window_over', at, this.monitoring, next);",
    replace: '',
    grep: 'a one-month window',
  },
  {
    id: 'cancel-ends-as-not-completed',
    group: 'monitoring',
    rows: ['op:cancelVerification 200', 'event:verification.monitoring_ended'],
    defect: 'cancelling a monitored verification ends its monitoring with the wrong reason',
    file: 'src/verifications/verification-lifecycle.ts',
    find: "trigger === 'cancelled_by_lender' ? 'cancelled_by_lender' : 'not_completed'",
    replace: "'not_completed'",
    grep: 'cancelling a monitored verification',
  },
  {
    id: 'tape-history-cursor-repeats',
    group: 'monitoring',
    rows: ['op:listVerificationTapes 200'],
    defect: "the next page of the tape history starts with the cursor's tape again",
    file: 'src/verifications/verification-lifecycle.ts',
    find: '      start = at + 1;',
    replace: '      start = at;',
    grep: 'the history pages by tape_id',
  },
  {
    id: 'monthly-mark-skipped',
    group: 'monitoring',
    rows: ['event:tape.updated'],
    defect: 'after a monthly refresh the next one is scheduled two months on, skipping a month the creator agreed to',
    file: 'src/verifications/verification-lifecycle.ts',
    find: '        next.nextRefreshAt = schedule.markAt(monitoring.startsAt!, payload.mark + 1).toISOString();',
    replace: '        next.nextRefreshAt = schedule.markAt(monitoring.startsAt!, payload.mark + 2).toISOString();',
    grep: 'one refresh at each mark',
  },
  {
    id: 'stop-form-unchecked',
    group: 'monitoring',
    rows: ['event:verification.monitoring_ended'],
    defect: "the creator's stop form is taken without the confirmation page's cookie: a forged post ends monitoring",
    file: 'src/consent/stop-sharing.ts',
    find: "  if (!browserSecret || typeof submitted !== 'string') return false;",
    replace: '  return true;',
    grep: 'the creator stops sharing',
  },
  {
    id: 'creator-stop-as-lender',
    group: 'monitoring',
    rows: ['event:verification.monitoring_ended'],
    defect: "the creator's stop is reported as the lender's",
    file: 'src/verifications/verification-lifecycle.ts',
    find: "'stopped_by_creator', now, this.monitoring)",
    replace: "'stopped_by_lender', now, this.monitoring)",
    grep: 'the creator stops sharing',
  },
];

/** The service's variables, none inherited from the calling shell (as the suite's own harness does). */
const SERVICE_ENV_NAMES = [...HARNESS_SERVICE_ENV_NAMES, 'TEST_POSTGRES_URL'];
const SANDBOX_DELAY_MS = '1000';
// Offsets of 2 and 3 s, not 1 and 2: a retry timed from the previous attempt instead of the first
// (retry-offsets-from-last-attempt) then comes 2 s late, past the suite's stated 1.5 s tolerance.
const RETRY_SCHEDULE = '0,2,3';
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

/** The matrix rows each mutant names, as conformance/mutant-rows.ts lists them: row id → mutant ids, in list order. */
export function mutantsByRow(mutants: Mutant[]): Record<string, string[]> {
  const byRow: Record<string, string[]> = {};
  for (const mutant of mutants) for (const row of mutant.rows) (byRow[row] ??= []).push(mutant.id);
  return Object.fromEntries(Object.entries(byRow).sort(([a], [b]) => a.localeCompare(b)));
}

export const MUTANT_ROWS_FILE = 'conformance/mutant-rows.ts';

/** The text of conformance/mutant-rows.ts for this list (formatted as prettier leaves it). */
export async function mutantRowsSource(mutants: Mutant[]): Promise<string> {
  const { format, resolveConfig } = await import('prettier');
  const path = join(ROOT, MUTANT_ROWS_FILE);
  const text = [
    '// Generated by `npm run conformance:mutants -- --write-rows` from scripts/conformance-mutants.ts; do not edit.',
    '// scripts/conformance-mutants.test.ts fails when it no longer matches that list.',
    '',
    '/** Per row of the matrix, the conformance mutants (planted defects) that break its rule and that its tests kill. */',
    `export const MUTANTS_BY_ROW: Readonly<Record<string, readonly string[]>> = ${JSON.stringify(mutantsByRow(mutants), null, 2)};`,
    '',
  ].join('\n');
  return format(text, { ...(await resolveConfig(path)), filepath: path });
}

async function writeMutantRows(): Promise<void> {
  writeFileSync(join(ROOT, MUTANT_ROWS_FILE), await mutantRowsSource(MUTANTS));
}

/** Every mutant names at least one row, and only rows the matrix has (and none it marks not testable). */
export async function checkMutantRows(mutants: Mutant[]): Promise<string[]> {
  const rows = new Map((await matrixRows()).map((row) => [row.id, row]));
  const problems: string[] = [];
  for (const mutant of mutants) {
    if (mutant.rows.length === 0) problems.push(`${mutant.id}: names no row of the matrix`);
    for (const id of mutant.rows) {
      const row = rows.get(id);
      if (!row) problems.push(`${mutant.id}: [${id}] is no row of the matrix`);
      else if (row.notTestable) problems.push(`${mutant.id}: [${id}] is a row the matrix marks not testable`);
    }
  }
  return problems;
}

/** How many of these mutants each row of the matrix has, and which testable rows have none. */
async function perRowCounts(mutants: Mutant[]): Promise<string> {
  const byRow = mutantsByRow(mutants);
  const testable = (await matrixRows()).filter((row) => !row.notTestable);
  const lines = testable.filter((row) => byRow[row.id]).map((row) => `  ${String(byRow[row.id]!.length).padStart(3)}  ${row.id}`);
  const none = testable.filter((row) => !byRow[row.id]).length;
  return `mutants per matrix row (${lines.length} of ${testable.length} testable rows have at least one; ${none} have none):\n${lines.join('\n')}`;
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

/** The origin registered for lender A: where its creations' `return_url`s may lead. */
const RETURN_ORIGIN = 'https://lender-app.mutants.example';

/** Accounts and keys made once with the operator CLI (D23) in a template database, copied for every server. */
async function makeTemplateDatabase(copy: string, file: string): Promise<SuiteKeys> {
  const env = baseEnv({ DATABASE_URL: `sqlite:${file}`, SERVICE_MODE: 'sandbox', LOG_LEVEL: 'warn' });
  const admin = async <T>(...args: string[]): Promise<T> => {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', 'src/admin/cli.ts', ...args, '--json'], { cwd: copy, env, timeout: 60_000 });
    return JSON.parse(stdout) as T;
  };
  return makeSuiteKeys(admin, { namePrefix: 'Mutants', returnOrigin: RETURN_ORIGIN });
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
    SANDBOX_REFRESH_INTERVAL_MS: '4000',
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
async function runSuite(baseUrl: string, keys: SuiteKeys, caDir: string, grep: string, junit: string): Promise<{ code: number; output: string }> {
  const args = [
    '--import',
    'tsx',
    join(ROOT, 'conformance', 'cli.ts'),
    '--base-url',
    baseUrl,
    ...keyOptions(keys),
    '--return-origin',
    RETURN_ORIGIN,
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
  const valueOf = (option: string) => (argv.includes(option) ? (argv[argv.indexOf(option) + 1] ?? '') : undefined);
  const only = valueOf('--only') === undefined ? undefined : new Set(valueOf('--only')!.split(','));
  const groups = valueOf('--group') === undefined ? undefined : new Set(valueOf('--group')!.split(','));
  const keep = argv.includes('--keep');
  if (argv.includes('--write-rows')) {
    await writeMutantRows();
    console.log(`wrote ${MUTANT_ROWS_FILE}`);
    return 0;
  }
  if (groups && [...groups].some((group) => !(MUTANT_GROUPS as readonly string[]).includes(group))) {
    console.error(`unknown group; known: ${MUTANT_GROUPS.join(', ')}`);
    return 2;
  }
  const mutants = MUTANTS.filter((m) => (!only || only.has(m.id)) && (!groups || groups.has(m.group)));
  if (only && mutants.length !== only.size) {
    console.error(`unknown mutant ids (or not in --group); known: ${MUTANTS.map((m) => m.id).join(', ')}`);
    return 2;
  }
  const problems = [...checkMutants(MUTANTS), ...(await checkMutantRows(MUTANTS))];
  if (problems.length > 0) {
    console.error(`The mutant list no longer matches the code (fix scripts/conformance-mutants.ts):\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    return 2;
  }
  console.log(await perRowCounts(mutants));

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
    const byGroup = MUTANT_GROUPS.map((group) => {
      const of = outcomes.filter((o) => o.mutant.group === group);
      return of.length === 0
        ? null
        : `${group} ${of.filter((o) => o.result === 'killed').length}/${of.length} in ${of.reduce((t, o) => t + o.seconds, 0).toFixed(0)} s`;
    }).filter(Boolean);
    console.log(`\nmutation score: ${killed}/${outcomes.length} killed in ${((Date.now() - started) / 1000).toFixed(0)} s (${byGroup.join('; ')})`);
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
