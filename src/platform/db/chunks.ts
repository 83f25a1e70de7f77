/** `items` in slices of at most `size`: one statement per slice keeps under SQLite's limit of bound values. */
export const chunks = <T>(items: T[], size: number): T[][] =>
  Array.from({ length: Math.ceil(items.length / size) }, (_, i) => items.slice(i * size, (i + 1) * size));
