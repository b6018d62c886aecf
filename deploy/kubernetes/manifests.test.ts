/**
 * deploy/kubernetes/ without a cluster: the kustomization rendered as kustomize renders it
 * (test-support/render.ts says which of its features that covers; it refuses the others), each
 * object validated against the Kubernetes OpenAPI schemas (compiled into the `kubernetes-models`
 * package: no network at test time), unknown fields refused as `kubectl apply` refuses them, and
 * what the objects say of each other and of Whetstone checked: selectors, ports, Secrets and
 * their keys, the server's environment as server/env.ts parses it, the worker's as
 * gpu-worker/daemon.ts parses it. Where `kubectl` is installed, its own kustomize renders the
 * folder too and must give the same objects.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { parseArgs } from '../../gpu-worker/daemon';
import { loadEnv } from '../../server/env';
import { crossReferenceProblems, type K8sObject, nameAndQuantityProblems, readYamlObjects, renderKustomization, schemaProblems } from './test-support/render';

const dir = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(dir, '../..');
const objects = renderKustomization(dir);
const secrets = readYamlObjects(path.join(dir, 'secret.example.yaml'));
const kustomization = readYamlObjects(path.join(dir, 'kustomization.yaml'))[0];

const find = (kind: string, name: string): K8sObject => {
  const o = objects.find((x) => x.kind === kind && x.metadata.name === name);
  if (!o) throw new Error(`no ${kind} ${name} in the rendered kustomization`);
  return o;
};
const server = find('Deployment', 'whetstone-server');
const worker = find('Deployment', 'whetstone-worker');
const container = (d: K8sObject) => d.spec.template.spec.containers[0];

/** A container's environment as the pod gets it: its ConfigMaps, then env, Secrets from the example. */
function podEnvironment(c: any): Record<string, string> {
  const env: Record<string, string> = {};
  for (const from of c.envFrom ?? []) Object.assign(env, find('ConfigMap', from.configMapRef.name).data);
  for (const e of c.env ?? []) {
    const ref = e.valueFrom?.secretKeyRef;
    env[e.name] = ref ? secrets.find((s) => s.metadata.name === ref.name)!.stringData[ref.key] : e.value;
  }
  return env;
}

