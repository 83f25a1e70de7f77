import type { RequestListener } from 'node:http';
import type { Express } from 'express';
import { AccountsRepository } from './accounts/accounts-repository.ts';
import { adminContext, resolveEncryptionKey } from './admin/admin-context.ts';
import { DEMO_LENDER_ID, deploymentModeOf, ensureDemoAccount } from './accounts/lender-admin.ts';
import { ConfigError, TRUST_PROXY_TRUE_REFUSED, type Config } from './platform/config.ts';
import { systemClock, type Clock } from './platform/clock.ts';
import { openDatabase, type Database } from './platform/db/database.ts';
import { listOperations, loadApiDocument } from './platform/http/api-document.ts';
import { createHttpApp } from './platform/http/app.ts';
import { RateLimits } from './platform/http/rate-limit.ts';
import { JobQueue } from './platform/jobs/job-queue.ts';
import { JobRunner } from './platform/jobs/job-runner.ts';
import type { Logger } from './platform/logger.ts';
import { databaseGauges } from './platform/metrics/metrics.ts';
import type { Registry } from 'prom-client';
import { metricsEndpoint } from './platform/metrics/metrics-endpoint.ts';
import { requestMetrics } from './platform/metrics/request-metrics.ts';
import { EventOutbox } from './platform/events/outbox.ts';
import { createHandlers, PENDING_OPERATIONS, type HandlerDeps } from './operations.ts';
import { authenticate } from './accounts/http/authenticate.ts';
import { protectEmail, type ConsentDeps } from './consent/consent-flow.ts';
import { grantRevocationJobs, type GrantRevocationDeps } from './consent/grant-revocation.ts';
import type { DataSubjectDeps } from './gdpr/data-subject-requests.ts';
import { GdprRepository } from './gdpr/gdpr-repository.ts';
import { StorageRepository } from './gdpr/storage-repository.ts';
import { BenchmarksRepository } from './benchmarks/benchmarks-repository.ts';
import { countInCohort, countUncountedTapes, loadReferencePopulation } from './benchmarks/peer-benchmark.ts';
import { recordSandboxAccounts } from './consent/sandbox-accounts.ts';
import { ConsentRepository } from './consent/consent-repository.ts';
import { consentRoutes } from './consent/http/consent-routes.ts';
import { DashboardRepository } from './dashboard/dashboard-repository.ts';
import { ensureDemoDashboardUser, type DashboardUsersDeps } from './dashboard/dashboard-users.ts';
import { dashboardRoutes } from './dashboard/http/dashboard-routes.ts';
import { providerIncomeSource } from './consent/provider-income.ts';
import { configuredProviders } from './consent/providers.ts';
import { sandboxIncomeSource } from './verifications/sandbox.ts';
import { VerificationLifecycle } from './verifications/verification-lifecycle.ts';
import { VerificationsRepository, type ConsentLinks } from './verifications/verifications-repository.ts';
import { encryptSecret, keptDecryption } from './platform/crypto.ts';
import { deliverEventsToWebhooks } from './webhooks/deliveries.ts';
import { DeliveryWorker } from './webhooks/delivery-worker.ts';
import { createGuardedDispatcher } from './webhooks/target-guard.ts';
import { WebhooksRepository } from './webhooks/webhooks-repository.ts';
import { SigningKeysRepository } from './signing/signing-keys-repository.ts';
import { ensureSigningKey, TapeSigner } from './signing/tape-signer.ts';

/** What a production deployment needs to connect each platform. */
const PLATFORM_CREDENTIALS = [
  { platform: 'youtube', variables: ['GOOGLE_CLIENT_ID', 'GOOGLE_CLIENT_SECRET'] },
  { platform: 'stripe', variables: ['STRIPE_CLIENT_ID', 'STRIPE_SECRET_KEY'] },
] as const;

export interface Service {
  app: Express;
  db: Database;
  encryptionKey: Buffer;
  /** Durable jobs; the server polls them, tests call `runDue()` after moving their clock. */
  jobs: JobRunner;
  /** Webhook sender; the server starts it, tests call `runDue()`. */
  deliveries: DeliveryWorker;
  verifications: VerificationsRepository;
  rateLimits: RateLimits;
  /** `GET /metrics` for the metrics listener; null when METRICS_PORT is unset. */
  metrics: RequestListener | null;
  /** What `metrics` serves beside the process's own instruments; null when METRICS_PORT is unset. */
  metricsRegistries: Registry[] | null;
  tapeSigner: TapeSigner;
  /** Production only: platforms without credentials, which creators cannot connect. */
  unavailablePlatforms: ReadonlyArray<{ platform: string; variables: readonly string[] }>;
  close(): Promise<void>;
}

