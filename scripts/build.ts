// `npm run build` (and `npm start`, which builds first): the server and its tracing preload compiled
// from src/ by esbuild into two JavaScript files in .build/, which node runs without a TypeScript
// loader. tsx compiles in a loader thread of its own that stays for the life of the process, about
// 30 MB of a loaded server's resident memory (docs/performance.md); the bundles are built from the
// sources on every start, so they cannot drift from them. Packages stay in node_modules (imported,
// not bundled), and the sources' `import.meta.url` keeps pointing at each source file, relative to
// the bundle, so files they read beside them (the contract, the docs) are found as before.
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
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
 * Builds both bundles and their source maps. Each file is written beside its place and renamed into
 * it, so a process starting meanwhile reads the previous build or this one, never half of one.
 */
export async function buildServer(): Promise<{ server: string; tracing: string }> {
  const result = await build({
    entryPoints: { server: join(root, 'src/server.ts'), tracing: join(root, 'src/platform/tracing/tracing.ts') },
    outdir: BUILD_DIR,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    // Stack traces name the sources' lines when node runs with --enable-source-maps.
    sourcemap: 'linked',
    sourcesContent: false,
    plugins: [sourceModuleUrls(BUILD_DIR)],
    write: false,
    logLevel: 'warning',
  });
  mkdirSync(BUILD_DIR, { recursive: true });
  for (const file of result.outputFiles) {
    const staging = join(dirname(file.path), `.${process.pid}.${relative(BUILD_DIR, file.path)}`);
    writeFileSync(staging, file.contents);
    renameSync(staging, file.path);
  }
  return { server: join(BUILD_DIR, 'server.js'), tracing: join(BUILD_DIR, 'tracing.js') };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await buildServer();
