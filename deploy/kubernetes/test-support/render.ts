/**
 * What manifests.test.ts needs to check deploy/kubernetes/ without a cluster and without a
 * network: a kustomize renderer for this base, and validation against the Kubernetes OpenAPI
 * schemas (the `kubernetes-models` package ships them compiled; no download at test time).
 *
 * The renderer does what `kustomize build` does for the fields it knows, and refuses every other
 * field of the kustomization, so that it can never render something kustomize would render
 * differently without saying so:
 * - `resources`: files in the kustomization's folder (one or more YAML documents each); no
 *   folders, remote bases or overlays;
 * - `namespace`: set on every namespaced object; a Namespace object keeps its name, which must be
 *   that namespace;
 * - `labels`: entries with `pairs` only (added to every object's metadata.labels; not to selectors
 *   or pod templates, as kustomize does without includeSelectors/includeTemplates);
 * - `images`: `name` with `newName`, `newTag` or `digest`, applied to the containers and init
 *   containers of pod templates.
 * The order of the objects is not kustomize's (it sorts by kind): compare them as a set.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { Namespace, ConfigMap, PersistentVolumeClaim, Secret, Service } from 'kubernetes-models/v1';
import { Deployment } from 'kubernetes-models/apps/v1';
import { Ingress } from 'kubernetes-models/networking.k8s.io/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';

/**
 * A tree as YAML gives it: untyped until checked (schemaProblems is that check), read here as it is.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Yaml = any;

/** A Kubernetes object as YAML gives it. */
export type K8sObject = Record<string, Yaml> & { apiVersion: string; kind: string; metadata: Record<string, Yaml> };

/** The kinds this base may hold, each with its schema (a model class) and whether it is namespaced. */
const KINDS: Record<string, { model: { prototype: object }; namespaced: boolean }> = {
  'v1/Namespace': { model: Namespace, namespaced: false },
  'v1/ConfigMap': { model: ConfigMap, namespaced: true },
  'v1/PersistentVolumeClaim': { model: PersistentVolumeClaim, namespaced: true },
  'v1/Secret': { model: Secret, namespaced: true },
  'v1/Service': { model: Service, namespaced: true },
  'apps/v1/Deployment': { model: Deployment, namespaced: true },
  'networking.k8s.io/v1/Ingress': { model: Ingress, namespaced: true },
  'policy/v1/PodDisruptionBudget': { model: PodDisruptionBudget, namespaced: true },
};

const KNOWN_FIELDS = new Set(['apiVersion', 'kind', 'namespace', 'labels', 'images', 'resources']);

/** Every YAML document of a file, parsed strictly (a YAML error is an error here). */
export function readYamlObjects(file: string): K8sObject[] {
  return parseAllDocuments(fs.readFileSync(file, 'utf8'))
    .map((doc) => {
      if (doc.errors.length) throw new Error(`${file}: ${doc.errors[0].message}`);
      return doc.toJS() as K8sObject | null;
    })
    .filter((o): o is K8sObject => o !== null);
}

