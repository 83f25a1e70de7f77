/**
 * Every table of the schema and every column, by what it holds about creators. A test reads the
 * database's own catalogue after migrating (test/personal-data.test.ts) and fails when a table or
 * column is in none of these lists, so a migration that adds one must say here which it is; the
 * same test checks that docs/data-protection.md names the tables of the first two lists.
 */

/**
 * A creator's data: every row belongs to one verification (`tiedBy` says how), and an erasure
 * deletes every row of the verifications it erases, in one transaction. These are also the tables
 * `admin gdpr compact` rewrites, so that the erased rows' bytes leave their files.
 */
export const ERASED_WITH_THE_CREATOR = {
  verifications: {
    tiedBy: 'id',
    columns: [
      'id',
      'lender_id',
      'obligor_reference',
      'creator_platforms',
      'lender_name',
      'product_type',
      'declared_monthly_obligations_eur',
      'return_url',
      'status',
      'failure_reason',
      'consent_token_hash',
      'consent_url',
      'expires_at',
      'created_at',
      'updated_at',
      'completed_at',
      'tape_schema_version',
      'consent_token_sealed',
      'monitoring_months',
      'monitoring_state',
      'monitoring_end_reason',
      'monitoring_starts_at',
      'monitoring_ends_at',
      'last_refresh_at',
      'next_refresh_at',
      'refresh_requested_at',
      'last_demanded_refresh_at',
      'refreshes',
      'failed_refreshes',
    ],
  },
  verification_transitions: { tiedBy: 'verification_id', columns: ['id', 'verification_id', 'from_status', 'to_status', 'trigger', 'reason', 'at'] },
  events: { tiedBy: 'verification_id', columns: ['sequence', 'id', 'lender_id', 'verification_id', 'name', 'payload', 'occurred_at'] },
  tapes: { tiedBy: 'verification_id', columns: ['verification_id', 'tape', 'generated_at', 'scoring_input', 'tape_id', 'reason', 'stored_at'] },
  /** The tapes a later one replaced (a refresh, an overlay): a monitored creator's income over time. */
  tape_history: {
    tiedBy: 'verification_id',
    columns: ['tape_id', 'verification_id', 'tape', 'generated_at', 'reason', 'stored_at', 'tier', 'max_advance_eur'],
  },
  income_records: { tiedBy: 'verification_id', columns: ['verification_id', 'platform', 'month', 'source_currency', 'source_amount', 'amount_eur'] },
  overlays: { tiedBy: 'verification_id', columns: ['id', 'verification_id', 'type', 'provider', 'reference', 'status', 'observed_at', 'data', 'created_at'] },
  idempotency_keys: {
    tiedBy: 'verification_id',
    columns: ['lender_id', 'idempotency_key', 'request_fingerprint', 'response_status', 'response_body', 'verification_id', 'created_at', 'expires_at'],
  },
  /** The verification's jobs (subject_id); a grant revocation's job names the revocation instead. */
  jobs: {
    tiedBy: 'subject_id',
    columns: ['id', 'kind', 'subject_id', 'payload', 'run_at', 'status', 'attempts', 'locked_by', 'locked_until', 'last_error', 'created_at'],
  },
  platform_connections: {
    tiedBy: 'verification_id',
    columns: [
      'verification_id',
      'platform',
      'status',
      'updated_at',
      'account_email',
      'external_account_id',
      'access_token_ciphertext',
      'refresh_token_ciphertext',
      'connected_at',
      'account_email_ciphertext',
      'account_email_index',
      'scopes',
      'revoked_at',
    ],
  },
  oauth_requests: {
    tiedBy: 'verification_id',
    columns: ['state_hash', 'verification_id', 'platform', 'code_verifier_ciphertext', 'consent_token_ciphertext', 'browser_binding_hash', 'expires_at'],
  },
  benchmark_members: { tiedBy: 'verification_id', columns: ['verification_id', 'lender_id', 'product_type', 'buckets', 'shard'] },
  /** The webhooks' copy of an event of the verification (events.id). */
  webhook_events: { tiedBy: 'event_id', columns: ['event_id', 'lender_id', 'body'] },
  webhook_deliveries: {
    tiedBy: 'verification_id',
    columns: [
      'id',
      'webhook_id',
      'lender_id',
      'event_id',
      'event_name',
      'verification_id',
      'event_sequence',
      'status',
      'attempts',
      'first_attempt_at',
      'next_attempt_at',
      'locked_by',
      'locked_until',
      'replay_of',
      'created_at',
    ],
  },
  /** An attempt of a delivery of the verification (webhook_deliveries.id). */
  webhook_delivery_attempts: {
    tiedBy: 'delivery_id',
    columns: ['id', 'delivery_id', 'attempt', 'attempted_at', 'status_code', 'duration_ms', 'error', 'response_snippet'],
  },
} as const satisfies Record<string, { tiedBy: string; columns: readonly string[] }>;

