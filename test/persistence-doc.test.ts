import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
// The whole service, so that the statements it makes when its modules load are made.
import '../src/service.ts';
import { hotStatementsMade } from '../src/platform/db/hot-statements.ts';
import { namedStatementsMade } from '../src/platform/db/named-statements.ts';

const doc = readFileSync(new URL('../docs/persistence.md', import.meta.url), 'utf8');

/** The first column of the table whose header row begins with `| <header> |`. */
function firstColumnOf(header: string): string[] {
  const lines = doc.split('\n');
  const start = lines.findIndex((line) => line.startsWith(`| ${header} |`));
  assert.ok(start >= 0, `docs/persistence.md has no table headed "${header}"`);
  const names: string[] = [];
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith('|')) break;
    names.push(line.split('|')[1]!.trim().replaceAll('`', ''));
  }
  return names;
}

// Statements tests make for themselves are named `test_…`.
describe('docs/persistence.md', () => {
  it('lists every named statement the service makes, and none it does not', () => {
    assert.deepEqual(firstColumnOf('Named statement').sort(), [...namedStatementsMade.keys()].filter((name) => !name.startsWith('test_')).sort());
  });

  it('lists every hot statement the service makes, and none it does not', () => {
    assert.deepEqual(firstColumnOf('Hot statement').sort(), [...hotStatementsMade.keys()].filter((name) => !name.startsWith('test_')).sort());
  });

  it('names every file of src/platform/db/, and no file that is gone', () => {
    const files = readdirSync(new URL('../src/platform/db/', import.meta.url), { withFileTypes: true })
      .filter((entry) => !entry.name.endsWith('.test.ts'))
      .map((entry) => (entry.isDirectory() ? `${entry.name}/` : entry.name));
    assert.deepEqual(firstColumnOf('File').sort(), files.sort());
  });
});
