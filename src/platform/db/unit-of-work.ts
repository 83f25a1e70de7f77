import type { Knex } from 'knex';

/**
 * One database transaction as features outside the repositories see it: something to do work in
 * and to run code after, with no Knex type in sight. Repositories turn it back into the transaction
 * with `transactionOf`.
 */
export interface UnitOfWork {
  /** Runs `callback` once the transaction has committed; never when it rolls back. */
  afterCommit(callback: () => void): void;
  /**
   * Runs `work` in the transaction once the unit's own work has returned, just before it commits.
   * For writes to rows that every unit shares (the peer-benchmark counters): an update holds its
   * row's lock until the commit, so the later it comes the shorter other units wait for it.
   */
  beforeCommit(work: () => Promise<void>): void;
}

const transactions = new WeakMap<UnitOfWork, Knex.Transaction>();

/** Runs `work` in one transaction, then its before-commit work, and after the commit the unit's after-commit callbacks. */
export async function inUnitOfWork<T>(knex: Knex, work: (unit: UnitOfWork, trx: Knex.Transaction) => Promise<T>): Promise<T> {
  const committed: Array<() => void> = [];
  const result = await knex.transaction(async (trx) => {
    const lastSteps: Array<() => Promise<void>> = [];
    const unit: UnitOfWork = { afterCommit: (callback) => committed.push(callback), beforeCommit: (step) => lastSteps.push(step) };
    transactions.set(unit, trx);
    const result = await work(unit, trx);
    // In the order they were asked for; a step may ask for another, which runs after it.
    for (let i = 0; i < lastSteps.length; i++) await lastSteps[i]!();
    return result;
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
