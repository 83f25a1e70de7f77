import { pino, type Logger } from 'pino';

export type { Logger };

/**
 * Paths pino censors in every log line. API keys, the Authorization header, webhook secrets and
 * OAuth tokens must never reach a log (section 5, D9); the request serializer below already drops
 * headers, and this list is the second line of defence for anything logged by hand.
 */
export const REDACTED_PATHS = [
  'authorization',
  'apiKey',
  'key',
  'secret',
  'token',
  'accessToken',
  'refreshToken',
  'encryptionKey',
  '*.authorization',
  '*.apiKey',
  '*.key',
  '*.secret',
  '*.token',
  '*.accessToken',
  '*.refreshToken',
  'req.headers.authorization',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
];

export function createLogger(options: { level: string; destination?: pino.DestinationStream }): Logger {
  return pino(
    {
      level: options.level,
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      base: { service: 'creator-income-verification' },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    options.destination,
  );
}
