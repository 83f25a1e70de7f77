import type { Knex } from 'knex';

/**
 * One database transaction as features outside the repositories see it: something to do work in
 * and to run code after, with no Knex type in sight. Repositories turn it back into the transaction
 * with `transactionOf`.
 */
export interface UnitOfWork {
  /** Runs `callback` once the transaction has committed; never when it rolls back. */
  afterCommit(callback: () => void): void;
}

const transactions = new WeakMap<UnitOfWork, Knex.Transaction>();

/** Runs `work` in one transaction, then the unit's after-commit callbacks if it committed. */
export async function inUnitOfWork<T>(knex: Knex, work: (unit: UnitOfWork, trx: Knex.Transaction) => Promise<T>): Promise<T> {
  const committed: Array<() => void> = [];
  const result = await knex.transaction(async (trx) => {
    const unit: UnitOfWork = { afterCommit: (callback) => committed.push(callback) };
    transactions.set(unit, trx);
    return work(unit, trx);
  });
  for (const callback of committed) callback();
  return result;
}

/** For repositories only: the transaction behind a unit of work. */
export function transactionOf(unit: UnitOfWork): Knex.Transaction {
  const trx = transactions.get(unit);
  // Work kept past its unit (a callback that outlived it) must not write outside any transaction.
  if (!trx || trx.isCompleted()) throw new Error('unit of work is not open');
  return trx;
}