/** The kustomization in `dir` rendered as `kustomize build dir` would render it. */
export function renderKustomization(dir: string): K8sObject[] {
  const [k, ...more] = readYamlObjects(path.join(dir, 'kustomization.yaml'));
  if (!k || more.length) throw new Error('kustomization.yaml must hold one document');
  if (k.apiVersion !== 'kustomize.config.k8s.io/v1beta1' || k.kind !== 'Kustomization') throw new Error('not a Kustomization');
  for (const field of Object.keys(k)) {
    if (!KNOWN_FIELDS.has(field)) throw new Error(`kustomization field "${field}" is not supported by this renderer (render.ts)`);
  }
  const resources: unknown[] = k.resources ?? [];
  const objects = resources.flatMap((entry) => {
    if (typeof entry !== 'string' || entry.includes('/') || !/\.ya?ml$/.test(entry)) {
      throw new Error(`resource ${JSON.stringify(entry)}: only YAML files in the kustomization's folder are supported`);
    }
    return readYamlObjects(path.join(dir, entry));
  });

  const namespace: string | undefined = k.namespace;
  const labels: Record<string, string> = {};
  for (const entry of k.labels ?? []) {
    for (const key of Object.keys(entry)) if (key !== 'pairs') throw new Error(`labels: "${key}" is not supported by this renderer`);
    Object.assign(labels, entry.pairs);
  }
  const images: Array<{ name: string; newName?: string; newTag?: string; digest?: string }> = k.images ?? [];
  for (const image of images) {
    for (const key of Object.keys(image)) {
      if (!['name', 'newName', 'newTag', 'digest'].includes(key)) throw new Error(`images: "${key}" is not supported by this renderer`);
    }
  }

  return objects.map((source) => {
    const o = structuredClone(source);
    const kind = KINDS[`${o.apiVersion}/${o.kind}`];
    if (!kind) throw new Error(`${o.apiVersion} ${o.kind} ${o.metadata?.name}: no schema for this kind here (add it to KINDS in render.ts)`);
    if (namespace !== undefined) {
      if (kind.namespaced) o.metadata.namespace = namespace;
      else if (o.kind === 'Namespace' && o.metadata.name !== namespace) {
        throw new Error(`Namespace ${o.metadata.name} differs from the kustomization's namespace ${namespace}: not supported by this renderer`);
      }
    }
    if (Object.keys(labels).length) o.metadata.labels = { ...o.metadata.labels, ...labels };
    const pod = o.spec?.template?.spec;
    for (const container of [...(pod?.containers ?? []), ...(pod?.initContainers ?? [])]) {
      const { name, tag, digest } = splitImage(container.image);
      const rule = images.find((i) => i.name === name);
      if (!rule) continue;
      const newName = rule.newName ?? name;
      container.image = rule.digest ? `${newName}@${rule.digest}` : rule.newTag ? `${newName}:${rule.newTag}` : `${newName}${digest ? `@${digest}` : tag ? `:${tag}` : ''}`;
    }
    return o;
  });
}

/** An image reference's name (registry and path), tag and digest. */
function splitImage(image: string): { name: string; tag?: string; digest?: string } {
  const [rest, digest] = image.split('@');
  const slash = rest.lastIndexOf('/');
  const colon = rest.lastIndexOf(':');
  return colon > slash ? { name: rest.slice(0, colon), tag: rest.slice(colon + 1), digest } : { name: rest, digest };
}

/**
 * The object's problems against the Kubernetes schema of its kind: types, required fields,
 * enums and formats (the compiled validators of `kubernetes-models`), and fields the schema does
 * not know (`kubectl apply`'s strict field validation would refuse them; the validators alone
 * let them pass). Those are found by watching which fields the validator reads: it reads every
 * field its schema declares, so a field it never read is unknown to the schema.
 */
export function schemaProblems(o: K8sObject): string[] {
  const kind = KINDS[`${o.apiVersion}/${o.kind}`];
  if (!kind) return [`${o.apiVersion} ${o.kind}: no schema for this kind here (add it to KINDS in render.ts)`];
  const unread = new Set<string>();
  try {
    (kind.model.prototype as { validate(): void }).validate.call(tracked(o, '', unread));
  } catch (error) {
    return [(error as Error).message];
  }
  return [...unread].map((field) => `${field}: not a field of ${o.apiVersion} ${o.kind}`);
}

/** `value` seen through proxies that strike each of its fields (at any depth) off `unread` once read. */
function tracked(value: unknown, at: string, unread: Set<string>): unknown {
  if (value === null || typeof value !== 'object') return value;
  const own = new Set(Object.keys(value));
  for (const key of own) unread.add(`${at}/${key}`);
  return new Proxy(value, {
    get(target, key, receiver) {
      const field: unknown = Reflect.get(target, key, receiver);
      if (typeof key !== 'string' || !own.has(key)) return field;
      unread.delete(`${at}/${key}`);
      return tracked(field, `${at}/${key}`, unread);
    },
  });
}

