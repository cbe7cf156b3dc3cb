import { execFile, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { parse, parseAllDocuments } from 'yaml';
import { knownEnvVars, loadConfig, type Config } from '../../src/config.js';
import { createLogger } from '../../src/core/log.js';
import { registry, startMetricsServer, type MetricsHandle } from '../../src/core/metrics.js';
import { freePort } from '../../src/core/redis/server.js';
import { startTestApi, testEnv, waitUntilReady, type TestApi } from '../helpers/api.js';
import {
  composeErrors,
  composeFile,
  dockerStages,
  k8sDocuments,
  kubernetesErrors,
  ofKind,
  readRepoFile,
  repoRoot,
  type Manifest,
} from '../helpers/manifests.js';
import { FakeFcm } from '../helpers/fake-fcm.js';
import { testRedis } from '../helpers/redis.js';

const docs = k8sDocuments();
const compose = composeFile();
const packageJson = JSON.parse(readRepoFile('package.json')) as Manifest;
const stages = dockerStages(readRepoFile('Dockerfile'));
const finalStage = stages.at(-1)!;

const NOT_APPLIED = ['secret.example.yaml', 'redis.dev.yaml'];
const RELAY = 'multisig-relay';

const deployment = (component: string) => ofKind(docs, 'Deployment', component)[0]!;
const podSpec = (workload: Manifest): Manifest => workload.spec.template.spec;
const container = (workload: Manifest): Manifest => podSpec(workload).containers[0];
const relayWorkloads = () => [deployment('api'), deployment('worker')];

/** What a relay pod's process sees: the ConfigMap, the example Secret and the container's own env. */
function podEnv(workload: Manifest): Record<string, string> {
  const env: Record<string, string> = {};
  for (const source of container(workload).envFrom ?? []) {
    const name = source.configMapRef?.name ?? source.secretRef?.name;
    const kind = source.configMapRef ? 'ConfigMap' : 'Secret';
    const object = ofKind(docs, kind).find((doc) => doc.metadata.name === name);
    if (!object) throw new Error(`${kind} ${name} is referenced but not defined in k8s/`);
    Object.assign(env, object.data ?? object.stringData);
  }
  for (const { name, value } of container(workload).env ?? []) env[name] = value;
  return env;
}

const podConfig = (workload: Manifest): Config => loadConfig(podEnv(workload));

/** A named container port's number. */
function portNumber(workload: Manifest, name: string | number): number {
  if (typeof name === 'number') return name;
  const port = container(workload).ports.find((p: Manifest) => p.name === name);
  if (!port) throw new Error(`${workload.metadata.name} has no container port named ${name}`);
  return port.containerPort;
}

const relayServices = (): [string, Manifest][] =>
  Object.entries(compose.services as Record<string, Manifest>).filter(([, s]) => s.environment?.RELAY_ROLE);

/** The URL a compose healthcheck fetches (`node -e "fetch('…')…"`: the slim image has no curl). */
function healthcheckUrl(service: Manifest): URL {
  const match = /fetch\('([^']+)'\)/.exec(service.healthcheck.test.join(' '));
  if (!match) throw new Error(`healthcheck does not fetch a URL: ${service.healthcheck.test.join(' ')}`);
  return new URL(match[1]!);
}

