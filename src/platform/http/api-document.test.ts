import assert from 'node:assert/strict';
import { loadApiDocument, withPathsAlone, type ApiDocument } from './api-document.ts';

/** Every `$ref` string anywhere in `value`. */
function refsIn(value: unknown): string[] {
  if (Array.isArray(value)) return value.flatMap(refsIn);
  if (typeof value !== 'object' || value === null) return [];
  return Object.entries(value).flatMap(([key, child]) => (key === '$ref' && typeof child === 'string' ? [child] : refsIn(child)));
}

/** The component a `#/components/<section>/<name>` reference names in `doc`, if it has it. */
function resolve(doc: ApiDocument, ref: string): unknown {
  const [, , section, name] = ref.split('/');
  return (doc.components as Record<string, Record<string, unknown> | undefined>)[section!]?.[name!];
}

describe('a document with some of its paths alone (withPathsAlone)', () => {
  const whole = loadApiDocument();

  it('keeps every component its paths reach, and each reference resolves in it', () => {
    for (const path of Object.keys(whole.paths)) {
      const alone = withPathsAlone(whole, [path]);
      assert.deepEqual(Object.keys(alone.paths), [path]);
      const dangling = refsIn(alone).filter((ref) => resolve(alone, ref) === undefined);
      assert.deepEqual(dangling, [], path);
      assert.deepEqual(alone.components?.securitySchemes, whole.components?.securitySchemes, 'every security scheme');
    }
  });

  it('keeps no component its paths do not reach', () => {
    const status = withPathsAlone(whole, ['/api/v1/verifications/{verification_id}']);
    assert.ok(whole.components!.schemas!.Webhook, 'the whole document has the webhook');
    assert.equal(status.components!.schemas!.Webhook, undefined, 'a verification status never reaches it');
    const reached = new Set(refsIn(status));
    const kept = Object.entries(status.components!).flatMap(([section, named]) =>
      section === 'securitySchemes' ? [] : Object.keys(named as object).map((name) => `#/components/${section}/${name}`),
    );
    assert.deepEqual(
      kept.filter((ref) => !reached.has(ref)),
      [],
      'only components something refers to',
    );
  });

  it('refuses a reference to a component the document does not have, or into one', () => {
    const broken = loadApiDocument();
    const operation = broken.paths['/healthz']!.get!;
    operation.responses!['200']!.content!['application/json']!.schema = { $ref: '#/components/schemas/NoSuchThing' };
    assert.throws(() => withPathsAlone(broken, ['/healthz']), /#\/components\/schemas\/NoSuchThing: not a component/);
    operation.responses!['200']!.content!['application/json']!.schema = { $ref: '#/components/schemas/Health/properties/status' };
    assert.throws(() => withPathsAlone(broken, ['/healthz']), /Health\/properties\/status: not a component/);
    operation.responses!['200']!.content!['application/json']!.schema = { $ref: '#/components/schemas/constructor' };
    assert.throws(() => withPathsAlone(broken, ['/healthz']), /schemas\/constructor: not a component/, 'a name every object has');
  });
});
