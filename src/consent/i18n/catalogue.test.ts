import assert from 'node:assert/strict';
import { CATALOGUES, directionOf, formatDateTime, LOCALES } from './catalogue.ts';
import type { Messages } from './messages.ts';

const keysOf = (messages: Messages) => Object.keys(messages).sort();
// Eleven months: a number no other parameter contains, and Arabic's plural for 11 to 99.
const PARAMETERS = { lender: 'Lender-Name-7', platform: 'Platform-Name-8', date: 'Date-Text-9', account: 'Account-Name-10', months: 11 };

describe('consent page catalogues', () => {
  it('every language has exactly the keys of English, no more, no fewer', () => {
    const english = keysOf(CATALOGUES.en);
    for (const locale of LOCALES) {
      const keys = keysOf(CATALOGUES[locale]);
      assert.deepEqual(
        english.filter((key) => !keys.includes(key)),
        [],
        `${locale} lacks keys`,
      );
      assert.deepEqual(
        keys.filter((key) => !english.includes(key)),
        [],
        `${locale} has keys English does not`,
      );
    }
  });

  it('every message is non-empty text, and every message with parameters uses each one English uses', () => {
    for (const locale of LOCALES) {
      for (const [key, value] of Object.entries(CATALOGUES[locale])) {
        const english = (CATALOGUES.en as unknown as Record<string, unknown>)[key];
        assert.equal(typeof value, typeof english, `${locale}.${key}: a ${typeof english} in English`);
        const text = typeof value === 'function' ? (value as (p: typeof PARAMETERS) => string)(PARAMETERS) : (value as string);
        assert.ok(text.trim().length > 0, `${locale}.${key} is empty`);
        if (typeof english === 'function') {
          const used = Object.values(PARAMETERS)
            .map(String)
            .filter((parameter) => (english as (p: typeof PARAMETERS) => string)(PARAMETERS).includes(parameter));
          for (const parameter of used) assert.ok(text.includes(parameter), `${locale}.${key} leaves out ${parameter}`);
        }
      }
    }
  });

  it('translations differ from English (a copied string is an untranslated one), but for names and technical scopes', () => {
    const same = new Set(['statusLabel']);
    for (const locale of LOCALES.filter((l) => l !== 'en')) {
      for (const [key, value] of Object.entries(CATALOGUES[locale])) {
        if (typeof value !== 'string' || same.has(key)) continue;
        assert.notEqual(value, (CATALOGUES.en as unknown as Record<string, string>)[key], `${locale}.${key} is the English text`);
      }
    }
  });

  it('Arabic is written right to left, the others left to right', () => {
    assert.deepEqual(
      LOCALES.map((locale) => directionOf(locale)),
      ['ltr', 'ltr', 'ltr', 'ltr', 'rtl'],
    );
  });

  it('dates are written in the language and name the time zone', () => {
    const at = '2026-11-28T10:00:00.000Z';
    // ICU's exact wording changes between releases; the month's name in the language and the zone do not.
    const months = { en: 'November', de: 'November', fr: 'novembre', es: 'noviembre', ar: 'نوفمبر' };
    for (const locale of LOCALES) assert.ok(formatDateTime(locale, at).includes(months[locale]), `${locale}: ${formatDateTime(locale, at)}`);
    for (const locale of LOCALES) assert.match(formatDateTime(locale, at), /UTC/);
  });
});
