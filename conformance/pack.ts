import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * `npm pack` in conformance/: `prepare` compiles the suite to dist/ and copies in what it reads at run
 * time (the published spec/ and the test-CA script), so the tarball runs without the repository;
 * `clean` removes them again after packing, so the repository keeps one spec/.
 */

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));
const COPIES = [
  { from: '../spec', to: 'spec' },
  { from: '../scripts/make-test-ca.sh', to: 'scripts/make-test-ca.sh' },
];

function clean(): void {
  for (const path of ['dist', 'spec', 'scripts']) rmSync(here(path), { recursive: true, force: true });
}

function prepare(): void {
  clean();
  execFileSync(process.execPath, [here('../node_modules/typescript/bin/tsc'), '-p', here('tsconfig.build.json')], { stdio: 'inherit' });
  mkdirSync(here('scripts'), { recursive: true });
  for (const { from, to } of COPIES) cpSync(here(from), here(to), { recursive: true });
}

const command = process.argv[2];
if (command === 'prepare') prepare();
else if (command === 'clean') clean();
else throw new Error(`usage: tsx pack.ts prepare|clean, not ${command}`);
