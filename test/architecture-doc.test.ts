// docs/architecture.md is the page a newcomer reads first: its table of folders must name every
// production file of src/ and no file that is gone. The rule for what a row names is the page's own
// ("Folders and what each owns"); this file is its executable form.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, posix } from 'node:path';

const ROOT = new URL('..', import.meta.url).pathname;
const PAGE = readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8');

/** A backticked path to a file, from the project's root or from a row's folder. */
const FILE = /^[\w@.-]+(?:\/[\w@.-]+)*\.(?:ts|json|md|js|cjs|yaml|sh)$/;
const FOLDER = /^[\w@.-]+(?:\/[\w@.-]+)*\/$/;
/** Paths that start at the project's root rather than at the row's folder. */
const FROM_ROOT = /^(?:src|test|docs|scripts|spec|generated|conformance|clients|ops)\//;
/** What follows a subfolder that a row says holds one file per operation, per migration or per page or action. */
const ONE_FILE_PER = /^ \(one file per (operation|migration|page or action)\b/;

const isTest = (path: string) => path.endsWith('.test.ts');

/** Every file under `dir` (from the root), as paths from the root with `/`. */
function filesUnder(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => posix.join(posix.relative(ROOT, entry.parentPath), entry.name));
}

/** The operationIds of the contract: the names a handler folder's files must have. */
const OPERATION_IDS = new Set(
  Object.values(
    (JSON.parse(readFileSync(join(ROOT, 'generated/openapi.json'), 'utf8')) as { paths: Record<string, Record<string, { operationId?: string }>> }).paths,
  )
    .flatMap((item) => Object.values(item))
    .flatMap((operation) => (typeof operation === 'object' && operation?.operationId ? [operation.operationId] : [])),
);

/** Whether `file`, directly in a folder said to hold one file per `kind`, is such a file. */
function isOneOf(kind: string, file: string): boolean {
  const name = posix.basename(file, '.ts');
  if (kind === 'operation') return file.endsWith('.ts') && OPERATION_IDS.has(name);
  if (kind === 'page or action') {
    // A page's handlers are whatever the one routes file beside them assembles, in its order.
    const folder = join(ROOT, posix.dirname(file));
    const routes = readdirSync(folder).filter((entry) => entry.endsWith('-routes.ts'));
    return (
      file.endsWith('.ts') && routes.length === 1 && `${name}.ts` !== routes[0] && readFileSync(join(folder, routes[0]!), 'utf8').includes(`'./${name}.ts'`)
    );
  }
  const index = join(ROOT, posix.dirname(file), 'index.ts');
  return file.endsWith('.ts') && name !== 'index' && existsSync(index) && readFileSync(index, 'utf8').includes(`'./${name}.ts'`);
}

export interface Row {
  /** The first cell: a folder (`src/platform/`) or a file (`src/operations.ts`). */
  folder: string;
  /** The other cells. */
  text: string;
}

/** The rows of the table headed `| Folder |`. */
export function rowsOf(page: string): Row[] {
  const lines = page.split('\n');
  const start = lines.findIndex((line) => line.startsWith('| Folder |'));
  assert.ok(start >= 0, 'docs/architecture.md has no table headed "Folder"');
  const rows: Row[] = [];
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith('|')) break;
    const [, first, ...rest] = line.split('|');
    rows.push({ folder: first!.trim().replaceAll('`', ''), text: rest.join('|') });
  }
  return rows;
}

/**
 * What a row names, given the files there are (paths from the root): the files it names, and what
 * it names that is not there (or is not what the row says it is).
 */
export function namedBy(row: Row, files: readonly string[]): { named: Set<string>; problems: string[] } {
  const named = new Set<string>();
  const problems: string[] = [];
  const oneFilePer: Array<{ token: string; folder: string; kind: string }> = [];
  const inFolder = row.folder.endsWith('/') ? files.filter((file) => file.startsWith(row.folder)) : [];
  const folders = new Set(
    inFolder.flatMap((file) =>
      file
        .split('/')
        .slice(0, -1)
        .map((_, i, parts) => parts.slice(0, i + 1).join('/') + '/'),
    ),
  );
  /** The one path of `candidates` that is `token` from the row's folder or ends with it. */
  const resolve = (token: string, candidates: Iterable<string>): string | undefined => {
    const all = [...candidates];
    const exact = all.find((path) => path === row.folder + token);
    if (exact) return exact;
    const ends = all.filter((path) => path.startsWith(row.folder) && path.endsWith(`/${token}`));
    if (ends.length > 1) problems.push(`${row.folder}: \`${token}\` could be any of ${ends.join(', ')}`);
    return ends.length === 1 ? ends[0] : undefined;
  };
  for (const match of row.text.matchAll(/`([^`\n]+)`/g)) {
    const token = match[1]!;
    if (FILE.test(token)) {
      if (FROM_ROOT.test(token)) {
        if (files.includes(token) || (!token.startsWith(row.folder) && existsSync(join(ROOT, token)))) named.add(token);
        else problems.push(`${row.folder}: \`${token}\` is not there`);
        continue;
      }
      const file = resolve(token, inFolder);
      if (file) named.add(file);
      else problems.push(`${row.folder}: \`${token}\` is not there`);
    } else if (FOLDER.test(token)) {
      const folder = FROM_ROOT.test(token) && !row.folder.endsWith('/') ? token : (resolve(token, folders) ?? (FROM_ROOT.test(token) ? token : undefined));
      if (!folder || !(folders.has(folder) || existsSync(join(ROOT, folder)))) {
        problems.push(`${row.folder}: \`${token}\` is not there`);
        continue;
      }
      const kind = ONE_FILE_PER.exec(row.text.slice(match.index + match[0].length))?.[1];
      if (kind) oneFilePer.push({ token, folder, kind });
    }
  }
  // After the files named one by one, which such a folder may hold beside the others (its index.ts).
  for (const { token, folder, kind } of oneFilePer) {
    for (const file of inFolder.filter((path) => posix.dirname(path) + '/' === folder && !isTest(path) && !named.has(path))) {
      if (isOneOf(kind, file)) named.add(file);
      else problems.push(`${row.folder}: \`${token}\` holds one file per ${kind}, but ${file} is none`);
    }
  }
  return { named, problems };
}

