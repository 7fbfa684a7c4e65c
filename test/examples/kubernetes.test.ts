// examples/kubernetes/turnwise-worker.json, the Deployment docs/scale-out.md shows, checked against the
// apps/v1 Deployment fields it uses — a JSON Schema written here from the Kubernetes API reference
// (Deployment v1 apps, DeploymentSpec, PodTemplateSpec, PodSpec, Container, EnvVar, ResourceRequirements,
// ObjectMeta; names per "Object Names and IDs", quantities per resource.Quantity) with ajv — plus what the
// API server checks beyond the schema (the selector must match the template's labels), and its
// container's arguments as `turnwise worker` reads them.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { Ajv } from 'ajv';
import { parseQueueUrl } from '../../src/rollout/queue-redis.ts';
import { inProcess } from '../cli/run.ts';

const FILE = new URL('../../examples/kubernetes/turnwise-worker.json', import.meta.url);
const manifest = JSON.parse(readFileSync(FILE, 'utf8'));

// RFC 1123 subdomain (metadata.name of a Deployment: ≤ 253) and label (container name: ≤ 63).
const DNS_SUBDOMAIN = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$';
const DNS_LABEL = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$';
// Label keys: an optional DNS subdomain prefix and `/`, then a name of ≤ 63 alphanumerics with -_. inside;
// values: the same name, or empty.
const LABEL_KEY =
  '^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$';
const LABEL_VALUE = '^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$';
// resource.Quantity's serialised form (apimachinery: `^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$`).
const QUANTITY = '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$';
// EnvVar.name: a C identifier, or any printable run of letters, digits, `-`, `.` and `_` not starting with a digit.
const ENV_NAME = '^[-._a-zA-Z][-._a-zA-Z0-9]*$';

const labels = {
  type: 'object',
  propertyNames: { pattern: LABEL_KEY, maxLength: 316 },
  additionalProperties: { type: 'string', pattern: LABEL_VALUE, maxLength: 63 },
};
const resources = {
  type: 'object',
  additionalProperties: false,
  properties: {
    cpu: { type: 'string', pattern: QUANTITY },
    memory: { type: 'string', pattern: QUANTITY },
  },
};
const DEPLOYMENT = {
  type: 'object',
  additionalProperties: false,
  required: ['apiVersion', 'kind', 'metadata', 'spec'],
  properties: {
    apiVersion: { const: 'apps/v1' },
    kind: { const: 'Deployment' },
    metadata: {
      type: 'object',
      additionalProperties: false,
      required: ['name'],
      properties: { name: { type: 'string', pattern: DNS_SUBDOMAIN, maxLength: 253 }, labels },
    },
    spec: {
      type: 'object',
      additionalProperties: false,
      required: ['selector', 'template'],
      properties: {
        replicas: { type: 'integer', minimum: 0, maximum: 2147483647 },
        selector: {
          type: 'object',
          additionalProperties: false,
          required: ['matchLabels'],
          properties: { matchLabels: { ...labels, minProperties: 1 } },
        },
        template: {
          type: 'object',
          additionalProperties: false,
          required: ['metadata', 'spec'],
          properties: {
            metadata: {
              type: 'object',
              additionalProperties: false,
              required: ['labels'],
              properties: { labels },
            },
            spec: {
              type: 'object',
              additionalProperties: false,
              required: ['containers'],
              properties: {
                terminationGracePeriodSeconds: { type: 'integer', minimum: 0 },
                containers: {
                  type: 'array',
                  minItems: 1,
                  items: {
                    type: 'object',
                    additionalProperties: false,
                    required: ['name', 'image'],
                    properties: {
                      name: { type: 'string', pattern: DNS_LABEL, maxLength: 63 },
                      image: { type: 'string', minLength: 1 },
                      args: { type: 'array', items: { type: 'string' } },
                      env: {
                        type: 'array',
                        items: {
                          type: 'object',
                          additionalProperties: false,
                          required: ['name'],
                          properties: {
                            name: { type: 'string', pattern: ENV_NAME },
                            value: { type: 'string' },
                            valueFrom: {
                              type: 'object',
                              additionalProperties: false,
                              properties: {
                                secretKeyRef: {
                                  type: 'object',
                                  additionalProperties: false,
                                  required: ['key'],
                                  properties: {
                                    name: { type: 'string', pattern: DNS_SUBDOMAIN },
                                    key: { type: 'string', pattern: '^[-._a-zA-Z0-9]+$' },
                                    optional: { type: 'boolean' },
                                  },
                                },
                              },
                            },
                          },
                          // value and valueFrom are exclusive.
                          not: { required: ['value', 'valueFrom'] },
                        },
                      },
                      resources: {
                        type: 'object',
                        additionalProperties: false,
                        properties: { requests: resources, limits: resources },
                      },
                    },
                  },
                },
              },
            },
          },
        },
      },
    },
  },
};

