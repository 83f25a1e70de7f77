import assert from 'node:assert/strict';
import { assertEventRequest, transitionRows, type TransitionRow } from './event-contract.ts';
import { forEachTarget, type Target } from './harness.ts';
import { assertResourceInvariants, randomReference, sleep, type Verification } from './sandbox.ts';
import { requireWebhooks, WebhookSession, type ReceiverEndpoint } from './webhooks.ts';

/**
 * Happy: a creator who does not want to share declines on the consent page. Driven as a browser
 * without JavaScript would: open the consent URL, follow the decline link, post the form it finds.
 * The verification must fail with `consent_declined` by the `x-transitions` row
 * `pending_consent -[consent_declined]-> failed`, and exactly one `verification.failed` event with
 * that reason must follow. The suite reads the pages' markup only for links and forms; it does not
 * depend on their wording or language.
 */

const DECLINE_ROW = { from: 'pending_consent', trigger: 'consent_declined', to: 'failed' } as const;

interface Page {
  status: number;
  url: string;
  location: string | null;
  contentType: string;
  body: string;
}

/** A browser's request: no API key, forms url-encoded, redirects shown rather than followed. */
async function browse(url: string, init: { method?: 'GET' | 'POST'; form?: Record<string, string> } = {}): Promise<Page> {
  const response = await fetch(url, {
    method: init.method ?? 'GET',
    redirect: 'manual',
    headers: { accept: 'text/html', ...(init.form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}) },
    body: init.form ? new URLSearchParams(init.form).toString() : undefined,
  });
  return {
    status: response.status,
    url,
    location: response.headers.get('location'),
    contentType: response.headers.get('content-type') ?? '',
    body: await response.text(),
  };
}