describe('deploy/kubernetes', () => {
  it('renders the server, its Service, Ingress, budget, data and settings, and the workers', () => {
    expect(objects.map((o) => `${o.kind}/${o.metadata.name}`).sort()).toEqual([
      'ConfigMap/whetstone-config',
      'Deployment/whetstone-server',
      'Deployment/whetstone-worker',
      'Ingress/whetstone',
      'Namespace/whetstone',
      'PersistentVolumeClaim/whetstone-data',
      'PodDisruptionBudget/whetstone-server',
      'Service/whetstone-server',
    ]);
    for (const o of objects) {
      expect(o.metadata.labels?.['app.kubernetes.io/part-of']).toBe('whetstone');
      if (o.kind !== 'Namespace') expect(o.metadata.namespace).toBe('whetstone');
    }
  });

  it('every object, and the example Secrets, pass the Kubernetes schemas, with no unknown field', () => {
    for (const o of [...objects, ...secrets]) {
      expect({ object: `${o.kind}/${o.metadata.name}`, problems: [...schemaProblems(o), ...nameAndQuantityProblems(o)] }).toEqual({
        object: `${o.kind}/${o.metadata.name}`,
        problems: [],
      });
    }
  });

  it('the objects refer only to what exists: selectors, ports, Secrets and their keys, volumes', () => {
    expect(crossReferenceProblems(objects, secrets)).toEqual([]);
  });

  it('the example Secrets are examples: not rendered, placeholders only, in the namespace', () => {
    expect(kustomization.resources).not.toContain('secret.example.yaml');
    expect(secrets.map((s) => s.metadata.name).sort()).toEqual(['whetstone-server', 'whetstone-worker']);
    for (const s of secrets) {
      expect(s.metadata.namespace).toBe(kustomization.namespace);
      for (const value of Object.values<string>(s.stringData)) expect(value).toContain('CHANGE-ME');
    }
  });

  it('the server runs against the external PostgreSQL, without the embedded one or a local worker', () => {
    const c = container(server);
    const env = loadEnv(podEnvironment(c));
    // DATABASE_URL set is what keeps the embedded PostgreSQL from starting (server/db/open.ts).
    expect(env.DATABASE_URL).toMatch(/^postgresql:\/\//);
    expect(env.WHETSTONE_LOCAL_WORKER).toBe(false);
    expect(env.WHETSTONE_AUTH_SECRET!.length).toBeGreaterThanOrEqual(32);
    expect(env.HOST).toBe('0.0.0.0');
    expect(c.ports).toContainEqual({ name: 'http', containerPort: env.PORT });
    expect(c.volumeMounts.map((m: any) => m.mountPath)).toContain(env.WHETSTONE_HOME);
    expect(new URL(env.WHETSTONE_PUBLIC_URL!).host).toBe(find('Ingress', 'whetstone').spec.rules[0].host);
    for (const probe of ['startupProbe', 'readinessProbe', 'livenessProbe']) expect(c[probe].httpGet).toEqual({ path: '/api/health', port: 'http' });
  });

  it('the Ingress passes socket.io WebSockets and keeps a client on one replica', () => {
    const annotations = find('Ingress', 'whetstone').metadata.annotations;
    expect(Number(annotations['nginx.ingress.kubernetes.io/proxy-read-timeout'])).toBeGreaterThanOrEqual(3600);
    expect(Number(annotations['nginx.ingress.kubernetes.io/proxy-send-timeout'])).toBeGreaterThanOrEqual(3600);
    expect(annotations['nginx.ingress.kubernetes.io/upstream-hash-by']).toBeTruthy();
    expect(find('Service', 'whetstone-server').spec.sessionAffinity).toBe('ClientIP');
  });

  it('a worker asks for one GPU and takes its server and token from the environment, as the daemon reads them', () => {
    const c = container(worker);
    expect(c.resources.requests['nvidia.com/gpu']).toBe(1);
    expect(c.resources.limits['nvidia.com/gpu']).toBe(1);
    expect(c.env.find((e: any) => e.name === 'WHETSTONE_WORKER_TOKEN').valueFrom.secretKeyRef).toEqual({ name: 'whetstone-worker', key: 'WHETSTONE_WORKER_TOKEN' });
    const env = podEnvironment(c);
    const args = parseArgs(c.args.slice(c.args.indexOf('gpu-worker/daemon.ts') + 1), env as NodeJS.ProcessEnv);
    expect(args.token).toBe(env.WHETSTONE_WORKER_TOKEN);
    expect(c.args.join(' ')).not.toContain('wst_');
    // The URL names the server's Service, on one of its ports.
    const url = new URL(args.server);
    const service = find('Service', url.hostname);
    expect(service.spec.ports.map((p: any) => p.port)).toContain(Number(url.port || 80));
    // The credential the daemon saves lives in WHETSTONE_HOME: a volume, not the read-only root.
    const home = c.volumeMounts.find((m: any) => m.mountPath === env.WHETSTONE_HOME);
    expect(worker.spec.template.spec.volumes.find((v: any) => v.name === home.name).emptyDir).toBeDefined();
    // Long enough for the drain: jobs get 120 s to checkpoint after SIGTERM.
    expect(worker.spec.template.spec.terminationGracePeriodSeconds).toBeGreaterThan(120);
  });

  it('every container runs as the image user, unprivileged, on a read-only root, with requests and limits', () => {
    const uid = /^USER\s+(\d+)/m.exec(fs.readFileSync(path.join(repoRoot, 'Dockerfile'), 'utf8'))?.[1];
    expect(uid).toBeDefined();
    const [{ newName, newTag }] = kustomization.images;
    for (const d of [server, worker]) {
      const pod = d.spec.template.spec;
      expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: Number(uid) });
      for (const c of pod.containers) {
        expect(c.image).toBe(`${newName}:${newTag}`);
        expect(c.securityContext).toEqual({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } });
        for (const kind of ['requests', 'limits']) expect(Object.keys(c.resources[kind])).toEqual(expect.arrayContaining(['cpu', 'memory']));
      }
    }
  });

  describe('the checks fail when they should', () => {
    const mutated = (o: K8sObject, change: (copy: any) => void) => {
      const copy = structuredClone(o);
      change(copy);
      return copy;
    };

    it('a wrong type, a missing required field and a misspelt field are refused by the schema check', () => {
      expect(schemaProblems(mutated(server, (d) => (d.spec.replicas = 'two')))).toEqual([expect.stringContaining('replicas must be integer')]);
      expect(schemaProblems(mutated(worker, (d) => delete d.spec.template.spec.containers[0].name))).toEqual([expect.stringContaining('must have required property name')]);
      expect(
        schemaProblems(
          mutated(server, (d) => {
            d.spec.template.spec.containers[0].readinesProbe = d.spec.template.spec.containers[0].readinessProbe;
          }),
        ),
      ).toEqual(['/spec/template/spec/containers/0/readinesProbe: not a field of apps/v1 Deployment']);
      expect(nameAndQuantityProblems(mutated(worker, (d) => (d.spec.template.spec.containers[0].resources.limits.memory = '32 GB')))).toHaveLength(1);
    });

    it('broken references are found', () => {
      const withServer = (d: K8sObject) => objects.map((o) => (o === server ? d : o));
      expect(crossReferenceProblems(withServer(mutated(server, (d) => (d.spec.template.metadata.labels['app.kubernetes.io/component'] = 'web'))), secrets)).toEqual(
        expect.arrayContaining([expect.stringContaining('selector does not match'), expect.stringContaining('Service whetstone-server: its selector matches no pod template')]),
      );
      expect(crossReferenceProblems(withServer(mutated(server, (d) => (d.spec.template.spec.containers[0].livenessProbe.httpGet.port = 'htp'))), secrets)).toEqual([
        expect.stringContaining('livenessProbe port htp'),
      ]);
      const renamedKey = secrets.map((s) => mutated(s, (copy) => (copy.stringData = { DATABASE_URI: 'x', WHETSTONE_AUTH_SECRET: 'y', WHETSTONE_WORKER_TOKEN: 'z' })));
      expect(crossReferenceProblems(objects, renamedKey)).toEqual([expect.stringContaining('wants key DATABASE_URL of Secret whetstone-server')]);
    });

    it('the renderer refuses a kustomization field it does not know', () => {
      const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'whetstone-kustomize-'));
      try {
        fs.writeFileSync(path.join(tmp, 'kustomization.yaml'), 'apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: []\npatches: []\n');
        expect(() => renderKustomization(tmp)).toThrow('kustomization field "patches" is not supported');
      } finally {
        fs.rmSync(tmp, { recursive: true, force: true });
      }
    });
  });

  const kubectl = spawnSync('kubectl', ['version', '--client'], { encoding: 'utf8' }).status === 0;
  if (!kubectl) console.warn('[skipped] comparing with kubectl kustomize: no kubectl on PATH (the schema checks above ran)');
  it.skipIf(!kubectl)('kubectl kustomize renders the same objects', () => {
    const text = execFileSync('kubectl', ['kustomize', dir], { encoding: 'utf8' });
    const theirs = parseAllDocuments(text).map((d) => d.toJS() as K8sObject);
    const key = (o: K8sObject) => `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;
    const sorted = (list: K8sObject[]) => [...list].sort((a, b) => key(a).localeCompare(key(b)));
    expect(sorted(objects)).toEqual(sorted(theirs));
  });

  it.skipIf(!kubectl)("docs/deploying.md's example overlay renders, and its objects pass the schemas", () => {
    const doc = fs.readFileSync(path.join(repoRoot, 'docs/deploying.md'), 'utf8');
    const block = /^( *)```yaml\n([\s\S]*?)^\1```/m.exec(doc);
    expect(block).not.toBeNull();
    const overlay = fs.mkdtempSync(path.join(os.tmpdir(), 'whetstone-overlay-'));
    try {
      const text = block![2].replace(new RegExp(`^ {0,${block![1].length}}`, 'gm'), '');
      expect(text).toContain('../whetstone/deploy/kubernetes');
      // kustomize takes only relative paths to a base: this folder, from the overlay's.
      fs.writeFileSync(path.join(overlay, 'kustomization.yaml'), text.replace('../whetstone/deploy/kubernetes', path.relative(overlay, dir)));
      const rendered = parseAllDocuments(execFileSync('kubectl', ['kustomize', overlay], { encoding: 'utf8' })).map((d) => d.toJS() as K8sObject);
      for (const o of rendered) expect({ object: `${o.kind}/${o.metadata.name}`, problems: schemaProblems(o) }).toEqual({ object: `${o.kind}/${o.metadata.name}`, problems: [] });
      const ingress = rendered.find((o) => o.kind === 'Ingress')!;
      const config = rendered.find((o) => o.kind === 'ConfigMap')!;
      expect(new URL(config.data.WHETSTONE_PUBLIC_URL).host).toBe(ingress.spec.rules[0].host);
      expect(ingress.spec.tls[0].hosts).toEqual([ingress.spec.rules[0].host]);
      expect(rendered.find((o) => o.kind === 'Deployment')!.spec.template.spec.containers[0].image).toBe('registry.example.com/whetstone:0.1.0');
    } finally {
      fs.rmSync(overlay, { recursive: true, force: true });
    }
  });
});
