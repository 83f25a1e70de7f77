import assert from 'node:assert/strict';
import { convertToEuro, DEFAULT_RATE_TABLE, lastDayOfMonth, monthIndex, type RateTable } from './income.ts';

describe('tape/income', () => {
  it('converts with the ECB convention (units per euro) and rounds to cents', () => {
    const [usd, eur] = convertToEuro(DEFAULT_RATE_TABLE, [
      { month: '2026-01', currency: 'USD', amount: 108 },
      { month: '2026-01', currency: 'EUR', amount: 10.005 },
    ]);
    assert.deepEqual(usd, { month: '2026-01', sourceCurrency: 'USD', sourceAmount: 108, amountEur: 100 });
    assert.equal(eur!.amountEur, 10.01);
  });

  it('normalises the currency code and uses a replacement table', () => {
    const table: RateTable = { source: 'operator', asOf: '2026-06-30', unitsPerEur: { USD: 1.25 } };
    const [r] = convertToEuro(table, [{ month: '2026-01', currency: 'usd', amount: 50 }]);
    assert.equal(r!.sourceCurrency, 'USD');
    assert.equal(r!.amountEur, 40);
  });

  it('marks a currency without a usable rate as unconvertible instead of guessing', () => {
    const table: RateTable = { source: 't', asOf: '2026-01-01', unitsPerEur: { ZERO: 0, NEG: -2, NAN: Number.NaN } };
    const rows = convertToEuro(
      table,
      ['XYZ', 'ZERO', 'NEG', 'NAN', 'toString'].map((currency) => ({ month: '2026-01', currency, amount: 10 })),
    );
    assert.deepEqual(
      rows.map((r) => r.amountEur),
      [null, null, null, null, null],
    );
    assert.equal(convertToEuro(DEFAULT_RATE_TABLE, [{ month: '2026-01', currency: 'EUR', amount: Number.NaN }])[0]!.amountEur, null);
  });

  it('parses months strictly and finds the last day of a month', () => {
    assert.equal(monthIndex('2026-03') - monthIndex('2025-12'), 3);
    for (const bad of ['2026-13', '2026-00', '2026-1', '26-01', '2026/01', '2026-01-01', 'abcd-ef']) assert.throws(() => monthIndex(bad), TypeError, bad);
    assert.equal(lastDayOfMonth(monthIndex('2028-02')), '2028-02-29');
    assert.equal(lastDayOfMonth(monthIndex('2026-02')), '2026-02-28');
    assert.equal(lastDayOfMonth(monthIndex('2026-12')), '2026-12-31');
  });
});