/**
 * A creator's data that outlives the erasure by a rule of its own, tied to no verification, and
 * deleted when that rule says.
 */
export const KEPT_APART_AFTER_ERASURE = {
  /** A grant the provider would not revoke at once: encrypted, deleted once a retry revokes it. */
  provider_revocations: {
    until: 'the provider revokes the grant',
    columns: [
      'id',
      'platform',
      'access_token_ciphertext',
      'refresh_token_ciphertext',
      'external_account_id_ciphertext',
      'attempts',
      'last_error',
      'created_at',
    ],
  },
  /**
   * PostgreSQL only: a client's request counter for the current second or minute, keyed by API key
   * or by IP address (a creator's, on the consent pages); the rate limiter deletes it an hour after
   * it expires.
   */
  rate_limits: { until: 'an hour after the counter expires', columns: ['key', 'points', 'expire'] },
} as const satisfies Record<string, { until: string; columns: readonly string[] }>;

/** No creator's data: lender accounts and their staff, the service's own keys and settings, counts. */
export const NO_CREATOR_DATA = {
  lender_accounts: [
    'id',
    'name',
    'plan',
    'jurisdiction',
    'rate_limit_per_minute',
    'rate_limit_burst',
    'ip_allowlist',
    'return_origins',
    'created_at',
    'updated_at',
    'deactivated_at',
    'access_epoch',
  ],
  lender_policies: ['lender_id', 'product_type', 'overrides', 'updated_at'],
  api_keys: ['id', 'lender_id', 'role', 'key_hash', 'key_prefix', 'created_at', 'revoked_at', 'rate_limit_per_minute', 'rate_limit_burst', 'last_used_at'],
  /** The lender's staff: personal data of theirs, not of any creator. */
  dashboard_users: ['id', 'lender_id', 'email', 'role', 'password_hash', 'created_at', 'deactivated_at'],
  dashboard_sessions: ['id_hash', 'user_id', 'created_at', 'last_seen_at', 'expires_at', 'revoked_at', 'lender_epoch'],
  webhook_endpoints: [
    'id',
    'lender_id',
    'url',
    'events',
    'secret_ciphertext',
    'created_at',
    'deleted_at',
    'previous_secret_ciphertext',
    'previous_secret_expires_at',
    'disabled_at',
  ],
  /** Counts of tapes per bucket and lender; a tape leaves them when it is erased. */
  benchmark_buckets: ['product_type', 'metric', 'bucket', 'tapes'],
  benchmark_bucket_shards: ['product_type', 'metric', 'bucket', 'shard', 'tapes'],
  benchmark_lenders: ['product_type', 'lender_id', 'tapes'],
  benchmark_lender_shards: ['product_type', 'lender_id', 'shard', 'tapes'],
  benchmark_lender_buckets: ['product_type', 'lender_id', 'metric', 'bucket', 'shard', 'tapes'],
  /** Who asked for what and the counts; never the creator's identifiers. */
  gdpr_audit: ['id', 'lender_id', 'key_id', 'operation', 'at', 'identifier_kinds', 'counts', 'receipt_id'],
  tape_signing_keys: ['kid', 'algorithm', 'public_jwk', 'private_jwk_ciphertext', 'created_at', 'retired_at'],
  service_settings: ['name', 'value'],
  knex_migrations: ['id', 'name', 'batch', 'migration_time'],
  knex_migrations_lock: ['index', 'is_locked'],
} as const satisfies Record<string, readonly string[]>;

/** Tables only one of the databases has. */
export const POSTGRES_ONLY_TABLES: readonly string[] = ['rate_limits'];

/**
 * The tables `admin gdpr compact` rewrites, where deleted rows of creators leave their bytes: those
 * an erasure deletes from, and the grants kept apart (deleted once revoked). Not `rate_limits`,
 * unlogged counters rewritten by every request.
 */
export const COMPACTED_TABLES: readonly string[] = [...Object.keys(ERASED_WITH_THE_CREATOR), 'provider_revocations'];
