import assert from 'node:assert/strict';
import { ManualClock } from '../clock.ts';
import { openDatabase, type Database } from '../db/database.ts';
import { testDatabases, type TestDatabase } from '../../../test/support/test-databases.ts';
import { createLogger } from '../logger.ts';
import { JobQueue, type Job } from './job-queue.ts';
import { JobRunner } from './job-runner.ts';

for (const factory of testDatabases()) {
  describe(`durable jobs on ${factory.name}`, function () {
    this.timeout(30_000);
    let testDb: TestDatabase;
    let db: Database;
    let queue: JobQueue;
    const clock = new ManualClock('2026-11-21T10:00:00.000Z');
    const logger = createLogger({ level: 'silent' });

    before(async () => {
      testDb = await factory.create();
      db = openDatabase(testDb.url);
      await db.migrate();
      queue = new JobQueue(db.knex, db.dialect);
    });
    after(async () => {
      await db.close();
      await testDb.drop();
    });
    beforeEach(async () => {
      await db.knex('jobs').delete();
    });

    const enqueue = (kind: string, subjectId: string, runAt: Date) =>
      db.knex.transaction((trx) => queue.enqueue(trx, { kind, subjectId, runAt, payload: {} }, clock.now()));

    it('runs a job only once it is due, and then never again', async () => {
      const ran: string[] = [];
      const runner = new JobRunner(queue, { note: async (job: Job) => void ran.push(job.subjectId) }, clock, logger);
      await enqueue('note', 'later', new Date(clock.now().getTime() + 60_000));
      await enqueue('note', 'now', clock.now());
      assert.equal(await runner.runDue(), 1);
      assert.deepEqual(ran, ['now']);
      clock.advance(60_000);
      assert.equal(await runner.runDue(), 1);
      assert.equal(await runner.runDue(), 0);
      assert.deepEqual(ran, ['now', 'later']);
      assert.equal(await queue.pendingCount(), 0);
    });

    it('keeps no job whose transaction rolled back', async () => {
      await assert.rejects(
        db.knex.transaction(async (trx) => {
          await queue.enqueue(trx, { kind: 'note', subjectId: 'ghost', runAt: clock.now(), payload: {} }, clock.now());
          throw new Error('roll back');
        }),
        /roll back/,
      );
      assert.equal(await queue.pendingCount(), 0);
    });

    it('retries a failing job with backoff, then marks it failed', async () => {
      let attempts = 0;
      const runner = new JobRunner(queue, { flaky: async () => void (attempts++, assert.fail('provider down')) }, clock, logger, { maxAttempts: 3 });
      await enqueue('flaky', 's', clock.now());
      for (let i = 0; i < 5; i++) {
        await runner.runDue();
        clock.advance(10_000);
      }
      assert.equal(attempts, 3);
      const row = await db.knex('jobs').first();
      assert.equal(row.status, 'failed');
      assert.match(row.last_error, /provider down/);
    });

    it('never gives up a job that failed because the database was down, and waits at most 5 minutes between attempts', async () => {
      let attempts = 0;
      const outage = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
      const runner = new JobRunner(
        queue,
        {
          flaky: async () => {
            attempts++;
            if (attempts <= 12) throw outage;
          },
        },
        clock,
        logger,
        { maxAttempts: 3 },
      );
      await enqueue('flaky', 's', clock.now());
      for (let i = 0; i < 12; i++) {
        assert.equal(await runner.runDue(), 1, `attempt ${i + 1} ran`);
        const row = await db.knex('jobs').first();
        assert.equal(row.status, 'pending');
        assert.ok(Date.parse(row.run_at) - clock.now().getTime() <= 5 * 60_000, `attempt ${i + 1} waits ${row.run_at}`);
        clock.advance(5 * 60_000);
      }
      assert.equal(await runner.runDue(), 1);
      assert.equal(attempts, 13);
      assert.equal((await db.knex('jobs').first()).status, 'done');
    });

    it('claims a job again once the lease of a crashed worker ends', async () => {
      await enqueue('note', 'orphan', clock.now());
      const claimed = await queue.claimDue('crashed-worker', clock.now(), 10, 30_000);
      assert.equal(claimed.length, 1);
      assert.equal((await queue.claimDue('other-worker', clock.now(), 10, 30_000)).length, 0);
      clock.advance(30_001);
      const reclaimed = await queue.claimDue('other-worker', clock.now(), 10, 30_000);
      assert.deepEqual(
        reclaimed.map((j) => j.subjectId),
        ['orphan'],
      );
      assert.equal(reclaimed[0]!.attempts, 2);
    });

    it('never hands one job to two workers claiming at the same time', async () => {
      for (let i = 0; i < 200; i++) await enqueue('note', `job-${i}`, clock.now());
      // Separate connections, like separate server processes on one database.
      const others = [openDatabase(testDb.url), openDatabase(testDb.url), openDatabase(testDb.url)];
      try {
        const queues = [queue, ...others.map((o) => new JobQueue(o.knex, o.dialect))];
        const claimedBy = await Promise.all(
          queues.map(async (q, worker) => {
            const mine: string[] = [];
            for (;;) {
              const batch = await q.claimDue(`worker-${worker}`, clock.now(), 7, 60_000);
              if (batch.length === 0) return mine;
              mine.push(...batch.map((j) => j.subjectId));
            }
          }),
        );
        const all = claimedBy.flat();
        assert.equal(all.length, 200);
        assert.equal(new Set(all).size, 200);
        if (factory.name === 'postgres') assert.ok(claimedBy.filter((c) => c.length > 0).length > 1, 'only one worker got work');
      } finally {
        for (const other of others) await other.close();
      }
    });
  });
}
