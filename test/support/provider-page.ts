import assert from 'node:assert/strict';

/** Submits the provider's consent form the way a browser would: hidden fields, ticked boxes, the pressed button. */
export async function pressOnProviderPage(pageUrl: string, buttonText: string, account?: string): Promise<URL> {
  const page = await fetch(pageUrl);
  assert.equal(page.status, 200, await page.clone().text());
  const html = await page.text();
  const form = [...html.matchAll(/<form\b[^>]*action="([^"]*)"[^>]*>([\s\S]*?)<\/form>/g)].find(
    (m) => new RegExp(`>${buttonText}</button>`).test(m[2]!) && (!account || m[2]!.includes(account)),
  );
  assert.ok(form, `no ${buttonText} button${account ? ` for ${account}` : ''} on ${pageUrl}`);
  const body = new URLSearchParams();
  for (const input of form[2]!.matchAll(/<input\b([^>]*)>/g)) {
    const attr = (name: string) => new RegExp(`${name}="([^"]*)"`).exec(input[1]!)?.[1];
    if (attr('type') === 'checkbox' && !/\bchecked\b/.test(input[1]!)) continue;
    if (attr('name')) body.append(attr('name')!, (attr('value') ?? '').replace(/&amp;/g, '&'));
  }
  const button = new RegExp(`<button[^>]*name="([^"]*)"[^>]*value="([^"]*)"[^>]*>${buttonText}</button>`).exec(form[2]!);
  assert.ok(button);
  body.append(button[1]!, button[2]!);
  const answer = await fetch(new URL(form[1]!, pageUrl), {
    method: 'POST',
    body,
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });
  assert.equal(answer.status, 302, await answer.text());
  return new URL(answer.headers.get('location')!);
}

/**
 * The `name=value` of the cookie that binds an OAuth round trip to the browser that began it, from
 * the connect answer's Set-Cookie: what a browser would send back at the callback.
 */
export function bindingCookieOf(setCookie: readonly string[] | string | undefined): string {
  const found = [setCookie ?? []].flat().find((cookie) => /^(__Host-)?consent_oauth_/.test(cookie));
  assert.ok(found, 'the connect answer set no browser binding cookie');
  return found.split(';')[0]!;
}
