import type { Knex } from 'knex';

/**
 * A list's filter on several statuses, compared as `status || ''`, an expression no index serves:
 * the list's own index is then still read in its order and its rows filtered, stopping once the
 * page is full, rather than a status index read whole and sorted.
 */
export function whereStatusAmong(query: Knex.QueryBuilder, statuses: readonly string[]): void {
  void query.andWhereRaw(`status || '' in (${statuses.map(() => '?').join(', ')})`, [...statuses]);
}
