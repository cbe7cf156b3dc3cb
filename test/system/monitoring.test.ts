import { execFile, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { parse, stringify } from 'yaml';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/core/log.js';
import { startMetricsServer } from '../../src/core/metrics.js';
import { freePort } from '../../src/core/redis/server.js';
import { startTestApi, testEnv } from '../helpers/api.js';
import { k8sDocuments, ofKind, readRepoFile, repoRoot, type Manifest } from '../helpers/manifests.js';
import { anchors } from '../helpers/markdown.js';
import { exportedNames, metricNames, parsePrometheus } from '../helpers/prometheus.js';
import { startTestWorker } from '../helpers/worker.js';

const RULES_FILE = 'deploy/prometheus/alerts.yml';
const DASHBOARD_FILE = 'deploy/grafana/relay.json';
const SCRAPE_FILE = 'deploy/prometheus/scrape.yml';
const POD_MONITOR_FILE = 'deploy/prometheus/podmonitor.yaml';
const RUNBOOK_FILE = 'docs/runbook.md';
/** The scrape job of the relay's pods, which every rule on their metrics selects. */
const JOB = 'multisig-relay';
const NAMESPACE = 'multisig-relay';

/** Metrics the rules read from other exporters, with what provides them (docs/operations.md, Alerts). */
const EXTERNAL: Record<string, string> = {
  up: 'Prometheus itself, per scrape target',
  kube_deployment_status_replicas_available: 'kube-state-metrics',
  redis_memory_used_bytes: 'redis_exporter',
  redis_memory_max_bytes: 'redis_exporter',
};

/** The matcher that keeps a rule on the relay's own series: the job of its pods, or the exporter's scope. */
const SCOPE: Record<string, string> = {
  up: `job="${JOB}"`,
  kube_deployment_status_replicas_available: `namespace="${NAMESPACE}"`,
  redis_memory_used_bytes: 'job="multisig-relay-redis"',
  redis_memory_max_bytes: 'job="multisig-relay-redis"',
};

interface Rule {
  alert: string;
  expr: string;
  for?: string;
  annotations: Record<string, string>;
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

/**
 * Whether the promtool checks can run where `env` says: 'skip' (saying so) without promtool, except under CI
 * (`.ci/run` sets CI and installs promtool from Debian's prometheus package), where a missing promtool throws.
 */
export function promtoolAvailability(env: NodeJS.ProcessEnv): 'run' | 'skip' {
  if (spawnSync('promtool', ['--version'], { stdio: 'ignore', env }).status === 0) return 'run';
  if (env.CI) throw new Error('promtool is not installed, and CI is set: apt-get install prometheus');
  return 'skip';
}

function requirePromtool(this: Mocha.Context): void {
  if (promtoolAvailability(process.env) === 'run') return;
  process.stdout.write('  promtool checks skipped: promtool is not installed (apt-get install prometheus)\n');
  this.skip();
}

/** The selectors of `name` in `expr` that lack `matcher` (`name` alone, or `name{…}` without it). */
function unscoped(expr: string, name: string, matcher: string): string[] {
  const selector = new RegExp(`(?<![\\w:])${name}(?![\\w:])(\\{[^}]*\\})?`, 'g');
  return [...expr.matchAll(selector)]
    .filter(([, braces]) => !(braces ?? '').slice(1, -1).split(/,\s*/).includes(matcher))
    .map(([whole]) => whole);
}

/** The Prometheus meta labels of a pod template's targets, one set per container port (kubernetes_sd, role pod). */
function podTargets(template: Manifest): Record<string, string>[] {
  const sanitize = (name: string) => name.replace(/[^A-Za-z0-9_]/g, '_');
  const meta: Record<string, string> = { __meta_kubernetes_namespace: NAMESPACE };
  for (const [key, value] of Object.entries<string>(template.metadata.annotations ?? {}))
    meta[`__meta_kubernetes_pod_annotation_${sanitize(key)}`] = value;
  for (const [key, value] of Object.entries<string>(template.metadata.labels ?? {}))
    meta[`__meta_kubernetes_pod_label_${sanitize(key)}`] = value;
  return (template.spec.containers as Manifest[]).flatMap((container) =>
    (container.ports as Manifest[]).map((port) => ({
      ...meta,
      __meta_kubernetes_pod_container_port_name: port.name,
      __meta_kubernetes_pod_container_port_number: String(port.containerPort),
    })),
  );
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

    it('every selector of a relay metric names the scrape job; external ones their exporter’s job or the namespace', () => {
      const offending = rules.flatMap((rule) =>
        metricNames(rule.expr).flatMap((name) =>
          unscoped(rule.expr, name, SCOPE[name] ?? `job="${JOB}"`).map(
            (selector) => `${rule.alert}: ${selector}`,
          ),
        ),
      );
      expect(offending).to.deep.equal([]);
      expect(unscoped('a{x="1"} / a{job="j", x="1"} + ab', 'a', 'job="j"')).to.deep.equal(['a{x="1"}']);
    });

    it(`every alert's runbook_url is ${RUNBOOK_FILE}#<its name>, a heading of the runbook`, () => {
      const headings = anchors(readRepoFile(RUNBOOK_FILE));
      for (const rule of rules) {
        const anchor = rule.alert.toLowerCase();
        expect(rule.annotations.runbook_url, rule.alert).to.equal(`${RUNBOOK_FILE}#${anchor}`);
        expect(headings.has(anchor), `${RUNBOOK_FILE} has no heading ${rule.alert}`).to.equal(true);
      }
      // One entry per alert, and no entry for an alert that does not exist.
      const entries = [...readRepoFile(RUNBOOK_FILE).matchAll(/^### (\w+)$/gm)].map(([, name]) => name);
      expect(entries).to.deep.equal(rules.map((rule) => rule.alert));
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

  it('the promtool checks are skipped without promtool, and fail instead when CI is set', () => {
    const empty = mkdtempSync(join(tmpdir(), 'relay-no-promtool-'));
    try {
      expect(promtoolAvailability({ PATH: empty })).to.equal('skip');
      expect(() => promtoolAvailability({ PATH: empty, CI: 'true' })).to.throw(
        'promtool is not installed, and CI is set',
      );
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });

  describe(`${SCRAPE_FILE} and ${POD_MONITOR_FILE}`, () => {
    const templates = ['api', 'worker'].map(
      (component) => ofKind(k8sDocuments(), 'Deployment', component)[0]!.spec.template as Manifest,
    );

    it('scrape.yml keeps exactly the metrics port of the API and worker pods of k8s/, under the job the rules select', () => {
      const [relay, redis] = (parse(readRepoFile(SCRAPE_FILE)) as Manifest).scrape_configs as Manifest[];
      expect(relay!.job_name).to.equal(JOB);
      expect(redis!.job_name).to.equal(SCOPE.redis_memory_used_bytes!.slice('job="'.length, -1));
      expect(relay!.kubernetes_sd_configs).to.deep.equal([
        { role: 'pod', namespaces: { names: [NAMESPACE] } },
      ]);
      const keep = (relay!.relabel_configs as Manifest[]).filter((step) => step.action === 'keep');
      const kept = templates
        .flatMap(podTargets)
        .filter((target) =>
          keep.every((step) =>
            new RegExp(`^(?:${step.regex})$`).test(
              (step.source_labels as string[]).map((label) => target[label] ?? '').join(';'),
            ),
          ),
        );
      expect(
        kept.map((target) => target.__meta_kubernetes_pod_label_app_kubernetes_io_component),
      ).to.deep.equal(['api', 'worker']);
      for (const target of kept) {
        expect(target.__meta_kubernetes_pod_container_port_number).to.equal(
          target.__meta_kubernetes_pod_annotation_prometheus_io_port,
        );
      }
      const labels = (relay!.relabel_configs as Manifest[]).map((step) => step.target_label);
      expect(labels).to.include.members(['pod', 'namespace']);
    });

    it('promtool check config accepts scrape.yml (its Kubernetes discovery as a static target: Debian’s promtool lacks it)', async function () {
      requirePromtool.call(this);
      const scrape = parse(readRepoFile(SCRAPE_FILE)) as Manifest;
      const dir = mkdtempSync(join(tmpdir(), 'relay-scrape-'));
      try {
        const file = join(dir, 'prometheus.yml');
        const jobs = (scrape.scrape_configs as Manifest[]).map(
          ({ kubernetes_sd_configs: discovery, ...job }) =>
            discovery ? { ...job, static_configs: [{ targets: ['127.0.0.1:9464'] }] } : job,
        );
        writeFileSync(file, stringify({ scrape_configs: jobs }));
        const { stdout } = await promisify(execFile)('promtool', ['check', 'config', file]);
        expect(stdout).to.include('SUCCESS');
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });

    it('podmonitor.yaml selects the API and worker pods and takes the job name from a label they carry', () => {
      const monitor = parse(readRepoFile(POD_MONITOR_FILE)) as Manifest;
      expect(monitor.kind).to.equal('PodMonitor');
      expect(monitor.spec.podMetricsEndpoints).to.deep.equal([{ port: 'metrics', path: '/metrics' }]);
      for (const template of templates) {
        const labels = template.metadata.labels as Record<string, string>;
        expect(labels).to.include(monitor.spec.selector.matchLabels);
        expect(labels[monitor.spec.jobLabel]).to.equal(JOB);
        expect((template.spec.containers as Manifest[])[0]!.ports).to.deep.include({
          name: 'metrics',
          containerPort: 9464,
        });
      }
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

    it('every panel query selects the relay’s metrics of the scrape job chosen, by default the rules’ job', () => {
      const job = (dashboard.templating.list as Manifest[]).find((variable) => variable.name === 'job')!;
      expect(job.query).to.equal(JOB);
      expect(job.current).to.deep.equal({ text: JOB, value: JOB });
      const offending = panels.flatMap((panel) =>
        (panel.targets as Manifest[]).flatMap((target) =>
          metricNames(target.expr as string).flatMap((name) =>
            unscoped(target.expr as string, name, 'job="$job"').map(
              (selector) => `${panel.title}: ${selector}`,
            ),
          ),
        ),
      );
      expect(offending).to.deep.equal([]);
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

    it(`every panel ${RUNBOOK_FILE} names (_Row › Panel_) is on the dashboard, in that row`, () => {
      const layout = new Set<string>();
      let row = '';
      for (const panel of dashboard.panels as Manifest[]) {
        if (panel.type === 'row') row = panel.title as string;
        else layout.add(`${row} › ${panel.title}`);
      }
      const named = [
        ...readRepoFile(RUNBOOK_FILE)
          .replace(/\s*\n\s*/g, ' ')
          .matchAll(/(?<!\w)_([A-Z][^_`]*? › [^_`]+?)_(?!\w)/g),
      ].map(([, name]) => name!);
      expect(named.length).to.be.greaterThan(15);
      expect(named.filter((name) => !layout.has(name))).to.deep.equal([]);
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