const attributes = (tag: string) =>
  Object.fromEntries([...tag.matchAll(/([a-z-]+)="([^"]*)"/g)].map(([, name, value]) => [name!, value!.replace(/&amp;/g, '&')]));

/** Every `<a href>` of the page, resolved against its URL. */
const linksOf = (page: Page) => [...page.body.matchAll(/<a\s[^>]*>/g)].map((m) => new URL(attributes(m[0]).href ?? '', page.url));

/** Every POST form's action, resolved against the page's URL. */
const postFormsOf = (page: Page) =>
  [...page.body.matchAll(/<form\s[^>]*>/g)]
    .map((m) => attributes(m[0]))
    .filter((form) => (form.method ?? 'get').toLowerCase() === 'post')
    .map((form) => new URL(form.action ?? '', page.url));

const endsWith = (url: URL, segment: string) => url.pathname.split('/').at(-1) === segment;

async function statusOf(session: WebhookSession, id: string): Promise<Verification> {
  return session.getVerification(id);
}

forEachTarget((target: Target) => {
  describe('happy: a creator declines on the consent page (reason consent_declined) [transition:pending_consent->failed] [event:verification.failed]', function () {
    this.timeout(60_000);
    let session: WebhookSession;
    let endpoint: ReceiverEndpoint | undefined;
    let rows: TransitionRow[];
    let created: Verification;
    let declined: Verification;
    let afterDecline: Page;

    before(async function () {
      rows = await transitionRows();
      session = await WebhookSession.open(target);
      if (!target.webhooks.unavailable) endpoint = await session.registerReceiver('consent-declined', ['verification.failed']);
      created = await session.createVerification(randomReference('conformance-decline-'), ['youtube', 'stripe']);
      assert.equal(created.status, 'pending_consent');

      const consent = await browse(created.consent_url);
      assert.equal(consent.status, 200, `GET ${created.consent_url}: ${consent.status}`);
      assert.match(consent.contentType, /^text\/html/);
      const declineLink = linksOf(consent).find((url) => endsWith(url, 'decline'));
      assert.ok(declineLink, 'the consent page links to a decline page');
      const confirmation = await browse(declineLink.toString());
      assert.equal(confirmation.status, 200, `GET ${declineLink.href}: ${confirmation.status}`);
      assert.equal((await statusOf(session, created.verification_id)).status, 'pending_consent', 'opening the decline page changes nothing');
      const form = postFormsOf(confirmation).find((url) => endsWith(url, 'decline'));
      assert.ok(form, 'the decline page has a form that declines');

      const posted = await browse(form.toString(), { method: 'POST', form: {} });
      assert.equal(posted.status, 303, `POST ${form.href}: ${posted.status} ${posted.body.slice(0, 200)}`);
      assert.ok(posted.location, 'the decline answers with where to look next');
      const next = new URL(posted.location, form);
      assert.equal(next.pathname, new URL(created.consent_url).pathname, 'after declining the creator is sent back to the consent URL');
      afterDecline = await browse(next.toString());
      declined = await statusOf(session, created.verification_id);
    });
    after(async () => {
      await session?.cleanup();
    });

    it(`the contract lists the move ${DECLINE_ROW.from} -[${DECLINE_ROW.trigger}]-> ${DECLINE_ROW.to}, emitting verification.failed`, () => {
      const row = rows.find((r) => r.from === DECLINE_ROW.from && r.trigger === DECLINE_ROW.trigger && r.to === DECLINE_ROW.to);
      assert.ok(row, `x-transitions: ${JSON.stringify(rows)}`);
      assert.equal(row.emits, 'verification.failed');
    });

    it('the verification is failed with failure_reason consent_declined, and stays so', async () => {
      assert.deepEqual([declined.status, declined.failure_reason], ['failed', 'consent_declined']);
      assertResourceInvariants(declined, created);
      assert.ok(Date.parse(declined.updated_at) >= Date.parse(created.updated_at), 'updated_at moved');
      await sleep(500);
      assert.deepEqual(await statusOf(session, created.verification_id), declined);
    });

    it('the consent URL now shows the outcome: an HTML page with no form left to post', () => {
      assert.equal(afterDecline.status, 200);
      assert.match(afterDecline.contentType, /^text\/html/);
      assert.deepEqual(postFormsOf(afterDecline), [], 'a declined link still offers a form');
      assert.doesNotMatch(afterDecline.body, /consent_declined|vrf_/, 'internal codes or ids on the creator page');
    });

    it('declining again changes nothing (no second event, same resource)', async () => {
      const form = new URL(`${new URL(created.consent_url).pathname}/decline`, created.consent_url);
      const again = await browse(form.toString(), { method: 'POST', form: {} });
      assert.ok(again.status < 500, `a second decline answered ${again.status}`);
      assert.deepEqual(await statusOf(session, created.verification_id), declined);
    });

    it('exactly one verification.failed event with reason consent_declined reaches the subscribed endpoint, signed and valid', async function () {
      requireWebhooks(this, target);
      assert.ok(endpoint);
      const mine = (requests: ReturnType<WebhookSession['receiver']['requestsTo']>) =>
        requests.filter((r) => (JSON.parse(r.rawBody.toString('utf8')) as { verification_id?: string }).verification_id === created.verification_id);
      await session.receiver.waitFor(endpoint.path, (requests) => mine(requests).length >= 1, 30_000, 'the verification.failed event');
      // Long enough for a duplicate to show itself.
      await sleep(1_000);
      const received = mine(session.receiver.requestsTo(endpoint.path));
      const eventIds = new Set(received.map((r) => (JSON.parse(r.rawBody.toString('utf8')) as { event_id: string }).event_id));
      assert.equal(eventIds.size, 1, `one event, got ${eventIds.size}`);
      const event = assertEventRequest(received[0]!, endpoint, rows);
      assert.equal(event.payload.event, 'verification.failed');
      assert.equal(event.payload.reason, 'consent_declined');
      assert.equal(event.payload.data.reason, 'consent_declined');
      assert.equal(event.payload.occurred_at, declined.updated_at, 'occurred_at is the time of the move');
    });
  });
});
