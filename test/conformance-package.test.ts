import assert from 'node:assert/strict';
import { execFile, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startServerProcess } from './support/server-process.ts';

/**
 * The conformance suite as a QA team gets it: `npm pack` in conformance/, installed globally into an
 * empty prefix, run against a separately started server. A few tests only (--grep): the whole suite
 * against a server is `conformance/run-against-server.sh` in CI.
 */

const run = promisify(execFile);
const root = new URL('..', import.meta.url).pathname;
const DEMO_KEY = 'civ_test_PublicSandboxDemoKey0000000000';

describe('conformance package: packed, installed and run against a separate server', function () {
  this.timeout(300_000);
  let dir: string;
  let server: { child: ChildProcess; base: string } | undefined;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'civ-conformance-package-'));
    await run('npm', ['pack', '--pack-destination', dir], { cwd: join(root, 'conformance') });
    const tarball = readdirSync(dir).find((file) => /^civ-conformance-.*\.tgz$/.test(file));
    assert.ok(tarball, `npm pack left no tarball in ${dir}`);
    await run('npm', ['install', '--global', '--prefix', join(dir, 'prefix'), '--prefer-offline', '--no-audit', '--no-fund', join(dir, tarball)], { cwd: dir });
    server = await startServerProcess({
      DATABASE_URL: `sqlite:${join(dir, 'service.sqlite')}`,
      SERVICE_MODE: 'sandbox',
      DEMO_API_KEY: DEMO_KEY,
      SANDBOX_COMPLETE_DELAY_MS: '500',
    });
  });

  after(() => {
    server?.child.kill('SIGTERM');
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const bin = () => join(dir, 'prefix', 'bin', 'civ-conformance');

  it('the tarball carries the compiled suite, the published spec and the test-CA script, and nothing of src/', () => {
    const packageDir = join(dir, 'prefix', 'lib', 'node_modules', '@civ', 'conformance');
    const files = readdirSync(packageDir, { recursive: true }).map(String);
    assert.ok(files.includes(join('dist', 'cli.js')));
    assert.ok(files.includes(join('spec', 'openapi.yaml')));
    assert.ok(files.includes(join('scripts', 'make-test-ca.sh')));
    assert.deepEqual(readFileSync(join(packageDir, 'spec', 'openapi.yaml'), 'utf8'), readFileSync(join(root, 'spec', 'openapi.yaml'), 'utf8'));
    for (const file of files.filter((f) => f.endsWith('.js'))) {
      assert.doesNotMatch(readFileSync(join(packageDir, file), 'utf8'), /from ['"]\.\.\/(src|test)\//, `${file} imports from the repository`);
    }
  });

  it('without --base-url it says the self-started mode needs the repository, and exits 2', async () => {
    const failed = await run(bin(), [], { cwd: dir }).then(
      () => assert.fail('expected a non-zero exit'),
      (error: { code: number; stderr: string }) => error,
    );
    assert.equal(failed.code, 2);
    assert.match(failed.stderr, /--base-url is required.*repository/s);
  });

  it('runs against the server, writing the JUnit file and the matrix', async () => {
    const junit = join(dir, 'out', 'junit.xml');
    const matrix = join(dir, 'out', 'matrix');
    const { stdout } = await run(
      bin(),
      [
        '--base-url',
        server!.base,
        '--key',
        DEMO_KEY,
        '--sandbox-delay-ms',
        '500',
        '--grep',
        'probes|unknown query parameter|tenant isolation',
        '--junit',
        junit,
        '--matrix',
        matrix,
      ],
      { cwd: dir },
    );
    assert.match(stdout, /passing/);
    const xml = readFileSync(junit, 'utf8');
    assert.match(xml, /<testsuites name="conformance" tests="\d+" failures="0"/);
    // The other lender's key was not given: those tests are skipped and say which option enables them.
    assert.match(xml, /<skipped message="pass --other-lender-key \(CONFORMANCE_OTHER_LENDER_KEY\) to run it"\/>/);
    const report = JSON.parse(readFileSync(`${matrix}.json`, 'utf8')) as { rows: Array<{ id: string; status: string }> };
    const status = (id: string) => report.rows.find((row) => row.id === id)?.status;
    assert.equal(status('op:getHealth 200'), 'pass');
    assert.equal(status('op:getBenchmark 400 validation_error'), 'pass');
    assert.equal(status('op:gdprExport 400 validation_error'), 'skip');
    assert.match(readFileSync(`${matrix}.md`, 'utf8'), /\| `op:getHealth 200` \| .* \| pass \|/);
  });
});
