import { execFile, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { parse, stringify } from 'yaml';
import { loadConfig } from '../src/config.js';
import { createLogger } from '../src/core/log.js';
import { startMetricsServer } from '../src/core/metrics.js';
import { freePort } from '../src/core/redis/server.js';
import { startTestApi, testEnv } from './helpers/api.js';
import { readRepoFile, repoRoot, type Manifest } from './helpers/manifests.js';
import { exportedNames, metricNames, parsePrometheus } from './helpers/prometheus.js';
import { startTestWorker } from './helpers/worker.js';

const RULES_FILE = 'deploy/prometheus/alerts.yml';
const DASHBOARD_FILE = 'deploy/grafana/relay.json';

/** Metrics the rules read from other exporters, with what provides them (docs/operations.md, Alerts). */
const EXTERNAL: Record<string, string> = {
  up: 'Prometheus itself, per scrape target',
  kube_deployment_status_replicas_available: 'kube-state-metrics',
  redis_memory_used_bytes: 'redis_exporter',
  redis_memory_max_bytes: 'redis_exporter',
};

interface Rule {
  alert: string;
  expr: string;
  for?: string;
}

const rules = (parse(readRepoFile(RULES_FILE)) as { groups: { rules: Rule[] }[] }).groups.flatMap(
  (group) => group.rules,
);
const dashboard = JSON.parse(readRepoFile(DASHBOARD_FILE)) as Manifest;
const panels = (dashboard.panels as Manifest[]).filter((panel) => panel.type !== 'row');
/** Dashboard variables a query may use, with the value a check substitutes. */
const panelQuery = (expr: string) => expr.replaceAll('$job', 'multisig-relay');

/** `promtool check rules` on the file; its output when it fails. */
async function promtoolCheck(file: string): Promise<string> {
  const { stdout } = await promisify(execFile)('promtool', ['check', 'rules', file]);
  return stdout;
}

/** .ci/run installs promtool (Debian's prometheus package); elsewhere the promtool checks are skipped, saying so. */
function requirePromtool(this: Mocha.Context): void {
  if (spawnSync('promtool', ['--version'], { stdio: 'ignore' }).status === 0) return;
  process.stdout.write('  promtool checks skipped: promtool is not installed (apt-get install prometheus)\n');
  this.skip();
}

/** The names of `exprs` that neither the relay's /metrics nor an EXTERNAL exporter provides. */
function unknownNames(exprs: string[], exported: Set<string>): string[] {
  return exprs.flatMap(metricNames).filter((name) => !exported.has(name) && !(name in EXTERNAL));
}

describe('monitoring as code: the alert rules and the Grafana dashboard', function () {
  this.timeout(30_000);
  /** Every series name a running API and worker export on /metrics. */
  let exported: Set<string>;

  before(async () => {
    const api = await startTestApi();
    const worker = await startTestWorker({ MARKET_REFRESH: 'off' });
    const metrics = await startMetricsServer(
      loadConfig(testEnv({ METRICS_PORT: String(await freePort()) })),
      createLogger('error', {}, () => {}),
    );
    try {
      const text = await (await fetch(`${metrics!.url}/metrics`)).text();
      exported = exportedNames(parsePrometheus(text));
    } finally {
      await metrics?.stop();
      await worker.stop();
      await api.stop();
    }
  });

  it('metricNames finds the metrics of an expression, not its functions, labels, ranges or keywords', () => {
    const expr =
      'histogram_quantile(0.99, sum by (le, route) (rate(a_bucket{route!="x:y"}[5m]))) > 0.5 ' +
      'and on(job) b offset 5m or count(count by (version) (c:rate5m)) > bool 1';
    expect(metricNames(expr)).to.deep.equal(['a_bucket', 'b', 'c:rate5m']);
    // The check below would catch a rule that names a metric the relay does not export.
    expect(unknownNames(['rate(relay_no_such_metric_total[5m])'], new Set())).to.deep.equal([
      'relay_no_such_metric_total',
    ]);
  });

  describe(RULES_FILE, () => {
    it('promtool check rules accepts every rule', async function () {
      requirePromtool.call(this);
      expect(await promtoolCheck(join(repoRoot, RULES_FILE))).to.include(
        `SUCCESS: ${rules.length} rules found`,
      );
    });

    it('every metric a rule names is on the relay’s /metrics, or comes from a named exporter', () => {
      for (const rule of rules) expect(metricNames(rule.expr), rule.alert).to.not.deep.equal([]);
      expect(
        unknownNames(
          rules.map((rule) => rule.expr),
          exported,
        ),
      ).to.deep.equal([]);
      const external = new Set(
        rules.flatMap((rule) => metricNames(rule.expr)).filter((name) => name in EXTERNAL),
      );
      expect([...external].sort()).to.deep.equal(Object.keys(EXTERNAL).sort());
    });

    it('docs/operations.md’s alerts table is the rules file: same alerts, expressions and durations', () => {
      const docs = readRepoFile('docs/operations.md');
      const section = docs.slice(docs.indexOf('\n## Alerts\n'), docs.indexOf('\n## Secret rotation\n'));
      const rows = [...section.matchAll(/^\| `(\w+)` +\| `(.+?)` +\| (\S+) +\|/gm)].map(
        ([, alert, expr, time]) => ({
          alert,
          expr: expr!.replaceAll('\\|', '|'),
          for: time === '—' ? undefined : time,
        }),
      );
      expect(rows).to.deep.equal(rules.map(({ alert, expr, for: time }) => ({ alert, expr, for: time })));
    });
  });

  describe(DASHBOARD_FILE, () => {
    it('every panel has a unique id, a place on the grid and queries on the datasource variable', () => {
      const ids = (dashboard.panels as Manifest[]).map((panel) => panel.id);
      expect(new Set(ids).size).to.equal(ids.length);
      expect(dashboard.templating.list.map((variable: Manifest) => variable.name)).to.deep.equal([
        'datasource',
        'job',
      ]);
      for (const panel of panels) {
        expect(Object.keys(panel.gridPos).sort(), panel.title).to.deep.equal(['h', 'w', 'x', 'y']);
        expect(panel.targets, panel.title).to.have.length.above(0);
        expect(panel.datasource, panel.title).to.deep.equal({ type: 'prometheus', uid: '${datasource}' });
      }
    });

    it('every panel query is valid PromQL (promtool, as recording rules)', async function () {
      requirePromtool.call(this);
      const dir = mkdtempSync(join(tmpdir(), 'relay-dashboard-'));
      try {
        const recorded = panels.flatMap((panel) =>
          panel.targets.map((target: Manifest, i: number) => ({
            record: `dashboard:panel_${panel.id}_${i}`,
            expr: panelQuery(target.expr),
          })),
        );
        const file = join(dir, 'panels.yml');
        writeFileSync(file, stringify({ groups: [{ name: 'dashboard', rules: recorded }] }));
        expect(await promtoolCheck(file)).to.include(`SUCCESS: ${recorded.length} rules found`);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });

    it('every metric a panel queries is on the relay’s /metrics', () => {
      const exprs = panels.flatMap((panel) =>
        panel.targets.map((target: Manifest) => panelQuery(target.expr)),
      );
      for (const expr of exprs) expect(metricNames(expr), expr).to.not.deep.equal([]);
      expect(exprs.flatMap(metricNames).filter((name) => !exported.has(name))).to.deep.equal([]);
    });
  });
});