/** The production files of src/ no row names, and what rows name that is not there. */
export function checkPage(page: string, files: readonly string[]): { unnamed: string[]; problems: string[] } {
  const rows = rowsOf(page);
  const results = rows.map((row) => ({ row, ...namedBy(row, files) }));
  const unnamed = files
    .filter((file) => file.startsWith('src/') && !isTest(file))
    .filter((file) => !results.some(({ row, named }) => row.folder === file || named.has(file)));
  const problems = results.flatMap(({ problems }) => problems);
  for (const row of rows.filter((row) => !row.folder.endsWith('/'))) if (!files.includes(row.folder)) problems.push(`${row.folder} is not there`);
  return { unnamed, problems };
}

/**
 * Paths the rest of the page prints: backticked ones from the root (`src/operations.ts`), and in its
 * diagrams the files of src/ (`platform/db/unit-of-work.ts`). Placeholders (`<feature>`) are not paths.
 */
function pathsOutsideTheTable(page: string): string[] {
  const paths = [...page.matchAll(/`([^`\n<>*]+)`/g)].map((match) => match[1]!).filter((token) => FROM_ROOT.test(token) && FILE.test(token));
  for (const [, block] of page.matchAll(/```\n([\s\S]*?)```/g)) {
    for (const [, path] of block!.matchAll(/(?<![\w<>/-])((?:[a-z-]+\/)+[\w.-]+\.ts)\b/g)) paths.push(FROM_ROOT.test(path!) ? path! : `src/${path}`);
  }
  return paths;
}

const FOLDERS_OF_ROWS = rowsOf(PAGE)
  .map((row) => (row.folder.endsWith('/') ? row.folder : posix.dirname(row.folder) + '/'))
  .filter((folder, index, all) => all.indexOf(folder) === index && existsSync(join(ROOT, folder)));
const FILES = [...new Set(FOLDERS_OF_ROWS.flatMap((folder) => filesUnder(folder)))];

describe('docs/architecture.md', () => {
  it('names every production file of src/ in a row of its folder, and no file that is gone', () => {
    const { unnamed, problems } = checkPage(PAGE, FILES);
    assert.deepEqual(problems, []);
    assert.deepEqual(unnamed, []);
  });

  it('prints only paths that exist, outside its table too', () => {
    const paths = pathsOutsideTheTable(PAGE);
    assert.ok(paths.length > 10, `only ${paths.length} paths found: the rule no longer reads the page`);
    assert.deepEqual(
      paths.filter((path) => !existsSync(join(ROOT, path))),
      [],
    );
  });

  it('finds a stray file, a renamed one and a file in a handler folder that is no handler or page', () => {
    const stray = 'src/platform/stray.ts';
    const renamed = FILES.map((file) => (file === 'src/platform/clock.ts' ? 'src/platform/clocks.ts' : file));
    assert.deepEqual(checkPage(PAGE, [...FILES, stray]).unnamed, [stray]);
    const afterRename = checkPage(PAGE, renamed);
    assert.deepEqual(afterRename.unnamed, ['src/platform/clocks.ts']);
    assert.deepEqual(afterRename.problems, ['src/platform/: `clock.ts` is not there']);
    const notAHandler = checkPage(PAGE, [...FILES, 'src/verifications/http/helpers.ts']);
    assert.deepEqual(notAHandler.unnamed, ['src/verifications/http/helpers.ts']);
    assert.equal(notAHandler.problems.length, 1);
    const notAPage = checkPage(PAGE, [...FILES, 'src/dashboard/http/helpers.ts']);
    assert.deepEqual(notAPage.unnamed, ['src/dashboard/http/helpers.ts']);
    assert.equal(notAPage.problems.length, 1);
  });
});