export interface ServiceOptions {
  clock?: Clock;
  /** Extra CA the webhook sender trusts, for tests that cannot set NODE_EXTRA_CA_CERTS before start. */
  webhookCa?: string;
}

/** What every step of the start-up works with. */
interface Start {
  config: Config;
  logger: Logger;
  clock: Clock;
  db: Database;
  now: () => Date;
}

/** The database as this deployment may use it: migrated, its mode checked, its encryption key known. */
interface Storage {
  accounts: AccountsRepository;
  encryptionKey: Buffer;
  dashboardUsers: DashboardUsersDeps;
}

interface Repositories {
  queue: JobQueue;
  webhooks: WebhooksRepository;
  benchmarks: BenchmarksRepository;
  verifications: VerificationsRepository;
  consent: ConsentRepository;
  signingKeys: SigningKeysRepository;
}

/** The use cases the API handlers and the pages call, and the jobs that run them later. */
interface Features {
  lifecycle: VerificationLifecycle;
  consent: ConsentDeps;
  dataSubjects: DataSubjectDeps;
  webhooks: HandlerDeps['webhooks'];
  benchmarks: HandlerDeps['benchmarks'];
  jobs: JobRunner;
  jobKinds: string[];
}

type Providers = ReturnType<typeof configuredProviders>;
type UnavailablePlatforms = Array<(typeof PLATFORM_CREDENTIALS)[number]>;

/**
 * Runs a one-time catch-up (data written before a feature existed) unless a setting says it ran.
 * Each catch-up is safe to run twice, so processes starting together may both run it.
 */
async function once(accounts: AccountsRepository, name: string, catchUp: () => Promise<number>): Promise<void> {
  if (await accounts.readSetting(`catch_up:${name}`)) return;
  await catchUp();
  await accounts.initialiseSetting(`catch_up:${name}`, new Date().toISOString());
}

/** Opens the database, applies migrations and builds the HTTP app; the caller decides where it listens. */
export async function startService(config: Config, logger: Logger, options: ServiceOptions = {}): Promise<Service> {
  const clock = options.clock ?? systemClock;
  const db = openDatabase(config.databaseUrl, { logger, groupCommit: config.databaseGroupCommit });
  const start: Start = { config, logger, clock, db, now: () => clock.now() };
  try {
    const storage = await openStorage(start);
    await seedSandboxDemo(start, storage);
    const outbox = new EventOutbox();
    const repositories = buildRepositories(start, storage.encryptionKey, outbox);
    const deliveries = buildDeliveryWorker(start, repositories.webhooks, storage.encryptionKey, options.webhookCa);
    deliverEventsToWebhooks(outbox, repositories.webhooks, () => deliveries.wake());
    await catchUpOnOlderData(storage, repositories);
    const tapeSigner = await prepareTapeSigner(start, repositories.signingKeys, storage.encryptionKey);
    const providers = configuredProviders(config.providers);
    const unavailablePlatforms = reportUnavailablePlatforms(start, providers);
    warnIfEveryProxyIsTrusted(start);
    const features = buildFeatures(start, storage, repositories, { deliveries, providers, unavailablePlatforms });
    const metricsRegistries = config.metrics ? [gaugesOfTheDatabase(start, repositories, features.jobKinds)] : null;
    const metrics = config.metrics && metricsRegistries ? metricsEndpoint({ registries: metricsRegistries, token: config.metrics.token, logger }) : null;
    const { app, rateLimits } = buildApp(start, storage, features, { tapeSigner, measureRequests: metrics !== null });
    return {
      app,
      db,
      encryptionKey: storage.encryptionKey,
      jobs: features.jobs,
      deliveries,
      verifications: repositories.verifications,
      rateLimits,
      metrics,
      metricsRegistries,
      tapeSigner,
      unavailablePlatforms,
      async close() {
        await features.jobs.stop();
        await deliveries.stop();
        await db.close();
      },
    };
  } catch (error) {
    await db.close();
    throw error;
  }
}

async function openStorage({ config, clock, db }: Start): Promise<Storage> {
  await db.migrate();
  const accounts = new AccountsRepository(db.knex, db.hot);
  const databaseMode = await deploymentModeOf(accounts, config.mode);
  if (databaseMode !== config.mode) {
    // Its keys, its tapes and its creators belong to the other kind of deployment.
    throw new ConfigError(`Invalid configuration: SERVICE_MODE is ${config.mode}, but this database belongs to a ${databaseMode} deployment`);
  }
  const encryptionKey = await resolveEncryptionKey(config, accounts);
  const dashboardUsers = { users: new DashboardRepository(db.knex), accounts, now: () => clock.now() };
  return { accounts, encryptionKey, dashboardUsers };
}

