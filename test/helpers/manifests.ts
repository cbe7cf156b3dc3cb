import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { parse, parseAllDocuments } from 'yaml';

// ajv-formats is CommonJS; under nodenext its default export is the module object.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default;

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
/** Kubernetes 1.32 and Compose schemas, vendored so the repository tests itself with nothing beside it. */
export const schemaDir = resolve(repoRoot, 'test/fixtures/schemas');

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- manifests are checked field by field in tests
export type Manifest = Record<string, any>;

export interface K8sDocument {
  file: string;
  doc: Manifest;
}

export function readRepoFile(path: string): string {
  return readFileSync(join(repoRoot, path), 'utf8');
}

/** Every YAML document of every `k8s/*.yaml`, in file order; a YAML syntax error throws. */
export function k8sDocuments(): K8sDocument[] {
  const files = readdirSync(join(repoRoot, 'k8s'))
    .filter((name) => name.endsWith('.yaml'))
    .sort();
  return files.flatMap((file) =>
    parseAllDocuments(readRepoFile(`k8s/${file}`)).map((document) => {
      if (document.errors.length > 0) throw new Error(`k8s/${file}: ${document.errors[0]!.message}`);
      return { file, doc: document.toJS() as Manifest };
    }),
  );
}

/** docker-compose.yml with its YAML merge keys (`<<: *anchor`) applied, as Compose reads it. */
export function composeFile(): Manifest {
  return parse(readRepoFile('docker-compose.yml'), { merge: true }) as Manifest;
}

/** The objects of one kind (and optionally one component label). */
export function ofKind(docs: K8sDocument[], kind: string, component?: string): Manifest[] {
  return docs
    .map(({ doc }) => doc)
    .filter(
      (doc) =>
        doc.kind === kind &&
        (component === undefined || doc.metadata?.labels?.['app.kubernetes.io/component'] === component),
    );
}

function compile(path: string): ValidateFunction {
  // The JSON Schema draft these files name is unknown to ajv 8 and adds nothing to the checks.
  const schema = JSON.parse(readFileSync(path, 'utf8')) as Manifest;
  delete schema.$schema;
  const ajv = new Ajv({ strict: false, allErrors: true });
  addFormats(ajv);
  for (const format of ['int32', 'int64', 'byte']) ajv.addFormat(format, true);
  return ajv.compile(schema);
}

const compiled = new Map<string, ValidateFunction>();

function compiledOnce(path: string): ValidateFunction {
  let validate = compiled.get(path);
  if (!validate) {
    validate = compile(path);
    compiled.set(path, validate);
  }
  return validate;
}

/** `apiVersion` + `kind` → schema file, from each file's `x-kubernetes-group-version-kind`. */
function kubernetesSchemaFiles(): Map<string, string> {
  const dir = join(schemaDir, 'k8s-v1.32.2');
  const byKind = new Map<string, string>();
  for (const name of readdirSync(dir).filter((file) => file.endsWith('.json'))) {
    const schema = JSON.parse(readFileSync(join(dir, name), 'utf8')) as Manifest;
    for (const { group, version, kind } of schema['x-kubernetes-group-version-kind'] ?? []) {
      byKind.set(`${group ? `${group}/` : ''}${version} ${kind}`, join(dir, name));
    }
  }
  return byKind;
}

let schemaFiles: Map<string, string> | undefined;

/** Validation errors of a Kubernetes object against the 1.32 schema of its apiVersion and kind. */
export function kubernetesErrors(doc: Manifest): string | undefined {
  schemaFiles ??= kubernetesSchemaFiles();
  const file = schemaFiles.get(`${doc.apiVersion} ${doc.kind}`);
  if (!file) return `no Kubernetes 1.32 schema for apiVersion ${doc.apiVersion}, kind ${doc.kind}`;
  return errorsOf(compiledOnce(file), doc);
}

export function composeErrors(compose: Manifest): string | undefined {
  return errorsOf(compiledOnce(join(schemaDir, 'compose-spec.json')), compose);
}

function errorsOf(validate: ValidateFunction, value: unknown): string | undefined {
  if (validate(value)) return undefined;
  return (validate.errors ?? [])
    .map((e) => `${e.instancePath || '/'} ${e.message} ${JSON.stringify(e.params)}`)
    .join('\n');
}

/** `FROM` … stages of a Dockerfile, each with its instructions (comments and continuations handled). */
export interface DockerStage {
  from: string;
  name: string | undefined;
  instructions: { op: string; args: string }[];
}

export function dockerStages(text: string): DockerStage[] {
  const stages: DockerStage[] = [];
  const logical = text
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
  for (const line of logical) {
    const [, op = '', args = ''] = /^(\S+)\s*(.*)$/.exec(line) ?? [];
    if (op.toUpperCase() === 'FROM') {
      const [image = '', , name] = args.split(/\s+/);
      stages.push({ from: image, name, instructions: [] });
    } else {
      stages.at(-1)?.instructions.push({ op: op.toUpperCase(), args });
    }
  }
  return stages;
}
