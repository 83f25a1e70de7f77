import { ar } from './ar.ts';
import { de } from './de.ts';
import { en } from './en.ts';
import { es } from './es.ts';
import { fr } from './fr.ts';
import type { Messages } from './messages.ts';

export type { Messages } from './messages.ts';

/**
 * The creator's languages: the lenders served are in the EU, the UK and the DIFC. English first:
 * it is the answer when nothing in Accept-Language matches.
 */
export const LOCALES = ['en', 'de', 'fr', 'es', 'ar'] as const;
export type Locale = (typeof LOCALES)[number];

export const CATALOGUES: Record<Locale, Messages> = { en, de, fr, es, ar };

const RIGHT_TO_LEFT: ReadonlySet<Locale> = new Set(['ar']);

export const directionOf = (locale: Locale): 'ltr' | 'rtl' => (RIGHT_TO_LEFT.has(locale) ? 'rtl' : 'ltr');

export const isLocale = (value: unknown): value is Locale => typeof value === 'string' && (LOCALES as readonly string[]).includes(value);

/**
 * A moment in the creator's language, with the time zone named. The page has no script to learn
 * the creator's own zone, so times are shown in UTC and say so.
 */
export function formatDateTime(locale: Locale, iso: string): string {
  return new Intl.DateTimeFormat(locale, {
    year: 'numeric',
    month: 'long',
    day: 'numeric',
    hour: '2-digit',
    minute: '2-digit',
    timeZone: 'UTC',
    timeZoneName: 'short',
  }).format(new Date(iso));
}
