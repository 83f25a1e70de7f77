import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface ReceivedDelivery {
  path: string;
  headers: Record<string, string>;
  rawBody: Buffer;
  receivedAt: number;
  /** The status the receiver answers (or answered) with: a 2xx is an acknowledgement. */
  status: number;
}

export interface TestCertificates {
  /** The CA certificate's file, for NODE_EXTRA_CA_CERTS of a server process. */
  caFile: string;
  ca: string;
  key: string;
  cert: string;
}

/** A CA and a localhost certificate it signs, from scripts/make-test-ca.sh. */
export function makeTestCertificates(): TestCertificates {
  const dir = mkdtempSync(join(tmpdir(), 'civ-ca-'));
  execFileSync(new URL('../../scripts/make-test-ca.sh', import.meta.url).pathname, [dir]);
  const read = (file: string) => readFileSync(join(dir, file), 'utf8');
  return { caFile: join(dir, 'ca.pem'), ca: read('ca.pem'), key: read('server-key.pem'), cert: read('server.pem') };
}

/**
 * An HTTPS webhook receiver for tests: records every request with its raw body and answers with
 * the next status scripted for its path (200 once the script runs out), optionally after a delay.
 * Give each test its own path and tests cannot disturb each other.
 */
export class TestReceiver {
  readonly received: ReceivedDelivery[] = [];
  /** TLS connections accepted so far. */
  connectionsOpened = 0;
  /** The most requests it was answering at one time. */
  mostInFlight = 0;
  private inFlight = 0;
  private scripts = new Map<string, Array<{ status: number; delayMs?: number }>>();
  private server: Server;

  constructor(certificates: TestCertificates) {
    this.server = createServer({ key: certificates.key, cert: certificates.cert }, (req, res) => {
      this.mostInFlight = Math.max(this.mostInFlight, ++this.inFlight);
      res.on('close', () => this.inFlight--);
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const next = this.scripts.get(req.url ?? '/')?.shift() ?? { status: 200 };
        this.received.push({
          path: req.url ?? '/',
          headers: Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)])),
          rawBody: Buffer.concat(chunks),
          receivedAt: Date.now(),
          status: next.status,
        });
        setTimeout(() => res.writeHead(next.status, { 'content-type': 'text/plain' }).end('ok'), next.delayMs ?? 0);
      });
    });
    this.server.on('secureConnection', () => this.connectionsOpened++);
  }

  async listen(): Promise<string> {
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
    return `https://127.0.0.1:${(this.server.address() as { port: number }).port}`;
  }

  /** The statuses (and delays) of the next answers to requests for `path`, in order. */
  answerWith(path: string, ...answers: Array<number | { status: number; delayMs?: number }>): void {
    const script = this.scripts.get(path) ?? [];
    script.push(...answers.map((a) => (typeof a === 'number' ? { status: a } : a)));
    this.scripts.set(path, script);
  }

  /** Drops what is left of the script for `path`: from now on it answers 200. */
  clearScript(path: string): void {
    this.scripts.delete(path);
  }

  to(path: string): ReceivedDelivery[] {
    return this.received.filter((r) => r.path === path);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    this.server.close();
  }
}
