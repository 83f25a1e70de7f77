// `npm run build` (and `npm start`, which builds first): the server and its tracing preload compiled
// from src/ by esbuild into two JavaScript files in .build/, which node runs without a TypeScript
// loader. tsx compiles in a loader thread of its own that stays for the life of the process, about
// 30 MB of a loaded server's resident memory (docs/performance.md); the bundles are built from the
// sources on every start, so they cannot drift from them. Packages stay in node_modules (imported,
// not bundled), and the sources' `import.meta.url` keeps pointing at each source file, relative to
// the bundle, so files they read beside them (the contract, the docs) are found as before. Tests build
// into a temporary directory of their own instead (`buildServer(dir)`), so that they write nothing
// into the checkout.
import { existsSync, mkdirSync, readFileSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build, type Plugin } from 'esbuild';

const root = new URL('..', import.meta.url).pathname;
const BUILD_DIR = join(root, '.build');

/** Each source's `import.meta.url` as its own file's URL, found from the bundle's at run time (so .build/ and src/ can move together). */
function sourceModuleUrls(outDir: string): Plugin {
  return {
    name: 'source-module-urls',
    setup(build) {
      build.onLoad({ filter: /\.ts$/ }, (args) => {
        const fromBundle = relative(outDir, args.path).split('\\').join('/');
        const contents = readFileSync(args.path, 'utf8').replaceAll('import.meta.url', `new URL(${JSON.stringify(fromBundle)}, import.meta.url).href`);
        return { contents, loader: 'ts' };
      });
    },
  };
}

/**
 * Builds both bundles and their source maps into `outDir` (.build/ unless told otherwise). Each file
 * is written beside its place and renamed into it, so a process starting meanwhile reads the previous
 * build or this one, never half of one.
 */
export async function buildServer(outDir = BUILD_DIR): Promise<{ server: string; tracing: string }> {
  const dir = resolve(outDir);
  const result = await build({
    entryPoints: { server: join(root, 'src/server.ts'), tracing: join(root, 'src/platform/tracing/tracing.ts') },
    outdir: dir,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    // Stack traces name the sources' lines when node runs with --enable-source-maps.
    sourcemap: 'linked',
    sourcesContent: false,
    plugins: [sourceModuleUrls(dir)],
    write: false,
    logLevel: 'warning',
  });
  mkdirSync(dir, { recursive: true });
  // The bundles import their packages (they are not bundled), which node looks for in a node_modules
  // beside or above them: outside the project, a link to the project's own.
  const packages = join(dir, 'node_modules');
  if (relative(root, dir).startsWith('..') && !existsSync(packages)) symlinkSync(join(root, 'node_modules'), packages, 'dir');
  for (const file of result.outputFiles) {
    const staging = join(dirname(file.path), `.${process.pid}.${relative(dir, file.path)}`);
    writeFileSync(staging, file.contents);
    renameSync(staging, file.path);
  }
  return { server: join(dir, 'server.js'), tracing: join(dir, 'tracing.js') };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await buildServer();
