import BetterSqlite3 from 'better-sqlite3';
import knexModule, { type Knex } from 'knex';

/** The most units one commit carries, and the longest a group stays open for more. */
export const GROUP_COMMIT_MEMBERS = 32;
const GROUP_OPEN_MS = 15;

/**
 * What a group opens with: a write that changes nothing but takes SQLite's write lock at once, as
 * `BEGIN IMMEDIATE` would (Knex opens transactions with a deferred `BEGIN`). Otherwise a group whose
 * first unit only read would keep that unit's snapshot, and a later unit's first write would fail
 * with SQLITE_BUSY_SNAPSHOT whenever another process (the operator's CLI) had committed in between.
 * On Knex's migration table, which every migrated database has.
 */
const takeWriteLock = (trx: Knex.Transaction, table: string) =>
  trx(table)
    .where(trx.raw('0'))
    .update({ name: trx.ref('name') });

/**
 * The savepoint each unit runs in, under one name: written as SQL on the group's transaction
 * rather than as a nested transaction of Knex, which costs about 130 µs of the main thread per unit
 * (a transaction object, a client and a query builder made for it, and two statements under names
 * never seen before, so prepared anew), against 20 µs for each of these fixed statements
 * (docs/persistence.md, "Group commit"). A unit that opens a transaction of its own nests Knex's
 * savepoint inside this one.
 */
const UNIT_SAVEPOINT = 'unit_of_work';

interface Member {
  work: (trx: Knex.Transaction) => Promise<unknown>;
  resolve(value: unknown): void;
  reject(error: unknown): void;
  timer: NodeJS.Timeout;
}

/**
 * Whether a unit's failure left the group's transaction as it was: anything the unit's own code
 * threw, and a constraint that refused one of its statements (SQLite undoes that statement only).
 * Any other error of SQLite (a full disk, an I/O error, a lock not granted) may have rolled back
 * the whole transaction, with the other units' work in it, so the group must not go on.
 */
function leftGroupIntact(error: unknown): boolean {
  if (!(error instanceof BetterSqlite3.SqliteError)) return true;
  return STATEMENT_CONSTRAINTS.has(error.code);
}

/** Constraints whose refusal undoes the one statement (a trigger's `raise(rollback)` undoes all). */
const STATEMENT_CONSTRAINTS = new Set([
  'SQLITE_CONSTRAINT_UNIQUE',
  'SQLITE_CONSTRAINT_PRIMARYKEY',
  'SQLITE_CONSTRAINT_NOTNULL',
  'SQLITE_CONSTRAINT_CHECK',
  'SQLITE_CONSTRAINT_FOREIGNKEY',
]);

/**
 * Its own error object per unit: Knex prefixes an error's message with the failing statement's SQL
 * and values, and one object shared by the group would carry one lender's values into another's
 * error and log.
 */
function groupFailure(error: unknown): Error {
  const code = (error as { code?: unknown } | null)?.code;
  return new BetterSqlite3.SqliteError('the group commit this unit of work was part of failed', typeof code === 'string' ? code : 'SQLITE_ERROR');
}

/**
 * Group commit on SQLite (docs/persistence.md, "Group commit"): units of work that queue for the
 * writer while another group runs commit together, in one transaction of Knex with one savepoint per
 * unit (`UNIT_SAVEPOINT`). Each commit writes every page its units touched to the WAL
 * once, instead of once per unit: a creation touches a dozen tables and indexes and writes under 3
 * pages of new data. A unit's promise settles only once the group has committed, so no caller hears
 * of a commit before it has happened.
 *
 * Failure semantics, each tested (group-commit.test.ts):
 * - a unit whose own code throws, or whose statement a constraint refuses, is rolled back to its
 *   savepoint alone and fails; the rest of its group commits;
 * - as with any transaction of Knex on SQLite, code that catches an error with which SQLite rolled
 *   the whole transaction back, and goes on writing, writes outside any transaction: no code of the
 *   service catches a database error inside a unit of work and goes on;
 * - any other SQLite error in a unit (`leftGroupIntact`) rolls back the group: the units already run
 *   fail with their own copy of the error, those not yet run are queued again for the next group;
 * - a failed `COMMIT` fails every unit of the group, and none of their writes remain.
 *
 * A unit that waits for the writer longer than `waitMs` (its own code opened another unit of work
 * and so waits for itself) fails with a `KnexTimeoutError`, which the service answers with 503, as
 * Knex's pool does. Off with `DATABASE_GROUP_COMMIT=off`: each unit is then a transaction of its own.
 */
