import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { createLogger } from '../src/platform/logger.ts';
import { collectProcessMetrics, databaseGauges, processRegistry } from '../src/platform/metrics/metrics.ts';

const root = new URL('..', import.meta.url).pathname;
const read = (path: string) => readFileSync(`${root}${path}`, 'utf8');

interface Rule {
  record?: string;
  alert?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
const rules = (parse(read('ops/prometheus-rules.yml')) as { groups: Array<{ name: string; rules: Rule[] }> }).groups.flatMap((group) => group.rules);

interface Target {
  refId: string;
  expr: string;
  datasource?: { uid?: string };
}
interface Panel {
  id: number;
  type: string;
  title: string;
  gridPos: { h: number; w: number; x: number; y: number };
  datasource?: { type?: string; uid?: string };
  targets?: Target[];
}
const dashboard = JSON.parse(read('ops/grafana-dashboard.json')) as {
  title: string;
  uid: string;
  schemaVersion: number;
  panels: Panel[];
  templating: { list: Array<{ name: string; type: string; query: unknown }> };
};

/** Every series the service exposes, with its label names: the names rules and panels may use. */
function exposedSeries(): Map<string, Set<string>> {
  collectProcessMetrics();
  const stub = {
    jobs: async () => [],
    jobKinds: [],
    webhooks: async () => ({ awaitingFirstAttempt: 0, awaitingRetry: 0, oldestPendingAgeSeconds: 0, oldestDueLagSeconds: 0 }),
    monitoring: async () => ({ active: 0, failing: 0 }),
    pool: () => ({ used: 0, free: 0, pendingAcquires: 0, max: 0 }),
  };
  const metrics = [...processRegistry.getMetricsAsArray(), ...databaseGauges(stub, createLogger({ level: 'silent' })).getMetricsAsArray()];
  const series = new Map<string, Set<string>>();
  for (const metric of metrics) {
    const { name, labelNames = [] } = metric as unknown as { name: string; labelNames?: string[] };
    const type = (metric as unknown as { type: string }).type;
    const labels = new Set(labelNames);
    series.set(name, labels);
    if (type === 'histogram') {
      series.set(`${name}_bucket`, new Set([...labels, 'le']));
      series.set(`${name}_sum`, labels);
      series.set(`${name}_count`, labels);
    }
  }
  return series;
}

const SERVICE_SERIES = /\b((?:civ|process|nodejs)_[a-zA-Z0-9_]+)(\{[^}]*\})?/g;
/** Added by Prometheus to every scraped series. */
const TARGET_LABELS = ['job', 'instance'];

/** Checks that every series an expression names exists, with the labels its selectors and groupings use. */
function checkExpression(where: string, expr: string, series: Map<string, Set<string>>): void {
  const named: string[] = [];
  for (const [, name, selector] of expr.matchAll(SERVICE_SERIES)) {
    const labels = series.get(name!);
    assert.ok(labels, `${where}: ${name} is not a series the service exposes`);
    named.push(name!);
    for (const [, label] of (selector ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)/g)) {
      assert.ok(labels.has(label!) || TARGET_LABELS.includes(label!), `${where}: ${name} has no label ${label}`);
    }
  }
  assert.ok(named.length > 0, `${where}: names no series of the service`);
  const available = new Set([...named.flatMap((name) => [...series.get(name)!]), ...TARGET_LABELS]);
  for (const [, grouping] of expr.matchAll(/\bby\s*\(([^)]*)\)/g)) {
    for (const label of grouping!.split(',').map((l) => l.trim())) {
      assert.ok(available.has(label), `${where}: groups by ${label}, a label none of its series has`);
    }
  }
}

describe('operations files (ops/)', () => {
  const series = exposedSeries();

  it('alerting rules name only series and labels the service exposes, each with severity, text and a runbook section', () => {
    const operationsDoc = read('docs/operations.md');
    const alerts = rules.filter((rule) => rule.alert);
    assert.ok(alerts.length >= 8);
    for (const rule of rules) {
      // `up` is Prometheus's own series about the scrape, not one the service exposes.
      if (rule.expr.trim().startsWith('up{')) continue;
      checkExpression(rule.alert ?? rule.record!, rule.expr, series);
    }
    for (const alert of alerts) {
      assert.ok(['page', 'warning'].includes(alert.labels?.severity ?? ''), `${alert.alert}: severity page or warning`);
      assert.ok(alert.annotations?.summary && alert.annotations.description, `${alert.alert}: summary and description`);
      const anchor = alert.alert!.toLowerCase();
      assert.equal(alert.annotations.runbook_url, `docs/operations.md#${anchor}`);
      assert.match(operationsDoc, new RegExp(`^### ${alert.alert}$`, 'm'), `docs/operations.md explains ${alert.alert}`);
    }
  });

  it('the Grafana dashboard is well formed and queries only series the service exposes', () => {
    assert.ok(dashboard.title && dashboard.uid);
    assert.equal(typeof dashboard.schemaVersion, 'number');
    const datasource = dashboard.templating.list.find((variable) => variable.name === 'datasource');
    assert.deepEqual([datasource?.type, datasource?.query], ['datasource', 'prometheus']);
    const ids = dashboard.panels.map((panel) => panel.id);
    assert.equal(new Set(ids).size, ids.length, 'panel ids are unique');
    const cells = new Set<string>();
    for (const panel of dashboard.panels) {
      const { x, y, w, h } = panel.gridPos;
      assert.ok(x >= 0 && w > 0 && x + w <= 24 && h > 0 && y >= 0, `${panel.title}: inside the 24-column grid`);
      for (let row = y; row < y + h; row++) {
        for (let column = x; column < x + w; column++) {
          assert.ok(!cells.has(`${row}:${column}`), `${panel.title} overlaps another panel`);
          cells.add(`${row}:${column}`);
        }
      }
      if (panel.type === 'row') continue;
      assert.equal(panel.datasource?.uid, '${datasource}', `${panel.title}: uses the data source variable`);
      assert.ok(panel.targets && panel.targets.length > 0, `${panel.title}: has queries`);
      const refIds = panel.targets.map((target) => target.refId);
      assert.equal(new Set(refIds).size, refIds.length, `${panel.title}: refIds are unique`);
      for (const target of panel.targets) checkExpression(`${panel.title} ${target.refId}`, target.expr, series);
    }
  });

  it('promtool checks the rules and the Prometheus configuration and passes the rules unit tests', function () {
    const probe = spawnSync('promtool', ['--version'], { encoding: 'utf8' });
    if (probe.error) {
      // CI installs Debian's prometheus package and sets REQUIRE_PROMTOOL=1: there this fails, never skips.
      if (process.env.REQUIRE_PROMTOOL === '1') assert.fail('promtool is not installed (Debian package prometheus)');
      this.skip();
    }
    for (const args of [
      ['check', 'rules', 'prometheus-rules.yml'],
      ['test', 'rules', 'prometheus-rules.test.yml'],
      ['check', 'config', '--syntax-only', 'prometheus.yml'],
    ]) {
      const run = spawnSync('promtool', args, { cwd: `${root}ops`, encoding: 'utf8' });
      assert.equal(run.status, 0, `promtool ${args.join(' ')}:\n${run.stdout}${run.stderr}`);
    }
  });
});
