// Loaded first by the quick tier only (.mocharc.cjs): the browser and PostgreSQL refuse to start, as
// server processes do (server-process.ts), so an unlisted test that needs one fails at once; and a
// file whose tests take too long fails the run at its end.
import pg from 'pg';
import { chromium } from 'playwright-core';
import { refuseInQuickTier } from './tiers.ts';

const client = pg.Client.prototype;
const connect = Reflect.get(client, 'connect') as (...args: unknown[]) => unknown;
client.connect = function (this: pg.Client, ...args: unknown[]) {
  refuseInQuickTier('connects to PostgreSQL');
  return Reflect.apply(connect, this, args);
} as pg.Client['connect'];

const launch = chromium.launch.bind(chromium);
chromium.launch = (...args: Parameters<typeof launch>) => {
  refuseInQuickTier('starts a browser');
  return launch(...args);
};

/** Over this much of its tests' time, a file slows the quick run beyond its budget: it belongs in FULL_ONLY. */
const SLOW_FILE_MS = 15_000;
const perFile = new Map<string, number>();

export const mochaHooks = {
  afterEach(this: Mocha.Context) {
    const test = this.currentTest;
    if (test?.file && test.duration) perFile.set(test.file, (perFile.get(test.file) ?? 0) + test.duration);
  },
  // Once per file in the quick tier's parallel run, whose workers each run many files in turn: each
  // file is judged by its own tests alone.
  afterAll() {
    const times = [...perFile];
    perFile.clear();
    const slow = times.filter(([, ms]) => ms > SLOW_FILE_MS).map(([file, ms]) => `${file} (${Math.round(ms / 1000)} s)`);
    if (slow.length) throw new Error(`Too slow for the quick tier, list in FULL_ONLY of .mocharc.cjs: ${slow.join(', ')}`);
  },
};
