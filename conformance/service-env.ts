/** The service's configuration variables (D22 and src/platform/config.ts), none inherited from the caller's shell. */
export const SERVICE_ENV_NAMES = [
  'PORT',
  'HOST',
  'DATABASE_URL',
  'SERVICE_MODE',
  'DEMO_API_KEY',
  'PUBLIC_BASE_URL',
  'LOG_LEVEL',
  'WEBHOOK_ALLOW_PRIVATE_TARGETS',
  'WEBHOOK_RETRY_SCHEDULE',
  'WEBHOOK_TIMEOUT_MS',
  'SANDBOX_COMPLETE_DELAY_MS',
  'ENCRYPTION_KEY',
  'TRUST_PROXY',
  'SHUTDOWN_GRACE_MS',
  'VALIDATE_RESPONSES',
  'JOB_LEASE_MS',
  'METRICS_PORT',
  'METRICS_HOST',
  'METRICS_TOKEN',
  // Not the service's own, but it decides which receivers it trusts (D16).
  'NODE_EXTRA_CA_CERTS',
];