describe('deployment manifests', () => {
  describe('schemas', () => {
    for (const { file, doc } of docs.filter(({ doc }) => doc.kind !== 'Kustomization')) {
      it(`k8s/${file}: ${doc.kind} ${doc.metadata?.name} is valid Kubernetes 1.32`, function () {
        this.timeout(30_000); // compiling the large workload schemas once
        expect(kubernetesErrors(doc)).to.equal(undefined);
      });
    }

    it('a typo in a manifest fails the schema (the schemas are strict)', function () {
      this.timeout(30_000);
      const api = structuredClone(deployment('api'));
      api.spec.template.spec.containers[0].readinessprobe =
        api.spec.template.spec.containers[0].readinessProbe;
      expect(kubernetesErrors(api)).to.match(/must NOT have additional properties.*readinessprobe/);
      expect(kubernetesErrors({ ...deployment('api'), apiVersion: 'apps/v1beta1' })).to.match(
        /no Kubernetes/,
      );
    });

    it('kustomization.yaml applies every manifest except the example Secret and the dev Redis', () => {
      const [kustomization, ...others] = ofKind(docs, 'Kustomization');
      expect(others).to.deep.equal([]);
      const files = [...new Set(docs.map(({ file }) => file))].filter((f) => f !== 'kustomization.yaml');
      expect([...kustomization!.resources].sort()).to.deep.equal(
        files.filter((f) => !NOT_APPLIED.includes(f)).sort(),
      );
      const images = relayWorkloads().map((w) => container(w).image);
      expect(kustomization!.images.map((i: Manifest) => i.name)).to.deep.equal([...new Set(images)]);
    });

    // .ci/run installs kubectl; a developer's machine without it still runs every other check.
    if (spawnSync('kubectl', ['version', '--client'], { stdio: 'ignore' }).status === 0) {
      it('kubectl kustomize k8s/ builds every listed object, labelled, valid, with the image renamed', async () => {
        const { stdout } = await promisify(execFile)('kubectl', ['kustomize', 'k8s/'], { cwd: repoRoot });
        const built = parseAllDocuments(stdout).map((document) => document.toJS() as Manifest);
        const id = (doc: Manifest) => `${doc.kind}/${doc.metadata.name}`;
        const listed = docs.filter(
          ({ file }) => !NOT_APPLIED.includes(file) && file !== 'kustomization.yaml',
        );
        expect(built.map(id).sort()).to.deep.equal(listed.map(({ doc }) => id(doc)).sort());
        for (const doc of built) {
          expect(doc.metadata.labels?.['app.kubernetes.io/part-of'], id(doc)).to.equal(RELAY);
          expect(kubernetesErrors(doc), id(doc)).to.equal(undefined);
        }
        const [{ newName, newTag }] = ofKind(docs, 'Kustomization')[0]!.images;
        const images = built.filter((doc) => doc.kind === 'Deployment').map((doc) => container(doc).image);
        expect(images).to.deep.equal([`${newName}:${newTag}`, `${newName}:${newTag}`]);
      });

      describe('components', () => {
        /** `kubectl kustomize` of k8s/ with one component, from an overlay outside the repository. */
        const withComponent = async (component: string): Promise<Manifest[]> => {
          const overlay = mkdtempSync(join(tmpdir(), 'relay-kustomize-'));
          try {
            const base = relative(overlay, join(repoRoot, 'k8s'));
            writeFileSync(
              join(overlay, 'kustomization.yaml'),
              `apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ${base}\n` +
                `components:\n  - ${base}/components/${component}\n`,
            );
            const { stdout } = await promisify(execFile)('kubectl', ['kustomize', overlay]);
            return parseAllDocuments(stdout).map((document) => document.toJS() as Manifest);
          } finally {
            rmSync(overlay, { recursive: true, force: true });
          }
        };

        for (const component of readdirSync(join(repoRoot, 'k8s/components'))) {
          it(`${component}: builds with k8s/, every object valid`, async () => {
            for (const doc of await withComponent(component)) {
              expect(kubernetesErrors(doc), `${doc.kind}/${doc.metadata.name}`).to.equal(undefined);
            }
          });
        }

        it('hpa-sockets: the API scales on CPU and on the open sockets per pod that prometheus-adapter serves', async () => {
          const built = await withComponent('hpa-sockets');
          const hpa = built.find((doc) => doc.kind === 'HorizontalPodAutoscaler')!;
          expect(hpa.spec.metrics).to.deep.equal([
            ...ofKind(docs, 'HorizontalPodAutoscaler')[0]!.spec.metrics,
            {
              type: 'Pods',
              pods: {
                metric: { name: 'relay_sockets_connected' },
                target: { type: 'AverageValue', averageValue: '5000' },
              },
            },
          ]);
          expect(hpa.spec.metrics[0].resource.name).to.equal('cpu');
          // The adapter serves the relay's gauge under the name the HPA asks for.
          const [rule] = (parse(readRepoFile('deploy/prometheus/adapter-values.yaml')) as Manifest).rules
            .custom;
          expect(rule.name.as).to.equal('relay_sockets_connected');
          expect(rule.seriesQuery).to.match(/^relay_sockets_connected\{/);
          expect(await registry.getSingleMetric('relay_sockets_connected')?.get()).to.include({
            type: 'gauge',
          });
        });

        it('push-fcm: the worker sends through FCM with the key mounted from a Secret; API pods need no key', async () => {
          const built = await withComponent('push-fcm');
          const data = built.find((doc) => doc.kind === 'ConfigMap')!.data as Record<string, string>;
          const worker = built.find(
            (doc) => doc.kind === 'Deployment' && doc.metadata.name === 'multisig-relay-worker',
          )!;
          const file = data.FCM_SERVICE_ACCOUNT_FILE!;
          const mount = container(worker).volumeMounts.find((m: Manifest) =>
            file.startsWith(`${m.mountPath}/`),
          );
          expect(mount).to.include({ name: 'fcm-service-account', readOnly: true });
          const volume = podSpec(worker).volumes.find((v: Manifest) => v.name === mount.name);
          expect(volume.secret.secretName).to.equal('multisig-relay-fcm');
          expect(`${mount.mountPath}/${volume.secret.items[0].path}`).to.equal(file);
          const api = built.find(
            (doc) => doc.kind === 'Deployment' && doc.metadata.name !== 'multisig-relay-worker',
          )!;
          expect(podSpec(api).volumes?.map((v: Manifest) => v.name) ?? []).to.not.include(
            'fcm-service-account',
          );

          // The worker loads its configuration with a real key at that path; the API without one.
          const fcm = await new FakeFcm().start();
          const key = fcm.serviceAccountFile();
          await fcm.stop();
          const env = { ...podEnv(deployment('worker')), ...data };
          expect(loadConfig({ ...env, RELAY_ROLE: 'worker', FCM_SERVICE_ACCOUNT_FILE: key }).push).to.include(
            {
              provider: 'fcm',
            },
          );
          expect(() => loadConfig({ ...env, RELAY_ROLE: 'worker' })).to.throw(/FCM_SERVICE_ACCOUNT_FILE/);
          expect(loadConfig({ ...env, RELAY_ROLE: 'api' }).push.provider).to.equal('fcm');
        });
      });
    }

    it("every `kubectl apply` in the README and docs/operations.md names the operations guide's namespace", () => {
      const applies = (file: string) =>
        [...readRepoFile(file).matchAll(/kubectl apply [^`]*/g)].map((m) => m[0]);
      const guide = applies('docs/operations.md');
      const namespaces = new Set(guide.map((command) => / -n (\S+)/.exec(command)?.[1]));
      expect([...namespaces]).to.deep.equal([RELAY]);
      const readme = applies('README.md');
      expect(readme).to.not.deep.equal([]);
      for (const command of readme) expect(command).to.include(` -n ${RELAY}`);
    });

    it('docker-compose.yml is valid for the Compose spec', function () {
      this.timeout(30_000);
      expect(composeErrors(compose)).to.equal(undefined);
    });
  });

  describe('configuration drift', () => {
    it('every variable named in the ConfigMap, Secret, Deployments and compose is one the loader knows', () => {
      const named = [
        ...relayWorkloads().flatMap((w) => Object.keys(podEnv(w))),
        ...relayServices().flatMap(([, s]) => Object.keys(s.environment)),
      ];
      expect(named.filter((name) => !knownEnvVars().includes(name))).to.deep.equal([]);
    });

    it('each Deployment and compose service loads its configuration and runs the role it is named for', () => {
      expect(relayWorkloads().map((w) => podConfig(w).role)).to.deep.equal(['api', 'worker']);
      const roles = relayServices().map(([name, s]) => [name, loadConfig(s.environment).role]);
      expect(roles).to.deep.equal([
        ['api-1', 'api'],
        ['api-2', 'api'],
        ['worker', 'worker'],
      ]);
    });

    it('the example Secret holds placeholders only', () => {
      const secret = ofKind(docs, 'Secret')[0]!;
      for (const value of Object.values(secret.stringData as Record<string, string>)) {
        expect(value).to.include('CHANGE_ME');
      }
    });
  });

  describe('ports, probes and health checks against the running app', () => {
    let api: TestApi;
    let metrics: MetricsHandle;
    /** Configured port → the URL of a test server playing that listener. */
    let servers: Map<number, string>;

    before(async () => {
      api = await startTestApi();
      const found = await startMetricsServer(
        loadConfig(testEnv({ METRICS_PORT: String(await freePort()) })),
        createLogger('error', {}, () => {}),
      );
      if (!found) throw new Error('metrics server not started');
      metrics = found;
      const config = podConfig(deployment('api'));
      servers = new Map([
        [config.port, api.url],
        [config.metricsPort, metrics.url],
      ]);
    });
    after(async () => {
      await api.stop();
      await metrics.stop();
    });

    /** Every httpGet probe of the relay's Deployments, with the listener it reaches. */
    function probes(): { workload: string; kind: string; path: string; port: number }[] {
      return relayWorkloads().flatMap((w) =>
        ['startupProbe', 'readinessProbe', 'livenessProbe']
          .filter((kind) => container(w)[kind])
          .map((kind) => ({
            workload: w.metadata.name,
            kind,
            path: container(w)[kind].httpGet.path,
            port: portNumber(w, container(w)[kind].httpGet.port),
          })),
      );
    }

    async function status(port: number, path: string): Promise<number> {
      const base = servers.get(port);
      if (!base) throw new Error(`port ${port} is neither the configured API port nor the metrics port`);
      return (await fetch(base + path)).status;
    }

    it('container ports are the configured API and metrics ports; Service, annotations and policies name them', () => {
      const config = podConfig(deployment('api'));
      expect(portNumber(deployment('api'), 'http')).to.equal(config.port);
      for (const workload of relayWorkloads()) {
        const metricsPort = podConfig(workload).metricsPort;
        expect(portNumber(workload, 'metrics')).to.equal(metricsPort);
        expect(workload.spec.template.metadata.annotations).to.deep.equal({
          'prometheus.io/scrape': 'true',
          'prometheus.io/port': String(metricsPort),
          'prometheus.io/path': '/metrics',
        });
      }
      const service = ofKind(docs, 'Service', 'api')[0]!;
      for (const port of service.spec.ports) portNumber(deployment('api'), port.targetPort);
      expect(service.spec.ports.map((p: Manifest) => p.name)).to.include('metrics');
      for (const policy of ofKind(docs, 'NetworkPolicy').filter(
        (p) => p.metadata.labels?.['app.kubernetes.io/name'] === RELAY,
      )) {
        for (const rule of policy.spec.ingress ?? []) {
          for (const { port } of rule.ports) portNumber(deployment('api'), port);
        }
      }
    });

    it('GET /metrics on the annotated port answers in the Prometheus format', async () => {
      const port = Number(deployment('api').spec.template.metadata.annotations['prometheus.io/port']);
      const res = await fetch(servers.get(port) + '/metrics');
      expect(res.status).to.equal(200);
      expect(await res.text()).to.match(/^# TYPE relay_http_requests_total counter$/m);
    });

    it('every probe path answers 200 on the port it names; readiness is /readyz, liveness /healthz', async () => {
      const found = probes();
      expect(found.filter((p) => p.kind === 'readinessProbe').map((p) => p.path)).to.deep.equal(['/readyz']);
      expect(found.filter((p) => p.kind === 'livenessProbe').map((p) => p.path)).to.deep.equal([
        '/healthz',
        '/healthz',
      ]);
      for (const probe of found) {
        expect([probe, await status(probe.port, probe.path)]).to.deep.equal([probe, 200]);
      }
    });

    it('liveness never checks Redis: with Redis down the liveness paths answer 200 while /readyz is 503', async () => {
      await testRedis().stop();
      try {
        for (const probe of probes().filter((p) => p.kind !== 'readinessProbe')) {
          expect([probe, await status(probe.port, probe.path)]).to.deep.equal([probe, 200]);
        }
        const readiness = probes().find((p) => p.kind === 'readinessProbe')!;
        expect(await status(readiness.port, readiness.path)).to.equal(503);
      } finally {
        await testRedis().start();
      }
      await waitUntilReady(api.url);
    });

    it('compose health checks ask /readyz of the APIs and /healthz of the worker, on their configured ports', async () => {
      for (const [name, service] of relayServices()) {
        const config = loadConfig(service.environment);
        const url = healthcheckUrl(service);
        const expected = config.role === 'api' ? [config.port, '/readyz'] : [config.metricsPort, '/healthz'];
        expect([name, Number(url.port), url.pathname]).to.deep.equal([name, ...expected]);
        expect(await status(Number(url.port), url.pathname)).to.equal(200);
      }
    });

    it('nginx balances over the compose API services on their port and listens on the published port', () => {
      const nginx = readRepoFile('deploy/nginx.conf');
      const apis = relayServices().filter(([, s]) => s.environment.RELAY_ROLE === 'api');
      // Every upstream (REST and sockets) lists exactly the compose API services.
      const upstreams = [...nginx.matchAll(/^\s*upstream\s+(\w+)\s*\{([^}]*)\}/gm)];
      expect(upstreams.map((m) => m[1])).to.deep.equal(['relay_api', 'relay_sockets']);
      for (const [, , block] of upstreams) {
        const servers = [...block!.matchAll(/^\s*server\s+([\w.-]+):(\d+)/gm)].map((m) => [
          m[1],
          Number(m[2]),
        ]);
        expect(servers).to.deep.equal(apis.map(([name, s]) => [name, loadConfig(s.environment).port]));
      }
      const listen = Number(/^\s*listen\s+(\d+);/m.exec(nginx)?.[1]);
      expect(compose.services.lb.ports).to.deep.equal([`9876:${listen}`]);
      expect(compose.services.lb.volumes).to.deep.equal(['./deploy/nginx.conf:/etc/nginx/nginx.conf:ro']);
      expect(Object.keys(compose.services.lb.depends_on).sort()).to.deep.equal(
        apis.map(([name]) => name).sort(),
      );
      // The API trusts exactly the one proxy in front of it for the client address (rate limits per IP).
      expect(apis.map(([, s]) => loadConfig(s.environment).rateLimit.trustProxyHops)).to.deep.equal([1, 1]);
    });

    it('nginx: /v1/socket/ goes to the upstream hashing the client address, with WebSocket upgrades passed', () => {
      const nginx = readRepoFile('deploy/nginx.conf');
      const sockets = /^\s*upstream relay_sockets\s*\{([^}]*)\}/m.exec(nginx)?.[1] ?? '';
      expect(sockets).to.match(/^\s*hash \$binary_remote_addr consistent;/m);
      const location = /location \/v1\/socket\/ \{([^}]*)\}/.exec(nginx)?.[1] ?? '';
      expect(location).to.include('proxy_pass http://relay_sockets;');
      expect(location).to.include('proxy_set_header Upgrade $http_upgrade;');
      expect(location).to.include('proxy_set_header Connection $connection_upgrade;');
      expect(nginx).to.match(/map \$http_upgrade \$connection_upgrade \{\s*default upgrade;\s*'' '';\s*\}/);
      // Longer than socket.io's ping interval + timeout (25 s + 20 s), or idle sockets would be cut.
      expect(Number(/proxy_read_timeout (\d+)s;/.exec(location)?.[1])).to.be.greaterThan(45);
    });

    it('k8s: the socket path has its own Ingress hashing the client address, on a Service of the API pods', () => {
      const ingresses = ofKind(docs, 'Ingress');
      const routes = ingresses.flatMap((ingress) =>
        ingress.spec.rules.flatMap((rule: Manifest) =>
          rule.http.paths.map((path: Manifest) => ({
            ingress,
            path: path.path,
            service: path.backend.service,
          })),
        ),
      );
      expect(routes.map((r) => [r.path, r.service.name])).to.deep.equal([
        ['/', 'multisig-relay-api'],
        ['/v1/socket/', 'multisig-relay-sockets'],
      ]);
      const socketRoute = routes.find((r) => r.path === '/v1/socket/')!;
      const annotations = socketRoute.ingress.metadata.annotations;
      expect(annotations['nginx.ingress.kubernetes.io/upstream-hash-by']).to.equal('$binary_remote_addr');
      expect(Number(annotations['nginx.ingress.kubernetes.io/proxy-read-timeout'])).to.be.greaterThan(45);
      // Through the ClusterIP, kube-proxy would pick the pod and the hash would mean nothing.
      for (const ingress of ingresses) {
        expect(ingress.metadata.annotations?.['nginx.ingress.kubernetes.io/service-upstream']).to.equal(
          undefined,
        );
      }
      // Its own Service: ingress-nginx keeps one upstream per Service port, so the REST paths keep their balancing.
      const service = ofKind(docs, 'Service').find((s) => s.metadata.name === socketRoute.service.name)!;
      expect(service.spec.selector).to.deep.equal(deployment('api').spec.selector.matchLabels);
      expect(service.spec.sessionAffinity ?? 'None').to.equal('None');
      const port = service.spec.ports.find((p: Manifest) => p.name === socketRoute.service.port.name);
      expect(portNumber(deployment('api'), port.targetPort)).to.equal(podConfig(deployment('api')).port);
    });

    it('compose Redis runs Redis 7 with noeviction, AOF and 1 KB stream nodes', () => {
      const redis = compose.services.redis;
      expect(redis.image).to.match(/^redis:7/);
      const args = redis.command.join(' ');
      expect(args).to.include('--maxmemory-policy noeviction');
      expect(args).to.include('--appendonly yes');
      expect(args).to.include('--stream-node-max-bytes 1024');
      const dev = container(ofKind(docs, 'StatefulSet')[0]!).args.join(' ');
      expect(dev).to.include('--maxmemory-policy noeviction');
      expect(dev).to.include('--stream-node-max-bytes 1024');
    });
  });

  describe('rollout and shutdown', () => {
    it('the API keeps ≥ 2 replicas, never drops capacity in a rollout, and the HPA and PDB select it', () => {
      const api = deployment('api');
      expect(api.spec.replicas).to.be.at.least(2);
      expect(api.spec.strategy.rollingUpdate.maxUnavailable).to.equal(0);
      const [hpa] = ofKind(docs, 'HorizontalPodAutoscaler');
      expect(hpa!.spec.scaleTargetRef).to.deep.equal({
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        name: api.metadata.name,
      });
      expect(hpa!.spec.minReplicas).to.be.at.least(2);
      const [pdb] = ofKind(docs, 'PodDisruptionBudget');
      expect(pdb!.spec.selector.matchLabels).to.deep.equal(api.spec.selector.matchLabels);
      expect(ofKind(docs, 'Service', 'api')[0]!.spec.selector).to.deep.equal(api.spec.selector.matchLabels);
      for (const workload of relayWorkloads()) {
        expect(workload.spec.template.metadata.labels).to.deep.include(workload.spec.selector.matchLabels);
      }
    });

    it('terminationGracePeriodSeconds exceeds the preStop sleep plus the drain bound (SHUTDOWN_TIMEOUT_MS)', () => {
      for (const workload of relayWorkloads()) {
        const sleep = container(workload).lifecycle?.preStop?.sleep?.seconds ?? 0;
        const drain = podConfig(workload).shutdownTimeoutMs / 1000;
        expect(podSpec(workload).terminationGracePeriodSeconds).to.be.greaterThan(sleep + drain);
      }
      expect(container(deployment('api')).lifecycle.preStop.sleep.seconds).to.be.greaterThan(0);
      // Compose stops containers with the same margin.
      for (const [, service] of relayServices()) {
        const grace = Number(/^(\d+)s$/.exec(service.stop_grace_period)?.[1]);
        expect(grace).to.be.greaterThan(loadConfig(service.environment).shutdownTimeoutMs / 1000);
      }
    });

    it('the relay pods have requests and limits', () => {
      for (const workload of relayWorkloads()) {
        const { requests, limits } = container(workload).resources;
        expect(Object.keys(requests).sort()).to.deep.equal(['cpu', 'memory']);
        expect(Object.keys(limits).sort()).to.deep.equal(['cpu', 'memory']);
      }
    });
  });

  describe('security', () => {
    const imageUser = Number(
      /^(\d+)/.exec(finalStage.instructions.findLast((i) => i.op === 'USER')?.args ?? '')?.[1],
    );

    it('every pod meets the restricted Pod Security Standard, read-only root and a writable /tmp or data volume', () => {
      for (const workload of [...relayWorkloads(), ...ofKind(docs, 'StatefulSet')]) {
        const spec = podSpec(workload);
        expect(spec.securityContext).to.deep.include({
          runAsNonRoot: true,
          seccompProfile: { type: 'RuntimeDefault' },
        });
        expect(spec.automountServiceAccountToken).to.equal(false);
        for (const c of spec.containers) {
          expect(c.securityContext).to.deep.equal({
            allowPrivilegeEscalation: false,
            readOnlyRootFilesystem: true,
            capabilities: { drop: ['ALL'] },
          });
        }
      }
      for (const workload of relayWorkloads()) {
        expect(podSpec(workload).securityContext.runAsUser).to.equal(imageUser);
        const tmp = container(workload).volumeMounts.find((m: Manifest) => m.mountPath === '/tmp');
        const volume = podSpec(workload).volumes.find((v: Manifest) => v.name === tmp?.name);
        expect(volume?.emptyDir).to.be.an('object');
      }
    });

    it('network policies: default deny, and every policy selects pods that exist', () => {
      const policies = ofKind(docs, 'NetworkPolicy');
      const deny = policies.find((p) => Object.keys(p.spec.podSelector).length === 0);
      expect(deny?.spec).to.deep.equal({ podSelector: {}, policyTypes: ['Ingress', 'Egress'] });
      const pods = [...relayWorkloads(), ...ofKind(docs, 'StatefulSet')].map(
        (w) => w.spec.template.metadata.labels,
      );
      for (const policy of policies.filter((p) => p !== deny)) {
        const selects = pods.some((labels) =>
          Object.entries(policy.spec.podSelector.matchLabels).every(([k, v]) => labels[k] === v),
        );
        expect([policy.metadata.name, selects]).to.deep.equal([policy.metadata.name, true]);
      }
    });

    it('the API port admits only the ingress controller (a forged X-Forwarded-For from elsewhere would pick its bucket)', () => {
      const apiPolicies = ofKind(docs, 'NetworkPolicy').filter(
        (p) => p.spec.podSelector.matchLabels?.['app.kubernetes.io/component'] === 'api',
      );
      const rules = apiPolicies.flatMap((p) => p.spec.ingress ?? []);
      expect(
        rules.filter((r: Manifest) => r.ports.some((port: Manifest) => port.port === 'http')),
      ).to.deep.equal([
        {
          from: [
            {
              namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'ingress-nginx' } },
              podSelector: { matchLabels: { 'app.kubernetes.io/name': 'ingress-nginx' } },
            },
          ],
          ports: [{ protocol: 'TCP', port: 'http' }],
        },
      ]);
    });

    it('compose runs the relay as the image user with a read-only root and /tmp as tmpfs', () => {
      for (const [, service] of relayServices()) {
        expect(Number(service.user.split(':')[0])).to.equal(imageUser);
        expect(service.read_only).to.equal(true);
        expect(service.tmpfs).to.deep.equal(['/tmp']);
        expect(service.command).to.equal(undefined);
      }
    });
  });

  describe('image', () => {
    const cmd = JSON.parse(finalStage.instructions.findLast((i) => i.op === 'CMD')!.args) as string[];

    it('Dockerfile: slim Node 24 pinned to the release in .nvmrc, production dependencies only, non-root uid 10001, the compiled entry', () => {
      const nvmrc = readRepoFile('.nvmrc').trim();
      expect(nvmrc).to.match(/^24\.\d+\.\d+$/);
      for (const stage of stages.filter((s) => s.from.startsWith('node:'))) {
        expect(stage.from).to.equal(`node:${nvmrc}-slim`);
      }
      // The lowest supported line: what engines promises and what the types describe.
      expect(packageJson.engines.node).to.equal('>=22');
      expect(packageJson.devDependencies['@types/node']).to.match(/^22\./);
      const copiedFrom = finalStage.instructions
        .filter((i) => i.op === 'COPY')
        .map((i) => [/--from=(\S+)/.exec(i.args)?.[1], i.args.split(/\s+/).at(-1)]);
      const modulesStage = stages.find(
        (s) => s.name === copiedFrom.find(([, to]) => to === './node_modules')?.[0],
      );
      expect(
        modulesStage?.instructions.some((i) => i.op === 'RUN' && /\bnpm ci --omit=dev\b/.test(i.args)),
      ).to.equal(true);
      expect(copiedFrom.map(([, to]) => to)).to.include.members(['./', './node_modules', './dist']);
      expect(finalStage.instructions.findLast((i) => i.op === 'USER')?.args).to.equal('10001:10001');
      expect(cmd).to.deep.equal(['node', 'dist/src/main.js']);
      for (const workload of relayWorkloads()) expect(container(workload).command).to.equal(undefined);
      expect(Object.keys(packageJson.devDependencies)).to.include('tsx');
      expect(Object.keys(packageJson.dependencies)).not.to.include('tsx');
    });

    it('the node_modules stage compiles secp256k1’s binding from source and checks it loads; no compiler in the image', () => {
      const deps = stages.find((s) => s.name === 'deps')!;
      const runs = deps.instructions.filter((i) => i.op === 'RUN').map((i) => i.args);
      expect(runs.some((run) => /apt-get install .*\bg\+\+ make python3\b/.test(run))).to.equal(true);
      const install = runs.find((run) => /\bnpm ci --omit=dev\b/.test(run))!;
      expect(install).to.match(
        /rm -rf node_modules\/secp256k1\/prebuilds && npm rebuild secp256k1 .*require\('secp256k1\/bindings'\)/,
      );
      expect(packageJson.allowScripts).to.deep.equal({ secp256k1: true });
      expect(finalStage.instructions.filter((i) => i.op === 'RUN')).to.deep.equal([]);
    });

    it('the build stage copies every root of tsconfig.build.json, and .dockerignore lets them in', () => {
      const build = JSON.parse(readRepoFile('tsconfig.build.json')) as Manifest;
      const roots = (build.include as string[]).filter((dir) => existsSync(join(repoRoot, dir)));
      const copied = stages
        .find((s) => s.name === 'build')!
        .instructions.filter((i) => i.op === 'COPY' && !i.args.includes('--from'))
        .flatMap((i) => i.args.split(/\s+/).slice(0, -1));
      expect(copied).to.include.members(roots);
      const allowed = readRepoFile('.dockerignore')
        .split('\n')
        .filter((line) => line.startsWith('!'))
        .map((line) => line.slice(1));
      const context = [
        ...copied,
        ...stages[0]!.instructions
          .filter((i) => i.op === 'COPY')
          .flatMap((i) => i.args.split(/\s+/).slice(0, -1)),
      ];
      expect(allowed).to.include.members(context);
    });

    describe('npm run build', () => {
      before(async function () {
        this.timeout(60_000);
        rmSync(join(repoRoot, 'dist'), { recursive: true, force: true });
        await promisify(execFile)('npm', ['run', 'build'], { cwd: repoRoot });
      });

      it('produces the file the image runs', () => {
        expect(statSync(join(repoRoot, cmd[1]!)).isFile()).to.equal(true);
      });

      it('ships every Lua script and fragment beside the module that reads it', () => {
        const lua = ['src', 'worker'].flatMap((dir) =>
          readdirSync(join(repoRoot, dir), { recursive: true, encoding: 'utf8' })
            .filter((file) => file.endsWith('.lua'))
            .map((file) => join(dir, file)),
        );
        expect(lua).to.include('src/core/limits/lua/includes/consume-global-limit.lua');
        for (const file of lua) {
          expect(readFileSync(join(repoRoot, 'dist', file), 'utf8'), file).to.equal(
            readFileSync(join(repoRoot, file), 'utf8'),
          );
        }
      });

      it('the compiled code imports only production dependencies and Node built-ins', () => {
        const production = Object.keys(packageJson.dependencies);
        const imported = new Set<string>();
        const walk = (dir: string) => {
          for (const entry of readdirSync(dir, { withFileTypes: true })) {
            const path = join(dir, entry.name);
            if (entry.isDirectory()) walk(path);
            else if (entry.name.endsWith('.js')) {
              const text = readFileSync(path, 'utf8');
              for (const m of text.matchAll(/(?:\bfrom\s*|\bimport\s*\(?\s*)['"]([^'"]+)['"]/g))
                imported.add(m[1]!);
            }
          }
        };
        walk(join(repoRoot, 'dist'));
        const packages = [...imported]
          .filter(
            (spec) => !spec.startsWith('.') && !spec.startsWith('node:') && !builtinModules.includes(spec),
          )
          .map((spec) =>
            spec
              .split('/')
              .slice(0, spec.startsWith('@') ? 2 : 1)
              .join('/'),
          );
        expect([...new Set(packages)].filter((name) => !production.includes(name))).to.deep.equal([]);
      });

      it('runs with plain node (no tsx), serves /readyz and /metrics, and exits 0 on SIGTERM', async function () {
        this.timeout(30_000);
        const [port, metricsPort] = [await freePort(), await freePort()];
        const child = spawn(process.execPath, [cmd[1]!], {
          cwd: repoRoot,
          env: {
            PATH: process.env.PATH,
            RELAY_ROLE: 'api',
            REDIS_URL: testRedis().url,
            HOST: '127.0.0.1',
            PORT: String(port),
            METRICS_PORT: String(metricsPort),
            LOG_LEVEL: 'warn',
            RELAY_COMMIT: 'built-here',
          },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let output = '';
        child.stdout.on('data', (chunk) => (output += chunk));
        child.stderr.on('data', (chunk) => (output += chunk));
        const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
        try {
          await waitUntilReady(`http://127.0.0.1:${port}`, 10_000);
          const scraped = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
          expect(scraped.status).to.equal(200);
          // dist/src/ finds the package.json two levels up, as the image's /app/dist/src/ does.
          expect(await scraped.text()).to.include(
            `relay_build_info{version="${packageJson.version}",commit="built-here"} 1\n`,
          );
        } catch (err) {
          child.kill('SIGKILL');
          throw new Error(`${(err as Error).message}; the process wrote: ${output}`, { cause: err });
        }
        child.kill('SIGTERM');
        expect([await exited, output]).to.deep.equal([0, output]);
      });
    });
  });
});