export class GroupCommit {
  private readonly queue: Member[] = [];
  private running = false;

  constructor(
    private readonly knex: Knex,
    private readonly waitMs: number,
    /** Run after each group has committed (the WAL's catch-up, wal-checkpointer.ts). */
    private readonly afterGroup: () => Promise<void> = async () => {},
    /** A table with a `name` column that `takeWriteLock` writes nothing to. */
    private readonly lockTable = 'knex_migrations',
  ) {}

  run<T>(work: (trx: Knex.Transaction) => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const member: Member = {
        work,
        resolve,
        reject,
        timer: setTimeout(() => {
          const at = this.queue.indexOf(member);
          if (at < 0) return;
          this.queue.splice(at, 1);
          reject(new knexModule.KnexTimeoutError(`Knex: Timeout waiting ${this.waitMs} ms for the SQLite writer, held by another unit of work`));
        }, this.waitMs),
      };
      this.queue.push(member);
      if (!this.running) void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.running = true;
    try {
      while (this.queue.length > 0) {
        await this.commitGroup();
        await this.afterGroup().catch(() => undefined);
      }
    } finally {
      this.running = false;
    }
  }

  /**
   * Opens a group, runs units in it one after another as they queue, and commits it once no unit
   * waits after a turn of the event loop, or at GROUP_COMMIT_MEMBERS units or GROUP_OPEN_MS. The
   * turn matters: better-sqlite3 answers at once and Knex's promises resolve as microtasks, so
   * without it a group would run and commit before any other request reached its unit of work.
   */
  private async commitGroup(): Promise<void> {
    const committed: Array<{ member: Member; value: unknown }> = [];
    let running: Member | undefined;
    let stoppedBy: unknown;
    let locked = false;
    try {
      await this.knex.transaction(async (outer) => {
        await takeWriteLock(outer, this.lockTable);
        locked = true;
        const openedAt = performance.now();
        for (let members = 0; members < GROUP_COMMIT_MEMBERS && performance.now() - openedAt < GROUP_OPEN_MS; members++) {
          if (this.queue.length === 0) await new Promise((resolve) => setImmediate(resolve));
          const member = this.queue.shift();
          if (!member) break;
          clearTimeout(member.timer);
          running = member;
          // The unit's own error: when SQLite has rolled back everything, Knex's ROLLBACK TO fails
          // and Knex reports that failure instead.
          let own: unknown;
          try {
            await outer.raw(`SAVEPOINT ${UNIT_SAVEPOINT}`);
            let value: unknown;
            try {
              value = await member.work(outer);
            } catch (error) {
              own = error;
              // ROLLBACK TO keeps the savepoint: released too, so that units never nest.
              await outer.raw(`ROLLBACK TO ${UNIT_SAVEPOINT}`);
              await outer.raw(`RELEASE ${UNIT_SAVEPOINT}`);
              throw error;
            }
            await outer.raw(`RELEASE ${UNIT_SAVEPOINT}`);
            committed.push({ member, value });
          } catch (error) {
            const reported = own ?? error;
            if (!leftGroupIntact(reported) || !leftGroupIntact(error)) {
              stoppedBy = reported;
              throw error;
            }
            member.reject(reported);
          }
          running = undefined;
        }
      });
    } catch (error) {
      // Knex leaves a transaction whose COMMIT failed open on the connection (a deferred constraint
      // keeps it open): ended here, so that the next group can begin.
      await this.knex.raw('ROLLBACK').catch(() => undefined);
      if (!locked) {
        // No lock (another process held it past the busy timeout), or no transaction at all: every
        // unit waiting for it fails as it would have.
        for (const member of this.queue.splice(0)) {
          clearTimeout(member.timer);
          member.reject(groupFailure(error));
        }
        return;
      }
      for (const { member } of committed) member.reject(groupFailure(error));
      if (running && stoppedBy !== undefined) running.reject(stoppedBy);
      // Those still queued never ran: they go into the next group.
      return;
    }
    for (const { member, value } of committed) member.resolve(value);
  }
}
