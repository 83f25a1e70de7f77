import { spawn } from 'node:child_process';
import { once } from 'node:events';

const root = new URL('../..', import.meta.url).pathname;

/**
 * Runs the operator CLI as its own process, as an operator would, and returns its `--json` output.
 * For benchmarks and tests that drive a separately started server.
 */
export async function runAdmin(env: Record<string, string>, args: string[]): Promise<any> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/admin/cli.ts', ...args, '--json'], { cwd: root, env: { ...process.env, ...env } });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (err += d));
  const [code] = await once(child, 'exit');
  if (code !== 0) throw new Error(`admin ${args.join(' ')} failed: ${err.trim()}`);
  return JSON.parse(out);
}
