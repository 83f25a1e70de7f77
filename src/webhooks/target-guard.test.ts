import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import { createServer as createTcpServer, type AddressInfo, type Server as TcpServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fetch, request, type Agent } from 'undici';
import { checkWebhookUrl, createGuardedDispatcher, WebhookTargetRefusedError, type CheckWebhookUrlOptions, type Resolver } from './target-guard.ts';

// No test may reach real DNS: literals must not be resolved at all, names use injected answers.
const noDns: Resolver = async (host) => {
  throw new Error(`unexpected DNS lookup of ${host}`);
};
const answers = (table: Record<string, string[]>): Resolver & { calls: string[] } => {
  const calls: string[] = [];
  return Object.assign(
    async (host: string) => {
      calls.push(host);
      const found = table[host];
      if (!found) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
      return found;
    },
    { calls },
  );
};
const strict = (resolve: Resolver = noDns) => ({ allowPrivateTargets: false, resolve });

async function refusal(raw: string, options: CheckWebhookUrlOptions = strict()): Promise<string> {
  const result = await checkWebhookUrl(raw, options);
  assert.equal(result.ok, false, `${raw} should be refused`);
  return (result as { reason: string }).reason;
}

describe('webhook target guard', () => {
  describe('the addresses a name may resolve to', () => {
    // Every address a resolver answers is classified as a literal in the URL would be, so a name
    // answered with one address shows how the guard classifies that address, spelling and all.
    const accepted = async (address: string) => (await checkWebhookUrl('https://hook.example/', strict(answers({ 'hook.example': [address] })))).ok;
    const notPublic = [
      '127.0.0.1',
      '127.255.255.254',
      '10.0.0.5',
      '172.16.0.1',
      '172.31.255.255',
      '192.168.1.1',
      '169.254.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '100.127.255.255',
      '100.100.100.200',
      '224.0.0.1',
      '239.255.255.250',
      '0.0.0.0',
      '0.1.2.3',
      '255.255.255.255',
      '192.0.0.8',
      '192.0.2.1',
      '198.18.0.1',
      '198.19.255.255',
      '198.51.100.7',
      '203.0.113.9',
      '240.0.0.1',
      '168.63.129.16',
      '::',
      '::1',
      'fc00::1',
      'fd12:3456::1',
      'fd00:ec2::254',
      'fe80::1',
      'febf::1',
      'ff02::1',
      '100::1',
      '2001:db8::1',
      '3fff::1',
      '2001::1',
      '2001:2::1',
      'fec0::1',
      '5f00::1',
      '::ffff:127.0.0.1',
      '::ffff:7f00:1',
      '::ffff:10.0.0.1',
      '::ffff:169.254.169.254',
      '::ffff:0:a00:1',
      '::127.0.0.1',
      '::a00:1',
      '64:ff9b::127.0.0.1',
      '64:ff9b::a00:1',
      '64:ff9b:1::808:808',
      '2002:7f00:1::1',
      '2002:c0a8:101::1',
      'fe80::1%eth0',
      // not canonical literals: never interpret them differently from the URL parser
      '0177.0.0.1',
      '0x7f.1',
      '2130706433',
      '127.1',
      'example.com',
      '',
    ];
    for (const address of notPublic) {
      it(`refuses ${address || '(empty)'}`, async () => assert.equal(await accepted(address), false));
    }
    const isPublic = [
      '93.184.215.14',
      '8.8.8.8',
      '1.1.1.1',
      '172.32.0.1',
      '100.128.0.1',
      '192.0.3.1',
      '198.20.0.1',
      '2606:4700:4700::1111',
      '2a00:1450:4001::200e',
      '::ffff:93.184.215.14',
      '64:ff9b::808:808',
      '2002:808:808::1',
    ];
    for (const address of isPublic) {
      it(`accepts ${address}`, async () => assert.equal(await accepted(address), true));
    }
  });

  describe('checkWebhookUrl', () => {
    const refused: Array<[string, string]> = [
      ['http://example.com/hook', 'url must use https'],
      ['ftp://example.com/hook', 'url must use https'],
      ['https://user:pw@example.com/', 'url must not contain a username or password'],
      ['https://user@example.com/', 'url must not contain a username or password'],
      ['https://example.com/hook#part', 'url must not contain a fragment'],
      ['https://example.com/hook#', 'url must not contain a fragment'],
      ['not a url', 'url is not a valid absolute URL'],
      ['/relative/hook', 'url is not a valid absolute URL'],
      ['https://[fe80::1%25eth0]/', 'url is not a valid absolute URL'], // WHATWG rejects zone ids
      [`https://example.com/${'a'.repeat(2048)}`, 'url is longer than 2048 characters'],
      ['https://127.0.0.1/', 'host is a loopback address (127.0.0.1)'],
      ['https://2130706433/', 'host is a loopback address (127.0.0.1)'],
      ['https://0177.0.0.1/', 'host is a loopback address (127.0.0.1)'],
      ['https://0x7f.1/', 'host is a loopback address (127.0.0.1)'],
      ['https://127.1/', 'host is a loopback address (127.0.0.1)'],
      ['https://%31%32%37.0.0.1/', 'host is a loopback address (127.0.0.1)'],
      ['https://0/', 'host is an unspecified address (0.0.0.0)'],
      ['https://[::]/', 'host is an unspecified address (::)'],
      ['https://[::1]/', 'host is a loopback address (::1)'],
      ['https://[::ffff:127.0.0.1]/', 'host is a loopback address (::ffff:7f00:1)'],
      ['https://[::ffff:7f00:1]/', 'host is a loopback address (::ffff:7f00:1)'],
      ['https://[::127.0.0.1]/', 'host is a loopback address (::7f00:1)'],
      ['https://[64:ff9b::10.0.0.1]/', 'host is a private address (64:ff9b::a00:1)'],
      ['https://[2002:a00:1::1]/', 'host is a private address (2002:a00:1::1)'],
      ['https://10.0.0.5/', 'host is a private address (10.0.0.5)'],
      ['https://[fd12::1]/', 'host is a private address (fd12::1)'],
      ['https://[fe80::1]/', 'host is a link-local address (fe80::1)'],
      ['https://100.64.1.1/', 'host is a shared (CGNAT) address (100.64.1.1)'],
      ['https://224.0.0.1/', 'host is a multicast address (224.0.0.1)'],
      ['https://255.255.255.255/', 'host is a broadcast address (255.255.255.255)'],
      ['https://198.51.100.7/', 'host is a reserved address (198.51.100.7)'],
      ['https://[2001:db8::1]/', 'host is a reserved address (2001:db8::1)'],
      ['https://169.254.169.254/latest/meta-data', 'host is a cloud metadata address (169.254.169.254)'],
      ['https://[fd00:ec2::254]/', 'host is a cloud metadata address (fd00:ec2::254)'],
      ['https://100.100.100.200/', 'host is a cloud metadata address (100.100.100.200)'],
      ['https://metadata.google.internal/computeMetadata/v1/', 'host is a cloud metadata endpoint (metadata.google.internal)'],
      ['https://METADATA.google.internal./', 'host is a cloud metadata endpoint (metadata.google.internal)'],
      ['https://metadata/', 'host is a cloud metadata endpoint (metadata)'],
      ['https://localhost/', 'host is a local or internal name (localhost)'],
      ['https://localhost./', 'host is a local or internal name (localhost)'],
      ['https://api.localhost/', 'host is a local or internal name (api.localhost)'],
      ['https://printer.local/', 'host is a local or internal name (printer.local)'],
      ['https://db.internal/', 'host is a local or internal name (db.internal)'],
      ['https://box.localdomain/', 'host is a local or internal name (box.localdomain)'],
      ['https://fileserver/', 'host must be a fully qualified domain name (fileserver)'],
    ];
    for (const [raw, reason] of refused) {
      it(`refuses ${raw.length > 80 ? `${raw.slice(0, 60)}...` : raw} without resolving`, async () => {
        assert.equal(await refusal(raw), reason);
      });
    }

    it('refuses a name when any of its addresses is not public', async () => {
      const resolve = answers({ 'hooks.example.com': ['93.184.215.14', '10.0.0.5'] });
      assert.equal(await refusal('https://hooks.example.com/', strict(resolve)), 'host resolves to a private address (10.0.0.5)');
      assert.deepEqual(resolve.calls, ['hooks.example.com']);
    });

    it('refuses a name resolving to an IPv4-mapped private address', async () => {
      const resolve = answers({ 'hooks.example.com': ['::ffff:10.0.0.1'] });
      assert.equal(await refusal('https://hooks.example.com/', strict(resolve)), 'host resolves to a private address (::ffff:10.0.0.1)');
    });

    it('refuses a name resolving to a metadata address (DNS pointing at 169.254.169.254)', async () => {
      const resolve = answers({ 'evil.example.com': ['169.254.169.254'] });
      assert.equal(await refusal('https://evil.example.com/', strict(resolve)), 'host resolves to a cloud metadata address (169.254.169.254)');
    });

    it('refuses a name that does not resolve, or resolves to nothing', async () => {
      assert.equal(await refusal('https://nowhere.example.com/', strict(answers({}))), 'host does not resolve (nowhere.example.com)');
      const empty = answers({ 'empty.example.com': [] });
      assert.equal(await refusal('https://empty.example.com/', strict(empty)), 'host does not resolve (empty.example.com)');
    });

    it('refuses a name whose lookup hangs', async () => {
      const hang: Resolver = () => new Promise(() => {});
      const reason = await refusal('https://slow.example.com/', { allowPrivateTargets: false, resolve: hang, resolveTimeoutMs: 20 });
      assert.equal(reason, 'host lookup timed out (slow.example.com)');
    });

    it('accepts public literals and returns the normalised URL', async () => {
      const v4 = await checkWebhookUrl('https://93.184.215.14/hook', strict());
      assert.ok(v4.ok);
      assert.equal(v4.url.href, 'https://93.184.215.14/hook');
      const v6 = await checkWebhookUrl('https://[2606:4700:4700:0::1111]:8443/hook?x=1', strict());
      assert.ok(v6.ok);
      assert.equal(v6.url.href, 'https://[2606:4700:4700::1111]:8443/hook?x=1');
    });

    it('accepts a name whose addresses are all public', async () => {
      const resolve = answers({ 'hooks.lender.example': ['93.184.215.14', '2606:4700:4700::1111'] });
      const result = await checkWebhookUrl('https://Hooks.Lender.example/webhooks/civ', strict(resolve));
      assert.ok(result.ok);
      assert.equal(result.url.href, 'https://hooks.lender.example/webhooks/civ');
      assert.deepEqual(resolve.calls, ['hooks.lender.example']);
    });

    it('accepts a URL of exactly 2048 characters', async () => {
      const prefix = 'https://93.184.215.14/';
      assert.equal((await checkWebhookUrl(prefix + 'a'.repeat(2048 - prefix.length), strict())).ok, true);
    });

    describe('with allowPrivateTargets', () => {
      const lax = (resolve: Resolver = noDns) => ({ allowPrivateTargets: true, resolve });

      it('accepts loopback, private and local names', async () => {
        for (const raw of ['https://127.0.0.1:8443/hook', 'https://[::1]/', 'https://10.0.0.5/', 'https://100.64.0.1/']) {
          assert.equal((await checkWebhookUrl(raw, lax())).ok, true, raw);
        }
        const resolve = answers({ localhost: ['127.0.0.1', '::1'], receiver: ['172.18.0.3'] });
        assert.equal((await checkWebhookUrl('https://localhost:9443/', lax(resolve))).ok, true);
        assert.equal((await checkWebhookUrl('https://receiver/hook', lax(resolve))).ok, true);
      });

      it('still refuses metadata, link-local, and the https rule', async () => {
        assert.equal(await refusal('https://169.254.169.254/', lax()), 'host is a cloud metadata address (169.254.169.254)');
        assert.equal(await refusal('https://metadata.google.internal/', lax()), 'host is a cloud metadata endpoint (metadata.google.internal)');
        assert.equal(await refusal('https://[fe80::1]/', lax()), 'host is a link-local address (fe80::1)');
        assert.equal(await refusal('https://0.0.0.0/', lax()), 'host is an unspecified address (0.0.0.0)');
        assert.equal(await refusal('http://127.0.0.1/', lax()), 'url must use https');
      });
    });
  });

  describe('createGuardedDispatcher', () => {
    // A plain TCP listener: any connection reaching it means the guard let one through.
    let tcp: TcpServer;
    let tcpPort: number;
    let connections = 0;
    const dispatchers: Agent[] = [];
    const guarded = (options: Parameters<typeof createGuardedDispatcher>[0]) => {
      const dispatcher = createGuardedDispatcher(options);
      dispatchers.push(dispatcher);
      return dispatcher;
    };
    const refusedBy = (pattern: RegExp) => (error: unknown) => {
      assert.ok(error instanceof WebhookTargetRefusedError, `expected a refusal, got ${String(error)}`);
      assert.equal(error.code, 'ERR_WEBHOOK_TARGET_REFUSED');
      assert.match(error.message, pattern);
      return true;
    };

    before(async () => {
      tcp = createTcpServer((socket) => {
        connections += 1;
        socket.destroy();
      });
      await new Promise<void>((resolve) => tcp.listen(0, '127.0.0.1', resolve));
      tcpPort = (tcp.address() as AddressInfo).port;
    });
    beforeEach(() => {
      connections = 0;
    });
    after(async () => {
      await Promise.all(dispatchers.map((dispatcher) => dispatcher.destroy()));
      await new Promise((resolve) => tcp.close(resolve));
    });

    it('refuses a name that resolves to loopback, without connecting', async () => {
      const lookup = answers({ 'hooks.example.com': ['127.0.0.1'] });
      const dispatcher = guarded({ allowPrivateTargets: false, connectTimeoutMs: 2000, lookup });
      await assert.rejects(
        request(`https://hooks.example.com:${tcpPort}/hook`, { method: 'POST', body: '{}', dispatcher }),
        refusedBy(/^host resolves to a loopback address \(127\.0\.0\.1\)$/),
      );
      assert.deepEqual(lookup.calls, ['hooks.example.com']);
      assert.equal(connections, 0);
    });

    it('refuses when any address is private, so no fallback can reach it', async () => {
      const lookup = answers({ 'hooks.example.com': ['93.184.215.14', '127.0.0.1'] });
      const dispatcher = guarded({ allowPrivateTargets: false, connectTimeoutMs: 2000, lookup });
      await assert.rejects(request(`https://hooks.example.com:${tcpPort}/`, { dispatcher }), refusedBy(/loopback address \(127\.0\.0\.1\)/));
      assert.equal(connections, 0);
    });

    it('re-checks at delivery: a name that passed registration and now rebinds to loopback is refused', async () => {
      const registration = await checkWebhookUrl(`https://rebind.example.com:${tcpPort}/`, strict(answers({ 'rebind.example.com': ['93.184.215.14'] })));
      assert.ok(registration.ok);
      const dispatcher = guarded({ allowPrivateTargets: false, connectTimeoutMs: 2000, lookup: answers({ 'rebind.example.com': ['127.0.0.1'] }) });
      await assert.rejects(request(registration.url, { dispatcher }), refusedBy(/loopback/));
      assert.equal(connections, 0);
    });

    it('refuses IP literals, which Node connects to without a lookup', async () => {
      const lookup = answers({});
      const dispatcher = guarded({ allowPrivateTargets: false, connectTimeoutMs: 2000, lookup });
      await assert.rejects(request(`https://127.0.0.1:${tcpPort}/`, { dispatcher }), refusedBy(/^host is a loopback address \(127\.0\.0\.1\)$/));
      await assert.rejects(request(`https://[::ffff:127.0.0.1]:${tcpPort}/`, { dispatcher }), refusedBy(/loopback address \(::ffff:7f00:1\)/));
      await assert.rejects(request(`http://127.0.0.1:${tcpPort}/`, { dispatcher }), refusedBy(/loopback/));
      assert.deepEqual(lookup.calls, []);
      assert.equal(connections, 0);
    });

    it('refuses metadata names and addresses even with allowPrivateTargets', async () => {
      const lookup = answers({ 'metadata.google.internal': ['127.0.0.1'], 'imds.example.com': ['169.254.169.254'] });
      const dispatcher = guarded({ allowPrivateTargets: true, connectTimeoutMs: 2000, lookup });
      await assert.rejects(request('http://169.254.169.254/latest/meta-data', { dispatcher }), refusedBy(/cloud metadata address/));
      await assert.rejects(request(`https://metadata.google.internal:${tcpPort}/`, { dispatcher }), refusedBy(/cloud metadata endpoint/));
      await assert.rejects(request(`https://imds.example.com:${tcpPort}/`, { dispatcher }), refusedBy(/cloud metadata address \(169\.254\.169\.254\)/));
      assert.deepEqual(lookup.calls, ['imds.example.com']);
    });

    it("surfaces the refusal as the cause of undici fetch's error", async () => {
      const dispatcher = guarded({ allowPrivateTargets: false, connectTimeoutMs: 2000, lookup: answers({ 'hooks.example.com': ['10.1.2.3'] }) });
      await assert.rejects(fetch(`https://hooks.example.com:${tcpPort}/`, { method: 'POST', body: '{}', dispatcher, redirect: 'error' }), (error: unknown) => {
        assert.ok(error instanceof TypeError);
        return refusedBy(/private address \(10\.1\.2\.3\)/)((error as { cause?: unknown }).cause);
      });
    });

    it('passes resolution failures through as they are (retryable, not a refusal)', async () => {
      const dispatcher = guarded({ allowPrivateTargets: false, connectTimeoutMs: 2000, lookup: answers({}) });
      await assert.rejects(request(`https://gone.example.com:${tcpPort}/`, { dispatcher }), (error: unknown) => {
        assert.equal((error as { code?: string }).code, 'ENOTFOUND');
        assert.ok(!(error instanceof WebhookTargetRefusedError));
        return true;
      });
    });

    describe('against a local HTTPS receiver', () => {
      let dir: string;
      let ca: Buffer;
      let server: HttpsServer;
      let port: number;

      before(function () {
        const version = spawnSync('openssl', ['version'], { encoding: 'utf8' });
        if (version.error || version.status !== 0) {
          console.warn('      skipping HTTPS receiver tests: the openssl CLI is not available to make a test certificate');
          this.skip();
        }
        dir = mkdtempSync(join(tmpdir(), 'target-guard-'));
        const made = spawnSync(
          'openssl',
          [
            'req',
            '-x509',
            '-newkey',
            'rsa:2048',
            '-nodes',
            '-keyout',
            join(dir, 'k.pem'),
            '-out',
            join(dir, 'c.pem'),
            '-days',
            '1',
            '-subj',
            '/CN=localhost',
            '-addext',
            'subjectAltName=DNS:localhost,IP:127.0.0.1',
          ],
          { encoding: 'utf8' },
        );
        assert.equal(made.status, 0, made.stderr);
        ca = readFileSync(join(dir, 'c.pem'));
        server = createHttpsServer({ key: readFileSync(join(dir, 'k.pem')), cert: ca }, (req, res) => {
          res.setHeader('x-remote', req.socket.remoteAddress ?? '');
          res.end(`ok ${req.method} ${req.url}`);
        });
        return new Promise<void>((resolve) =>
          server.listen(0, '127.0.0.1', () => {
            port = (server.address() as AddressInfo).port;
            resolve();
          }),
        );
      });
      after(async () => {
        if (server) {
          server.closeAllConnections();
          await new Promise((resolve) => server.close(resolve));
        }
        if (dir) rmSync(dir, { recursive: true, force: true });
      });

      it('connects to the vetted address with allowPrivateTargets', async () => {
        const lookup = answers({ localhost: ['127.0.0.1'] });
        const dispatcher = guarded({ allowPrivateTargets: true, connectTimeoutMs: 2000, lookup, tls: { ca } });
        const response = await request(`https://localhost:${port}/hook`, { method: 'POST', body: '{}', dispatcher });
        assert.equal(response.statusCode, 200);
        assert.equal(await response.body.text(), 'ok POST /hook');
        assert.deepEqual(lookup.calls, ['localhost']);
        const viaFetch = await fetch(`https://127.0.0.1:${port}/literal`, { dispatcher, redirect: 'error' });
        assert.equal(await viaFetch.text(), 'ok GET /literal');
      });

      it('refuses the same receiver without allowPrivateTargets', async () => {
        const dispatcher = guarded({
          allowPrivateTargets: false,
          connectTimeoutMs: 2000,
          lookup: answers({ 'hooks.example.com': ['127.0.0.1'] }),
          tls: { ca },
        });
        await assert.rejects(request(`https://hooks.example.com:${port}/`, { dispatcher }), refusedBy(/loopback/));
      });

      it('still verifies the certificate chain', async () => {
        const dispatcher = guarded({ allowPrivateTargets: true, connectTimeoutMs: 2000, lookup: answers({ localhost: ['127.0.0.1'] }) });
        await assert.rejects(request(`https://localhost:${port}/`, { dispatcher }), (error: unknown) => {
          assert.match(String((error as { code?: string }).code), /SELF_SIGNED|UNABLE_TO_VERIFY|CERT/);
          return true;
        });
      });

      it('verifies the certificate against the URL host, not the pinned address', async () => {
        const lookup = answers({ 'hooks.example.com': ['127.0.0.1'] });
        const dispatcher = guarded({ allowPrivateTargets: true, connectTimeoutMs: 2000, lookup, tls: { ca } });
        await assert.rejects(request(`https://hooks.example.com:${port}/`, { dispatcher }), (error: unknown) => {
          assert.equal((error as { code?: string }).code, 'ERR_TLS_CERT_ALTNAME_INVALID');
          return true;
        });
        assert.deepEqual(lookup.calls, ['hooks.example.com']);
      });
    });
  });
});
