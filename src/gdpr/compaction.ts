import { COMPACTED_TABLES } from './personal-data.ts';
import type { Rewritten, StorageRepository } from './storage-repository.ts';

export interface Compaction {
  tables: Rewritten[];
  /** The longest any one table was locked, in ms. */
  longestLockMs: number;
  totalMs: number;
}

/**
 * `admin gdpr compact`: rewrites every table that holds or held a creator's data (COMPACTED_TABLES),
 * so that the bytes of erased rows, which a delete and a plain VACUUM leave in the files, are gone
 * from the database's files (docs/data-protection.md says what is still left elsewhere).
 */
export async function compactCreatorData(storage: Pick<StorageRepository, 'rewrite'>): Promise<Compaction> {
  const started = performance.now();
  const tables = await storage.rewrite(COMPACTED_TABLES);
  return { tables, longestLockMs: Math.max(0, ...tables.map((t) => t.ms)), totalMs: Math.round(performance.now() - started) };
}
