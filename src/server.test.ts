import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, isAbsolute, join, normalize, relative } from 'node:path';
import { once } from 'node:events';
import { PUBLIC_DEMO_API_KEY } from './platform/config.ts';
import { freePort } from '../test/support/free-port.ts';
import { checkoutForNpmStart, serverBundles, serverProcessArgs } from '../test/support/server-process.ts';

const root = new URL('..', import.meta.url).pathname;

async function startServer(env: Record<string, string>): Promise<{ child: ChildProcess; port: number; output: () => string }> {
  const port = await freePort();
  let output = '';
  const child = spawn(process.execPath, await serverProcessArgs(), {
    cwd: root,
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn', ...env },
  });
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) break;
    try {
      if ((await fetch(`http://127.0.0.1:${port}/readyz`)).ok) return { child, port, output: () => output };
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  child.kill('SIGKILL');
  throw new Error(`server did not become ready:\n${output}`);
}

describe('server process', function () {
  this.timeout(30_000);
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'civ-server-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('runs the same node command from npm start, the Dockerfile and the test and benchmark harness', async () => {
    const start = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts.start!;
    // npm start builds, then execs node (so a signal to npm reaches the server).
    const startNode = /&& exec node (.*)$/.exec(start)?.[1];
    assert.ok(startNode, `npm start does not exec node after building: ${start}`);
    const cmd = /^CMD (\[.*\])$/m.exec(readFileSync(join(root, 'Dockerfile'), 'utf8'))?.[1];
    assert.ok(cmd, 'the Dockerfile has no CMD in exec form');
    const [dockerNode, ...dockerArgs] = JSON.parse(cmd) as string[];
    assert.equal(dockerNode, 'node');
    // Paths as written from the project's root, wherever the harness runs from.
    const asWritten = (args: string[]) => args.map((arg) => (isAbsolute(arg) ? relative(root, arg) : normalize(arg)));
    assert.deepEqual(asWritten(startNode.split(/\s+/)), asWritten(dockerArgs));
    // The harness's command starts with SERVER_NODE_FLAGS, so all three carry them. It runs the same
    // bundles, built into a temporary directory instead of .build/.
    const bundles = await serverBundles();
    const harness = (await serverProcessArgs()).map((arg) =>
      arg === bundles.tracing ? '.build/tracing.js' : arg === bundles.server ? '.build/server.js' : arg,
    );
    assert.deepEqual(asWritten(harness), asWritten(dockerArgs));
  });

  it('builds an image that holds every file the server reads beside its sources', () => {
    const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8');
    const stages = dockerfile.split(/^FROM /m).slice(1);
    const copied = (stage: string) => [...stage.matchAll(/^COPY (?!--from)(.+) \S+$/gm)].flatMap((m) => m[1]!.split(/\s+/)).map((path) => normalize(path));
    const runtime = copied(stages.at(-1)!);
    // Every `new URL('<relative path>', import.meta.url)` of the server's sources, from the root.
    const sources = readdirSync(join(root, 'src'), { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'));
    const read = sources.flatMap((file) =>
      [...readFileSync(join(root, 'src', file), 'utf8').matchAll(/new URL\('([^']+)', import\.meta\.url\)/g)].map((m) =>
        relative(root, join(root, 'src', dirname(file), m[1]!)),
      ),
    );
    assert.ok(read.includes('docs/changelog.md') && read.includes('generated/openapi.json'), `found ${read.join(', ')}`);
    // (The admin CLI's runner finds the project's root itself, '', which is not a file to copy.)
    for (const path of read.filter(Boolean)) {
      assert.ok(
        runtime.some((source) => path === source || path.startsWith(`${source}/`)),
        `the image does not copy ${path}`,
      );
    }
  });

  it('prints where it listens and the demo key, and serves the docs page', async () => {
    const { child, port, output } = await startServer({ DATABASE_URL: `sqlite:${join(dir, 'db.sqlite')}` });
    try {
      assert.match(output(), new RegExp(`listening on http://127.0.0.1:${port}`));
      assert.ok(output().includes(PUBLIC_DEMO_API_KEY));
      const docs = await fetch(`http://127.0.0.1:${port}/docs`);
      assert.equal(docs.status, 200);
      assert.match(await docs.text(), /swagger-ui/);
      const asset = await fetch(`http://127.0.0.1:${port}/docs/assets/swagger-ui-bundle.js`);
      assert.equal(asset.status, 200);
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('finishes an in-flight request on SIGTERM, then exits 0', async () => {
    const { child, port } = await startServer({ DATABASE_URL: `sqlite:${join(dir, 'db.sqlite')}` });
    const body = JSON.stringify({ obligor_reference: 'drain-check', creator_platforms: ['youtube'] });
    const socket = connect(port, '127.0.0.1');
    await once(socket, 'connect');
    let response = '';
    socket.on('data', (d: Buffer) => (response += d.toString()));
    const socketClosed = once(socket, 'close');
    const exited = once(child, 'exit');
    // Send the headers and half the body, so the request is in flight when SIGTERM arrives.
    socket.write(
      `POST /api/v1/verifications HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${PUBLIC_DEMO_API_KEY}\r\n` +
        `Content-Type: application/json\r\nIdempotency-Key: 9b2f6c1e-3d4a-4f5b-8c7d-1e2f3a4b5c6d\r\n` +
        `Content-Length: ${body.length}\r\nConnection: close\r\n\r\n${body.slice(0, 10)}`,
    );
    await new Promise((r) => setTimeout(r, 300));
    child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(child.exitCode, null, 'the server exited with a request in flight');
    // write, not end: a half-closed client socket would abort the request on the server's side.
    socket.write(body.slice(10));
    const [code] = await exited;
    await socketClosed;
    assert.match(response, /^HTTP\/1.1 (201|503) /, response);
    assert.equal(code, 0);
  });

  it('started by npm start, drains and stops on a SIGTERM sent to npm', async () => {
    const port = await freePort();
    // In a process group of its own, so that whatever it started can be stopped with it.
    const npm = spawn('npm', ['start'], {
      cwd: checkoutForNpmStart(),
      env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'info', DATABASE_URL: `sqlite:${join(dir, 'db.sqlite')}` },
      detached: true,
    });
    let output = '';
    npm.stdout.on('data', (d) => (output += d));
    npm.stderr.on('data', (d) => (output += d));
    try {
      const deadline = Date.now() + 25_000;
      while (
        !(await fetch(`http://127.0.0.1:${port}/readyz`).then(
          (r) => r.ok,
          () => false,
        ))
      ) {
        assert.ok(Date.now() < deadline && npm.exitCode === null, `npm start did not become ready:\n${output}`);
        await new Promise((r) => setTimeout(r, 200));
      }
      // 'close': its output has been read to the end.
      const closed = once(npm, 'close');
      npm.kill('SIGTERM');
      await closed;
      // The server itself got the signal (npm start execs it), drained, and is gone.
      assert.match(output, /draining in-flight requests/);
      assert.match(output, /"msg":"stopped"/);
      await assert.rejects(fetch(`http://127.0.0.1:${port}/readyz`));
    } finally {
      try {
        process.kill(-npm.pid!, 'SIGKILL');
      } catch {
        // The group has ended.
      }
    }
  });

  it('refuses to start with a configuration it cannot honour', async () => {
    const child = spawn(process.execPath, await serverProcessArgs(), {
      cwd: root,
      env: { ...process.env, SERVICE_MODE: 'production', DATABASE_URL: `sqlite:${join(dir, 'db.sqlite')}`, ENCRYPTION_KEY: '' },
    });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    const [code] = await once(child, 'exit');
    assert.equal(code, 1);
    assert.match(stderr, /ENCRYPTION_KEY/);
  });
});
