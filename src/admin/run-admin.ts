import { spawn } from 'node:child_process';
import { once } from 'node:events';

const root = new URL('../..', import.meta.url).pathname;

/** `lender create --json`: the new account, in snake_case. */
export interface CreatedLender {
  id: string;
  name: string;
  plan: string;
  jurisdiction: string;
  [field: string]: unknown;
}

/** `key create --json`: the key's record with the key itself, shown this once. */
export interface CreatedKey {
  id: string;
  api_key: string;
  role: string;
  lender_id: string;
  [field: string]: unknown;
}

/**
 * Runs the operator CLI as its own process, as an operator would, and returns its `--json` output.
 * For benchmarks and tests that drive a separately started server.
 */
export function runAdmin(env: Record<string, string>, args: ['lender', 'create', ...string[]]): Promise<CreatedLender>;
export function runAdmin(env: Record<string, string>, args: ['key', 'create', ...string[]]): Promise<CreatedKey>;
export function runAdmin(env: Record<string, string>, args: string[]): Promise<unknown>;
export async function runAdmin(env: Record<string, string>, args: string[]): Promise<unknown> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/admin/cli.ts', ...args, '--json'], { cwd: root, env: { ...process.env, ...env } });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const [code] = (await once(child, 'exit')) as [number | null, NodeJS.Signals | null];
  if (code !== 0) throw new Error(`admin ${args.join(' ')} failed: ${err.trim()}`);
  return JSON.parse(out);
}
