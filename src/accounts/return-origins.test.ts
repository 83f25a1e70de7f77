import assert from 'node:assert/strict';
import { checkReturnUrl, parseReturnOrigins, returnLink } from './return-origins.ts';

describe('return origins', () => {
  it('registers origins as scheme, host and port, https or a loopback http, without repeats', () => {
    assert.deepEqual(
      parseReturnOrigins(['https://App.Example.com', ' https://app.example.com:8443 ', 'http://localhost:3000', 'http://127.0.0.1', 'http://[::1]:8080']),
      ['https://app.example.com', 'https://app.example.com:8443', 'http://localhost:3000', 'http://127.0.0.1', 'http://[::1]:8080'],
    );
    assert.deepEqual(
      parseReturnOrigins(['https://a.example', 'https://a.example:443', 'https://a.example/', '', '  ']),
      ['https://a.example'],
      'repeats and blanks left out',
    );
  });

  it('refuses what is not an origin, with the entry in the message', () => {
    for (const [entry, why] of [
      ['app.example.com', /not an origin/],
      ['http://app.example.com', /must be https/],
      ['https://app.example.com/path', /scheme, host and port only/],
      ['https://app.example.com?x=1', /scheme, host and port only/],
      ['https://user:pw@app.example.com', /user name or password/],
      ['https://app.example.com#x', /fragment/],
      ['ftp://app.example.com', /must be https/],
      ['javascript:alert(1)', /must be https/],
    ] as const) {
      assert.throws(
        () => parseReturnOrigins([entry]),
        (error: Error) => why.test(error.message) && error.message.includes(entry),
        entry,
      );
    }
    const many = Array.from({ length: 21 }, (_, i) => `https://app${i}.example`);
    assert.throws(() => parseReturnOrigins(many), /at most 20/);
  });

  it('takes a return URL only on a registered origin, as the URL parser normalises it', () => {
    const origins = ['https://app.example.com', 'http://localhost:3000'];
    assert.deepEqual(checkReturnUrl('https://APP.example.com/back?step=3', origins), { url: 'https://app.example.com/back?step=3' });
    assert.deepEqual(checkReturnUrl('http://localhost:3000/done', origins), { url: 'http://localhost:3000/done' });
    for (const url of [
      'https://app.example.com.evil.example/back',
      'https://evil.example/?https://app.example.com',
      'https://app.example.com:8443/back',
      'http://app.example.com/back',
      'http://localhost:3001/done',
      '//app.example.com/back',
      'https://user@app.example.com/back',
      'https://app.example.com/back#top',
    ]) {
      assert.ok('refused' in checkReturnUrl(url, origins), url);
    }
    assert.ok('refused' in checkReturnUrl('https://app.example.com/back', []), 'no registered origin, no return URL');
  });

  it('links back with the verification and its outcome added, the rest of the query kept', () => {
    const link = new URL(returnLink('https://app.example.com/back?step=3&outcome=forged', 'vrf_1', 'cancelled'));
    assert.equal(link.origin + link.pathname, 'https://app.example.com/back');
    assert.deepEqual(
      [...link.searchParams.entries()],
      [
        ['step', '3'],
        ['outcome', 'cancelled'],
        ['verification_id', 'vrf_1'],
      ],
    );
  });
});
