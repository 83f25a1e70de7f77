import type { Knex } from 'knex';
import { transactionOf, type UnitOfWork } from '../platform/db/unit-of-work.ts';

export type GdprOperation = 'access' | 'export' | 'erase';

/** One data-protection request, as the audit trail keeps it: never the creator's identifiers. */
export interface AuditEntry {
  lenderId: string;
  keyId: string;
  operation: GdprOperation;
  at: string;
  /** Which kinds of identifier were used (`email`, `obligor_id`), never their values. */
  identifierKinds: string[];
  counts: Record<string, number>;
  receiptId: string | null;
}

interface AuditRow {
  id: number;
  lender_id: string;
  key_id: string;
  operation: GdprOperation;
  at: string;
  identifier_kinds: string;
  counts: string;
  receipt_id: string | null;
}

const toRow = (entry: AuditEntry) => ({
  lender_id: entry.lenderId,
  key_id: entry.keyId,
  operation: entry.operation,
  at: entry.at,
  identifier_kinds: JSON.stringify(entry.identifierKinds),
  counts: JSON.stringify(entry.counts),
  receipt_id: entry.receiptId,
});

/** The only code that reads or writes the data-protection audit trail. */
export class GdprRepository {
  constructor(private readonly knex: Knex) {}

  async record(entry: AuditEntry): Promise<void> {
    await this.knex('gdpr_audit').insert(toRow(entry));
  }

  /** In the erasure's unit of work: the erasure and its record commit together. */
  async recordIn(unit: UnitOfWork, entry: AuditEntry): Promise<void> {
    await transactionOf(unit)('gdpr_audit').insert(toRow(entry));
  }

  async list(lenderId: string | undefined, limit: number): Promise<AuditEntry[]> {
    let query = this.knex<AuditRow>('gdpr_audit').orderBy('id', 'desc').limit(limit);
    if (lenderId) query = query.where({ lender_id: lenderId });
    const rows = await query;
    return rows.map((r) => ({
      lenderId: r.lender_id,
      keyId: r.key_id,
      operation: r.operation,
      at: r.at,
      identifierKinds: JSON.parse(r.identifier_kinds) as string[],
      counts: JSON.parse(r.counts) as Record<string, number>,
      receiptId: r.receipt_id,
    }));
  }
}