async function seedSandboxDemo({ config, clock }: Start, { accounts, dashboardUsers }: Storage): Promise<void> {
  if (config.mode === 'sandbox' && config.demoApiKey) {
    await ensureDemoAccount(adminContext(config, accounts, clock), config.demoApiKey);
    await ensureDemoDashboardUser(dashboardUsers, DEMO_LENDER_ID);
  }
}

function buildRepositories({ config, db }: Start, encryptionKey: Buffer, outbox: EventOutbox): Repositories {
  const queue = new JobQueue(db.knex, db.dialect);
  const benchmarks = new BenchmarksRepository(db.knex);
  const consent = new ConsentRepository(db.knex, queue);
  // In the sandbox every connection a tape shows gets a synthetic account (P35).
  const tapeListeners = [countInCohort(benchmarks), ...(config.mode === 'sandbox' ? [recordSandboxAccounts(consent, encryptionKey)] : [])];
  const verifications = new VerificationsRepository(
    db.knex,
    { dialect: db.dialect, jobs: queue, outbox, links: sealedConsentLinks(config, encryptionKey), tapeListeners },
    db.reader,
    db.hot,
  );
  return {
    queue,
    webhooks: new WebhooksRepository(db.knex, db.dialect, db.hot),
    benchmarks,
    verifications,
    consent,
    signingKeys: new SigningKeysRepository(db.knex),
  };
}

function sealedConsentLinks(config: Config, encryptionKey: Buffer): ConsentLinks {
  // Polling lenders read the same few sealed links again and again: each is opened once (keyed by
  // the sealed text, which an erased verification no longer has).
  const openLink = keptDecryption(encryptionKey, 10_000);
  return {
    seal: (token) => encryptSecret(encryptionKey, token),
    urlOf: (sealed) => `${config.publicBaseUrl}/consent/${openLink(sealed)}`,
  };
}

function buildDeliveryWorker({ config, logger, clock, db }: Start, webhooks: WebhooksRepository, encryptionKey: Buffer, webhookCa?: string): DeliveryWorker {
  return new DeliveryWorker({
    webhooks,
    encryptionKey,
    scheduleSeconds: config.webhookRetryScheduleSeconds,
    timeoutMs: config.webhookTimeoutMs,
    dispatcher: createGuardedDispatcher({
      allowPrivateTargets: config.webhookAllowPrivateTargets,
      connectTimeoutMs: config.webhookTimeoutMs,
      ...(webhookCa ? { tls: { ca: webhookCa } } : {}),
    }),
    clock,
    logger,
    databaseOutage: db.outage,
  });
}

/** Data stored before this version: converted once, then never scanned for again at start-up. */
async function catchUpOnOlderData({ accounts, encryptionKey }: Storage, { verifications, consent, benchmarks }: Repositories): Promise<void> {
  await once(accounts, 'sealed_consent_links', () => verifications.sealPlainConsentLinks());
  await once(accounts, 'encrypted_account_emails', () => consent.protectPlainEmails((email) => protectEmail(encryptionKey, email)));
  await once(accounts, 'benchmarks_counted', () => countUncountedTapes(benchmarks));
}

async function prepareTapeSigner({ clock }: Start, signingKeys: SigningKeysRepository, encryptionKey: Buffer): Promise<TapeSigner> {
  await ensureSigningKey(signingKeys, encryptionKey, clock.now());
  return new TapeSigner({ keys: signingKeys, encryptionKey, now: () => clock.now() });
}

function reportUnavailablePlatforms({ config, logger }: Start, providers: Providers): UnavailablePlatforms {
  const unavailablePlatforms = config.mode === 'production' ? PLATFORM_CREDENTIALS.filter(({ platform }) => !providers[platform]) : [];
  for (const { platform, variables } of unavailablePlatforms) {
    // Started anyway, so that the other platform and the API keep working; the consent page tells
    // creators this platform cannot be connected instead of failing when they click.
    logger.warn(
      { platform, missing: variables },
      `PRODUCTION WITHOUT ${platform.toUpperCase()} CREDENTIALS: creators cannot connect ${platform}; set ${variables.join(' and ')}`,
    );
  }
  return unavailablePlatforms;
}

function warnIfEveryProxyIsTrusted({ config, logger }: Start): void {
  if (config.trustProxy === true) {
    // Refused in production (config.ts); a sandbox may run behind anything, but says so loudly.
    logger.warn({ trustProxy: true }, `TRUST_PROXY=true TRUSTS ANY CLIENT'S X-Forwarded-For: ${TRUST_PROXY_TRUE_REFUSED}`);
  }
}

