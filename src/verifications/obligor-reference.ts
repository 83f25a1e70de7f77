// The lender's reference for a creator must not be personal data (the description, 4.1): it is
// shown on the creator's pages, kept in logs' request lines of the lender's lists and in the
// lender's exports. What is plainly personal data is refused at creation, saying why; a lender's
// own ids, however they are spelt, pass.

const EMAIL = /[^\s@]+@[^\s@]+\.[^\s@]+/;
/** A phone number as people write one: only digits and the usual separators. */
const PHONE_CHARACTERS = /^\+?[\d\s().-]+$/;

/**
 * Why `reference` cannot be an obligor reference, or null. A phone number is one written as such:
 * with a leading `+`, an area code in parentheses or digit groups separated by spaces, 7 to 15
 * digits. Digits alone or joined by dashes or dots (`0012345678`, `2024-11-0001`) are left alone:
 * lenders' own ids look like that too.
 */
export function personalDataIn(reference: string): string | null {
  if (reference.trim() === '') return 'must not be blank';
  if (EMAIL.test(reference)) return 'looks like an email address; use your own id for the creator, never personal data';
  if (PHONE_CHARACTERS.test(reference)) {
    const digits = reference.replace(/\D/g, '').length;
    const writtenAsPhone = reference.trim().startsWith('+') || reference.includes('(') || /\d\s+\d/.test(reference);
    if (digits >= 7 && digits <= 15 && writtenAsPhone) return 'looks like a phone number; use your own id for the creator, never personal data';
  }
  return null;
}
