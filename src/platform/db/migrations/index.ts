import type { Knex } from 'knex';
import * as accounts from './20261121_001_accounts.ts';
import * as verifications from './20261121_002_verifications.ts';
import * as lifecycle from './20261121_003_lifecycle.ts';
import * as rateLimits from './20261121_004_rate_limits.ts';
import * as webhooks from './20261121_005_webhooks.ts';
import * as platformOauth from './20261121_006_platform_oauth.ts';
import * as webhookEvents from './20261123_007_webhook_events.ts';
import * as dataProtection from './20261123_008_data_protection.ts';
import * as overlays from './20261123_009_overlays.ts';
import * as benchmarks from './20261123_010_benchmarks.ts';
import * as sealedConsentLinks from './20261123_011_sealed_consent_links.ts';
import * as verificationList from './20261124_012_verification_list.ts';
import * as webhookSecretRotation from './20261124_013_webhook_secret_rotation.ts';
import * as tapeSigningKeys from './20261125_014_tape_signing_keys.ts';
import * as lenderDeactivation from './20261125_015_lender_deactivation.ts';
import * as dashboardUsers from './20261125_016_dashboard_users.ts';
import * as unloggedRateLimits from './20261126_017_unlogged_rate_limits.ts';
import * as benchmarkCounterShards from './20261127_018_benchmark_counter_shards.ts';
import * as deliveryIndexes from './20261128_019_delivery_indexes.ts';
import * as oauthBrowserBinding from './20261128_020_oauth_browser_binding.ts';
import * as dashboardDeactivation from './20261128_021_dashboard_deactivation.ts';
import * as benchmarkLenderBuckets from './20261128_022_benchmark_lender_buckets.ts';
import * as eventFeed from './20261128_023_event_feed.ts';
import * as webhookDisabling from './20261128_024_webhook_disabling.ts';
import * as returnUrls from './20261128_025_return_urls.ts';
import * as monitoring from './20261128_026_monitoring.ts';

type Migration = { up(knex: Knex): Promise<void>; down(knex: Knex): Promise<void> };

/** Migrations in order. Listed here rather than read from a folder so they work the same under tsx and bundlers. */
const ordered: Array<[string, Migration]> = [
  ['20261121_001_accounts', accounts],
  ['20261121_002_verifications', verifications],
  ['20261121_003_lifecycle', lifecycle],
  ['20261121_004_rate_limits', rateLimits],
  ['20261121_005_webhooks', webhooks],
  ['20261121_006_platform_oauth', platformOauth],
  ['20261123_007_webhook_events', webhookEvents],
  ['20261123_008_data_protection', dataProtection],
  ['20261123_009_overlays', overlays],
  ['20261123_010_benchmarks', benchmarks],
  ['20261123_011_sealed_consent_links', sealedConsentLinks],
  ['20261124_012_verification_list', verificationList],
  ['20261124_013_webhook_secret_rotation', webhookSecretRotation],
  ['20261125_014_tape_signing_keys', tapeSigningKeys],
  ['20261125_015_lender_deactivation', lenderDeactivation],
  ['20261125_016_dashboard_users', dashboardUsers],
  ['20261126_017_unlogged_rate_limits', unloggedRateLimits],
  ['20261127_018_benchmark_counter_shards', benchmarkCounterShards],
  ['20261128_019_delivery_indexes', deliveryIndexes],
  ['20261128_020_oauth_browser_binding', oauthBrowserBinding],
  ['20261128_021_dashboard_deactivation', dashboardDeactivation],
  ['20261128_022_benchmark_lender_buckets', benchmarkLenderBuckets],
  ['20261128_023_event_feed', eventFeed],
  ['20261128_024_webhook_disabling', webhookDisabling],
  ['20261128_025_return_urls', returnUrls],
  ['20261128_026_monitoring', monitoring],
];

export const migrations: Knex.MigrationSource<[string, Migration]> = {
  async getMigrations() {
    return ordered;
  },
  getMigrationName([name]) {
    return name;
  },
  async getMigration([, migration]) {
    return migration;
  },
};