const validate = new Ajv({ allErrors: true }).compile(DEPLOYMENT);

/** What the API server checks besides the schema: the selector selects the template's pods. */
function selectorMatches(d: typeof manifest): boolean {
  const want = d.spec.selector.matchLabels as Record<string, string>;
  const have = d.spec.template.metadata.labels as Record<string, string>;
  return Object.entries(want).every(([k, v]) => have[k] === v);
}

test('the worker Deployment is a valid apps/v1 Deployment, its selector matching its pods', () => {
  assert.ok(validate(manifest), JSON.stringify(validate.errors, null, 2));
  assert.ok(selectorMatches(manifest));
});

test('the schema is not vacuous: each broken copy of the manifest is refused', () => {
  const broken: [string, (d: typeof manifest) => void][] = [
    ['replicas as a string', (d) => (d.spec.replicas = '4')],
    ['a misspelled field', (d) => (d.spec.replica = 4)],
    ['another apiVersion', (d) => (d.apiVersion = 'extensions/v1beta1')],
    ['an upper-case name', (d) => (d.metadata.name = 'Turnwise')],
    ['a container name with a dot', (d) => (d.spec.template.spec.containers[0].name = 'turnwise.worker')],
    ['a memory of 2GB', (d) => (d.spec.template.spec.containers[0].resources.limits.memory = '2GB')],
    ['an env name with a space', (d) => (d.spec.template.spec.containers[0].env[0].name = 'NO COLOR')],
    ['a number for an argument', (d) => (d.spec.template.spec.containers[0].args[3] = 4)],
    ['value and valueFrom together', (d) => (d.spec.template.spec.containers[0].env[1].value = 'x')],
    ['no containers', (d) => (d.spec.template.spec.containers = [])],
  ];
  for (const [what, change] of broken) {
    const d = structuredClone(manifest);
    change(d);
    assert.equal(validate(d), false, what);
  }
  const d = structuredClone(manifest);
  d.spec.selector.matchLabels['app.kubernetes.io/name'] = 'other';
  assert.ok(validate(d), 'a mismatched selector passes the schema…');
  assert.equal(selectorMatches(d), false, '…and is refused by the selector check');
});

test("the container's arguments are a `turnwise worker` command: every flag accepted, Redis reached last", async () => {
  const args = manifest.spec.template.spec.containers[0].args as string[];
  assert.equal(args[0], 'worker');
  const q = args.indexOf('--queue');
  assert.deepEqual(parseQueueUrl(args[q + 1]), {
    url: 'redis://redis:6379',
    host: 'redis',
    port: 6379,
    db: 0,
  });
  // The same arguments at an address where nothing listens: refused for that alone, so every other
  // flag was read and accepted.
  const local = args.map((a, i) => (i === q + 1 ? 'redis://127.0.0.1:1' : a));
  const r = await inProcess(local);
  assert.equal(r.code, 2);
  assert.equal(
    r.stderr,
    'turnwise: --queue: got "redis://127.0.0.1:1"; cannot reach Redis there (ECONNREFUSED); start redis-server or fix the address\n',
  );
});