function buildFeatures(
  { config, logger, clock, db, now }: Start,
  { accounts, encryptionKey }: Storage,
  { queue, webhooks, benchmarks, verifications, consent: consentRepository }: Repositories,
  { deliveries, providers, unavailablePlatforms }: { deliveries: DeliveryWorker; providers: Providers; unavailablePlatforms: UnavailablePlatforms },
): Features {
  const lifecycle = new VerificationLifecycle({
    verifications,
    config,
    now,
    // One hot statement, outside the creation's transaction: on SQLite a synchronous read on its
    // own connection, where the two reads through the read pool's thread-pool round trips had
    // each creation wait about 9 ms under load (docs/performance.md); on PostgreSQL one round trip.
    scoringProfileOf: async (lenderId) => (await accounts.findScoringProfile(lenderId)) ?? { jurisdiction: 'other', policies: {} },
    incomeSource:
      config.mode === 'production'
        ? providerIncomeSource({ consent: consentRepository, providers, encryptionKey, logger })
        : sandboxIncomeSource(verifications),
    dependentData: [(unit, ids) => webhooks.erase(unit, ids), (unit, ids) => consentRepository.erase(unit, ids), (unit, ids) => benchmarks.erase(unit, ids)],
    unavailablePlatforms: new Set(unavailablePlatforms.map(({ platform }) => platform)),
    // The sandbox holds no grants; a real creator's are revoked when monitoring ends (P33).
    grantsEnded: config.mode === 'production' ? (unit, verificationId) => consentRepository.scheduleGrantsEnd(unit, verificationId, clock.now()) : undefined,
  });
  const registeredLenderName = async (lenderId: string) => (await accounts.findLender(lenderId))?.name ?? null;
  const consent: ConsentDeps = { lifecycle, consent: consentRepository, providers, encryptionKey, logger, now, registeredLenderName };
  const revocation: GrantRevocationDeps = { consent: consentRepository, providers, encryptionKey, logger, now };
  const jobHandlers = { ...lifecycle.jobHandlers(), ...grantRevocationJobs(revocation) };
  return {
    lifecycle,
    consent,
    dataSubjects: {
      lifecycle,
      consent: consentRepository,
      webhooks,
      audit: new GdprRepository(db.knex),
      storage: new StorageRepository(db.knex, db.dialect),
      revocation,
      encryptionKey,
      now,
    },
    webhooks: {
      webhooks,
      encryptionKey,
      allowPrivateTargets: config.webhookAllowPrivateTargets,
      now,
      wakeDeliveries: () => deliveries.wake(),
      post: deliveries.post.bind(deliveries),
    },
    benchmarks: { lifecycle, benchmarks, reference: loadReferencePopulation(), now },
    jobs: new JobRunner(queue, jobHandlers, clock, logger, { leaseMs: config.jobLeaseMs, databaseOutage: db.outage }),
    jobKinds: Object.keys(jobHandlers),
  };
}

function gaugesOfTheDatabase({ logger, clock, db }: Start, { queue, webhooks, verifications }: Repositories, jobKinds: string[]): Registry {
  return databaseGauges(
    {
      jobs: () => queue.stats(clock.now()),
      jobKinds,
      webhooks: () => webhooks.backlog(clock.now()),
      monitoring: () => verifications.monitoringCounts(),
      pool: () => db.poolStats(),
    },
    logger,
  );
}

function buildApp(
  { config, logger, db, now }: Start,
  { accounts, dashboardUsers }: Storage,
  features: Features,
  { tapeSigner, measureRequests }: { tapeSigner: TapeSigner; measureRequests: boolean },
): { app: Express; rateLimits: RateLimits } {
  const handlers = createHandlers({
    lifecycle: features.lifecycle,
    webhooks: features.webhooks,
    benchmarks: features.benchmarks,
    dataSubjects: features.dataSubjects,
    tapeSigner,
    isDatabaseReachable: () => db.isReachable(),
  });
  const rateLimits = new RateLimits(db);
  const apiDocument = loadApiDocument();
  const dashboard = dashboardRoutes({
    users: dashboardUsers,
    lifecycle: features.lifecycle,
    benchmarks: features.benchmarks,
    webhooks: features.webhooks,
    accounts,
    rateLimits,
    mode: config.mode,
    // Secure cookies need https; only a sandbox on the operator's own machine goes without.
    secureCookies: !(config.mode === 'sandbox' && config.publicBaseUrl.startsWith('http:')),
    logger,
  });
  const app = createHttpApp({
    config,
    logger,
    authenticate: authenticate({ accounts, mode: config.mode, limits: rateLimits, now }),
    rateLimits,
    apiDocument,
    handlers,
    pendingOperations: PENDING_OPERATIONS,
    pages: [
      { path: '/consent', router: consentRoutes({ ...features.consent, mode: config.mode, publicBaseUrl: config.publicBaseUrl }) },
      { path: '/dashboard', router: dashboard },
    ],
    ...(measureRequests ? { requestMetrics: requestMetrics(listOperations(apiDocument)) } : {}),
  });
  return { app, rateLimits };
}
