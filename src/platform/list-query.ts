import { DomainError } from './domain-error.ts';

// What every list operation checks of its query the same way (GET /verifications, an endpoint's
// delivery log): its time range and its cursors.

/** A `created_gte` or `created_lt` as the rows store times (ISO 8601, UTC), or a validation error naming it. */
export function instant(value: string | undefined, field: string): string | undefined {
  if (value === undefined) return undefined;
  const at = new Date(value);
  if (Number.isNaN(at.getTime())) throw new DomainError('invalid', `${field} is not a date-time`, `query.${field}`);
  return at.toISOString();
}

/** A page goes one way: a request with both cursors is refused rather than answered with either. */
export function oneCursor(query: { starting_after?: string | undefined; ending_before?: string | undefined }): void {
  if (query.starting_after !== undefined && query.ending_before !== undefined) {
    throw new DomainError('invalid', 'starting_after and ending_before: give one cursor, not both', 'query.ending_before');
  }
}
