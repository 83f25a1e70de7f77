import assert from 'node:assert/strict';
import { personalDataIn } from './obligor-reference.ts';

describe('obligor references', () => {
  it('refuses blank ones, email addresses and phone numbers written as such, saying why', () => {
    for (const blank of [' ', '   ', '\t \u00a0']) assert.equal(personalDataIn(blank), 'must not be blank', JSON.stringify(blank));
    for (const email of ['ana.creator@example.com', 'crm 4411 ana@example.co.uk', 'x+tag@sub.example.org'])
      assert.match(personalDataIn(email) ?? '', /email address/, email);
    for (const phone of ['+44 20 7946 0958', '+4915112345678', '(555) 123-4567', '07700 900123', '555 123 4567'])
      assert.match(personalDataIn(phone) ?? '', /phone number/, phone);
  });

  it("leaves a lender's own ids alone, however they are spelt", () => {
    for (const id of [
      'obligor-4411',
      '0012345678',
      '2024-11-0001',
      '12.345.678',
      'crm:4411@batch7',
      'demo_prime_multi',
      'test-fail-0001',
      'CUST 42',
      '+1',
      'A (B) 12',
    ]) {
      assert.equal(personalDataIn(id), null, id);
    }
  });
});