const DNS_SUBDOMAIN = /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS_LABEL = /^(?=.{1,63}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_1035_LABEL = /^(?=.{1,63}$)[a-z]([-a-z0-9]*[a-z0-9])?$/;
const PORT_NAME = /^(?=.{1,15}$)(?=.*[a-z])[a-z0-9]+(-[a-z0-9]+)*$/;
const LABEL_VALUE = /^(|(?=.{1,63}$)[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)$/;
const QUANTITY = /^[+-]?(\d+(\.\d*)?|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$/;

/**
 * What the API server checks beyond the OpenAPI schema, for the fields this base uses: names
 * (DNS-1123, and DNS-1035 for Services), label values, port names, resource quantities.
 */
export function nameAndQuantityProblems(o: K8sObject): string[] {
  const problems: string[] = [];
  const name = String(o.metadata?.name ?? '');
  if (!(o.kind === 'Service' ? DNS_1035_LABEL : DNS_SUBDOMAIN).test(name)) problems.push(`metadata.name "${name}" is not a valid ${o.kind} name`);
  const labelMaps = [o.metadata?.labels, o.spec?.selector?.matchLabels, o.spec?.template?.metadata?.labels, o.kind === 'Service' ? o.spec?.selector : undefined];
  for (const labels of labelMaps) {
    for (const [key, value] of Object.entries(labels ?? {})) {
      if (!LABEL_VALUE.test(String(value))) problems.push(`label ${key}="${value}": not a valid label value`);
    }
  }
  const visit = (value: unknown, at: string): void => {
    if (Array.isArray(value)) return value.forEach((v, i) => visit(v, `${at}/${i}`));
    if (value === null || typeof value !== 'object') return;
    for (const [key, field] of Object.entries(value)) {
      const here = `${at}/${key}`;
      if ((key === 'requests' || key === 'limits') && /\/resources$/.test(at)) {
        for (const [resource, quantity] of Object.entries(field as object)) {
          if (!QUANTITY.test(String(quantity))) problems.push(`${here}/${resource}: "${quantity}" is not a quantity`);
        }
      } else if ((key === 'sizeLimit' || key === 'storage') && !QUANTITY.test(String(field))) {
        problems.push(`${here}: "${field}" is not a quantity`);
      } else if (key === 'ports' && Array.isArray(field)) {
        for (const [i, port] of field.entries()) {
          if (port.name !== undefined && !PORT_NAME.test(port.name)) problems.push(`${here}/${i}/name: "${port.name}" is not a valid port name`);
        }
      } else if (key === 'containers' && Array.isArray(field)) {
        for (const [i, container] of field.entries()) {
          if (!DNS_LABEL.test(container.name ?? '')) problems.push(`${here}/${i}/name: "${container.name}" is not a valid container name`);
        }
      }
      visit(field, here);
    }
  };
  visit(o.spec, '/spec');
  return problems;
}

/** The pod templates of the workload objects, with where they are. */
function podTemplates(objects: K8sObject[]): Array<{ owner: string; labels: Record<string, string>; spec: Record<string, Yaml> }> {
  return objects
    .filter((o) => o.spec?.template?.spec)
    .map((o) => ({ owner: `${o.kind} ${o.metadata.name}`, labels: o.spec.template.metadata?.labels ?? {}, spec: o.spec.template.spec }));
}

const matches = (selector: Record<string, string>, labels: Record<string, string>) =>
  Object.keys(selector).length > 0 && Object.entries(selector).every(([k, v]) => labels[k] === v);

/**
 * What refers to what, across the rendered objects and the Secrets of secret.example.yaml: each
 * workload's selector picks its own pods; each Service selects some pods, and its target ports
 * are their container ports; probes and Ingress backends name ports that exist; Secrets,
 * ConfigMaps, claims and volumes referred to exist, with the keys referred to; every container
 * that mounts its root read-only has a writable /tmp.
 */
export function crossReferenceProblems(objects: K8sObject[], secrets: K8sObject[]): string[] {
  const problems: string[] = [];
  const byKind = (kind: string) => objects.filter((o) => o.kind === kind);
  const named = (kind: string, name: string) => byKind(kind).find((o) => o.metadata.name === name);
  const pods = podTemplates(objects);

  for (const o of objects.filter((x) => x.spec?.template)) {
    if (!matches(o.spec.selector?.matchLabels ?? {}, o.spec.template.metadata?.labels ?? {})) {
      problems.push(`${o.kind} ${o.metadata.name}: its selector does not match its pod template's labels`);
    }
  }
  for (const pdb of byKind('PodDisruptionBudget')) {
    if (!pods.some((p) => matches(pdb.spec.selector?.matchLabels ?? {}, p.labels))) problems.push(`PodDisruptionBudget ${pdb.metadata.name}: selects no pods`);
  }
  for (const service of byKind('Service')) {
    const selected = pods.filter((p) => matches(service.spec.selector ?? {}, p.labels));
    if (!selected.length) problems.push(`Service ${service.metadata.name}: its selector matches no pod template`);
    for (const port of service.spec.ports ?? []) {
      const target = port.targetPort ?? port.port;
      for (const p of selected) {
        const found = p.spec.containers.some((c: Yaml) => (c.ports ?? []).some((cp: Yaml) => cp.name === target || cp.containerPort === target));
        if (!found) problems.push(`Service ${service.metadata.name}: targetPort ${target} is no container port of ${p.owner}`);
      }
    }
  }
  for (const ingress of byKind('Ingress')) {
    const backends = (ingress.spec.rules ?? []).flatMap((r: Yaml) => (r.http?.paths ?? []).map((p: Yaml) => p.backend.service));
    if (ingress.spec.defaultBackend?.service) backends.push(ingress.spec.defaultBackend.service);
    for (const backend of backends) {
      const service = named('Service', backend.name);
      if (!service) problems.push(`Ingress ${ingress.metadata.name}: no Service ${backend.name}`);
      else if (!(service.spec.ports ?? []).some((p: Yaml) => (backend.port.name !== undefined ? p.name === backend.port.name : p.port === backend.port.number))) {
        problems.push(`Ingress ${ingress.metadata.name}: Service ${backend.name} has no port ${backend.port.name ?? backend.port.number}`);
      }
    }
  }

  const secretKey = (name: string, key: string) => {
    const secret = secrets.find((s) => s.metadata.name === name) ?? named('Secret', name);
    return secret ? key in { ...secret.data, ...secret.stringData } : false;
  };
  for (const { owner, spec } of pods) {
    const volumes = new Map<string, Yaml>((spec.volumes ?? []).map((v: Yaml) => [v.name, v]));
    for (const volume of volumes.values()) {
      if (volume.persistentVolumeClaim && !named('PersistentVolumeClaim', volume.persistentVolumeClaim.claimName)) {
        problems.push(`${owner}: volume ${volume.name} claims ${volume.persistentVolumeClaim.claimName}, which is not here`);
      }
    }
    for (const c of [...spec.containers, ...(spec.initContainers ?? [])]) {
      const where = `${owner}, container ${c.name}`;
      for (const probe of ['startupProbe', 'readinessProbe', 'livenessProbe']) {
        const port = c[probe]?.httpGet?.port ?? c[probe]?.tcpSocket?.port;
        if (port !== undefined && !(c.ports ?? []).some((cp: Yaml) => cp.name === port || cp.containerPort === port)) {
          problems.push(`${where}: ${probe} port ${port} is not one of its ports`);
        }
      }
      for (const env of c.env ?? []) {
        const ref = env.valueFrom?.secretKeyRef;
        if (ref && !ref.optional && !secretKey(ref.name, ref.key)) problems.push(`${where}: env ${env.name} wants key ${ref.key} of Secret ${ref.name}, which secret.example.yaml lacks`);
        const cm = env.valueFrom?.configMapKeyRef;
        if (cm && !(cm.key in (named('ConfigMap', cm.name)?.data ?? {}))) problems.push(`${where}: env ${env.name} wants key ${cm.key} of ConfigMap ${cm.name}`);
      }
      for (const from of c.envFrom ?? []) {
        if (from.configMapRef && !named('ConfigMap', from.configMapRef.name)) problems.push(`${where}: envFrom ConfigMap ${from.configMapRef.name} is not here`);
        if (from.secretRef && !secrets.some((s) => s.metadata.name === from.secretRef.name)) problems.push(`${where}: envFrom Secret ${from.secretRef.name} is not in secret.example.yaml`);
      }
      for (const mount of c.volumeMounts ?? []) {
        if (!volumes.has(mount.name)) problems.push(`${where}: mounts volume ${mount.name}, which the pod does not declare`);
      }
      if (c.securityContext?.readOnlyRootFilesystem && !(c.volumeMounts ?? []).some((m: Yaml) => m.mountPath === '/tmp')) {
        problems.push(`${where}: a read-only root file system and no writable /tmp`);
      }
    }
  }
  return problems;
}
