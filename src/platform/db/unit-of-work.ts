import type { Knex } from 'knex';
import type { GroupCommit } from './group-commit.ts';

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
  /** Runs `callback` once the transaction has ended, committed or rolled back. */
  afterEnd(callback: () => void): void;
}

const transactions = new WeakMap<UnitOfWork, Knex.Transaction>();

/** The group commit of a database's writer, where it has one (database.ts registers it). */
const groupCommits = new WeakMap<Knex, GroupCommit>();

export function commitInGroups(knex: Knex, groupCommit: GroupCommit): void {
  groupCommits.set(knex, groupCommit);
}

/**
 * Runs `work` in one transaction, then its before-commit work, and after the commit the unit's
 * after-commit callbacks. On SQLite with group commit (group-commit.ts) the transaction is a
 * savepoint of the group's, and the group's transaction goes on after the unit: repositories reach
 * it through `transactionOf` at each statement, which refuses once the unit has ended.
 */
export async function inUnitOfWork<T>(knex: Knex, work: (unit: UnitOfWork) => Promise<T>): Promise<T> {
  const committed: Array<() => void> = [];
  const ended: Array<() => void> = [];
  const body = async (trx: Knex.Transaction): Promise<T> => {
    const lastSteps: Array<() => Promise<void>> = [];
    const unit: UnitOfWork = {
      afterCommit: (callback) => committed.push(callback),
      beforeCommit: (step) => lastSteps.push(step),
      afterEnd: (callback) => ended.push(callback),
    };
    transactions.set(unit, trx);
    try {
      const result = await work(unit);
      // In the order they were asked for; a step may ask for another, which runs after it.
      for (let i = 0; i < lastSteps.length; i++) await lastSteps[i]!();
      return result;
    } finally {
      // Closed for its own code: in a group commit the transaction goes on with other units.
      transactions.delete(unit);
    }
  };
  const group = groupCommits.get(knex);
  let result: T;
  try {
    result = await (group ? group.run(body) : knex.transaction(body));
  } finally {
    for (const callback of ended) callback();
  }
  for (const callback of committed) callback();
  return result;
}

/** For repositories only: the transaction behind a unit of work. */
export function transactionOf(unit: UnitOfWork): Knex.Transaction {
  const trx = transactions.get(unit);
  // Work kept past its unit (a callback that outlived it) must not write outside any transaction,
  // nor in another unit of the same group.
  if (!trx || trx.isCompleted()) throw new Error('unit of work is not open');
  return trx;
}
