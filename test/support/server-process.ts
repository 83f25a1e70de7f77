import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildServer } from '../../scripts/build.ts';
import { freePort } from './free-port.ts';
import { refuseInQuickTier } from './tiers.ts';

const root = new URL('../..', import.meta.url).pathname;

/**
 * The Node flags the server runs with: `npm start` and the Dockerfile's CMD pass the same (a test in
 * src/server.test.ts keeps them equal), and so do the tests and benchmarks that start a server
 * process. A young generation of 2 MB semi-spaces instead of V8's 16 MB default keeps a loaded
 * server smaller with no loss of throughput measured (docs/performance.md). Source maps make stack
 * traces name the lines of src/, not of the bundle that runs (scripts/build.ts).
 */
export const SERVER_NODE_FLAGS = ['--max-semi-space-size=2', '--enable-source-maps'];

let built: Promise<{ server: string; tracing: string }> | undefined;

/** A temporary directory, removed when this process exits: tests write nothing into the checkout. */
function temporaryDirectory(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * The bundles a server process runs (scripts/build.ts), built once per test or benchmark process into
 * a temporary directory rather than the checkout's .build/.
 */
export function serverBundles(): Promise<{ server: string; tracing: string }> {
  return (built ??= buildServer(temporaryDirectory('civ-server-build-')));
}

/**
 * What node runs to start the server as `npm start` does: the server's flags, the tracing preload
 * and the bundle built from src/. A test in src/server.test.ts keeps this equal to npm start and the
 * Dockerfile's CMD.
 */
export async function serverProcessArgs(options: { nodeArgs?: string[] } = {}): Promise<string[]> {
  refuseInQuickTier('starts a server process');
  const bundles = await serverBundles();
  return [...SERVER_NODE_FLAGS, ...(options.nodeArgs ?? []), '--import', bundles.tracing, bundles.server];
}

/**
 * A directory to run `npm start` in as if it were the checkout, so that its build lands there and not
 * in the checkout's .build/: every entry of the checkout linked, except scripts/build.ts, copied, since
 * the build writes beside the project it finds itself in.
 */
export function checkoutForNpmStart(): string {
  refuseInQuickTier('starts a server process');
  const dir = temporaryDirectory('civ-npm-start-');
  for (const entry of readdirSync(root)) {
    if (entry === '.build' || entry === '.git' || entry === 'scripts') continue;
    symlinkSync(join(root, entry), join(dir, entry));
  }
  mkdirSync(join(dir, 'scripts'));
  cpSync(join(root, 'scripts', 'build.ts'), join(dir, 'scripts', 'build.ts'));
  return dir;
}

/** CPU time (user + system, all threads) a process has used so far, in µs (Linux /proc; 0 elsewhere). */
export function cpuMicros(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    // utime and stime, in clock ticks of 10 ms.
    return (Number(fields[11]) + Number(fields[12])) * 10_000;
  } catch {
    return 0;
  }
}

/** Every line a server process wrote, stdout and stderr in the order they arrived. */
export interface ProcessOutput {
  lines: Array<{ stream: 'stdout' | 'stderr'; text: string }>;
}

/**
 * A real server process, as `npm start` runs it, on a free loopback port: for tests that kill it.
 * `env` adds to (and overrides) the test's own environment, `nodeArgs` go to node (a profiler's flags);
 * the base URL is returned once `/readyz` answers. With `output`, both streams are kept there line by
 * line instead of stdout being dropped and stderr passed on.
 */
export async function startServerProcess(
  env: Record<string, string>,
  options: { nodeArgs?: string[]; output?: ProcessOutput } = {},
): Promise<{ child: ChildProcess; base: string }> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const { output } = options;
  const child = spawn(process.execPath, await serverProcessArgs(options), {
    cwd: root,
    env: { ...process.env, PORT: String(port), LOG_LEVEL: 'error', ...env },
    stdio: output ? ['ignore', 'pipe', 'pipe'] : ['ignore', 'ignore', 'inherit'],
  });
  if (output) {
    for (const stream of ['stdout', 'stderr'] as const) {
      let partial = '';
      child[stream]!.setEncoding('utf8').on('data', (chunk: string) => {
        const parts = (partial + chunk).split('\n');
        partial = parts.pop()!;
        for (const text of parts) output.lines.push({ stream, text });
      });
    }
  }
  for (let i = 0; i < 200; i++) {
    if (child.exitCode !== null) throw new Error('server exited during start-up');
    try {
      if ((await fetch(`${base}/readyz`)).ok) return { child, base };
    } catch {
      // Not listening yet.
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill('SIGKILL');
  throw new Error('server did not become ready');
}

/** Stops a child process and waits for it to be gone: SIGTERM, then SIGKILL after 10 s. */
export async function stopProcess(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}
