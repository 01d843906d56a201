import { API_VERSION, SANDBOX_GROUP } from '@sandbox-scale/scale-core';

type Schema = Record<string, unknown>;

const gvk = (kind: string): Schema => ({ 'x-kubernetes-group-version-kind': [{ group: SANDBOX_GROUP, version: API_VERSION, kind }] });
const typeMeta: Schema = { apiVersion: { type: 'string' }, kind: { type: 'string' } };
const str = (description: string): Schema => ({ type: 'string', description });
const int = (description: string): Schema => ({ type: 'integer', format: 'int64', description });
const ENTRY_KINDS = ['file', 'dir', 'symlink', 'other'];

/** The kinds of exec, files and portforward, with their fields, for `kubectl explain` and clients. */
export function dataPlaneModels(modelPrefix: string): Record<string, Schema> {
  const model = (kind: string, description: string, properties: Schema, required: string[]): Schema => ({
    type: 'object',
    description,
    required,
    properties: { ...typeMeta, ...properties },
    ...gvk(kind),
  });
  return {
    [`${modelPrefix}SandboxExecOptions`]: model(
      'SandboxExecOptions',
      'A command to run in the sandbox to completion (no stdin, no streaming); the body of sandboxes/exec.',
      {
        argv: { type: 'array', items: { type: 'string' }, description: 'The command and its arguments, run without a shell.' },
        cwd: str('Working directory in the guest; default the sandbox root.'),
        env: {
          type: 'object',
          additionalProperties: { type: 'string' },
          description: 'Variables added to the cleared environment (PATH, TERM and proxy variables).',
        },
        timeoutSeconds: { ...int('Past it the command is killed and the answer is 504 Timeout; 0 or absent = no limit.'), minimum: 0 },
      },
      ['argv'],
    ),
    [`${modelPrefix}SandboxExecResult`]: model(
      'SandboxExecResult',
      'The outcome of sandboxes/exec: a non-zero exit is a result, not an error. Output past 8 MiB is a 413.',
      {
        exitCode: { type: 'integer', format: 'int32', description: 'The exit code; -1 when the command was killed.' },
        stdout: str('Standard output; bytes that are not UTF-8 become U+FFFD.'),
        stderr: str('Standard error; bytes that are not UTF-8 become U+FFFD.'),
      },
      ['exitCode', 'stdout', 'stderr'],
    ),
    [`${modelPrefix}SandboxFileList`]: model(
      'SandboxFileList',
      'The entries of a directory, the answer of GET sandboxes/files on one.',
      {
        path: str('The directory, as an absolute guest path.'),
        items: {
          type: 'array',
          items: {
            type: 'object',
            required: ['name', 'kind', 'size'],
            properties: {
              name: { type: 'string' },
              kind: { type: 'string', enum: ENTRY_KINDS },
              size: { type: 'integer', format: 'int64' },
            },
          },
        },
      },
      ['path', 'items'],
    ),
    [`${modelPrefix}SandboxFileInfo`]: model(
      'SandboxFileInfo',
      'One file or directory of the guest: the answer of GET sandboxes/files?stat=true and of a PUT.',
      {
        path: str('Absolute guest path.'),
        type: { type: 'string', enum: ENTRY_KINDS },
        size: int('Bytes.'),
        mode: { type: 'integer', format: 'int32', description: 'Permission bits (with setuid, setgid and sticky).' },
        mtime: { type: 'string', format: 'date-time', description: 'Last modification (RFC 3339).' },
      },
      ['path', 'type', 'size', 'mode', 'mtime'],
    ),
    [`${modelPrefix}SandboxPortForwardOptions`]: model(
      'SandboxPortForwardOptions',
      'sandboxes/portforward: a connection upgrade (Connection: Upgrade, Upgrade: tcp) to a raw byte relay to one guest TCP port.',
      { port: { type: 'integer', format: 'int32', minimum: 1, maximum: 65535, description: 'The guest port (query parameter).' } },
      [],
    ),
  };
}

const query = (name: string, type: 'string' | 'boolean' | 'integer', description: string, required = false): Schema => ({
  name,
  in: 'query',
  description,
  ...(required ? { required: true } : {}),
  schema: { type, uniqueItems: true },
});

const json = (ref: string): Schema => ({ 'application/json': { schema: { $ref: ref } } });

/** The operations of the three data-plane paths; `ref` names a model. */
export function dataPlanePaths(ref: (kind: string) => string, base: string, common: Schema[]): Record<string, Schema> {
  const meta = (action: string, kind: string, id: string): Schema => ({
    operationId: id,
    tags: ['agentsXK8sIo_v1beta1'],
    'x-kubernetes-action': action,
    'x-kubernetes-group-version-kind': { group: SANDBOX_GROUP, version: API_VERSION, kind },
  });
  const path = query('path', 'string', 'Guest path: absolute, or relative to the sandbox root; no ".." segment.', true);
  const raw = { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } };
  const tar = { 'application/x-tar': { schema: { type: 'string', format: 'binary' } } };
  const upgrade = (method: string): Schema => ({
    ...meta('connect', 'SandboxPortForwardOptions', `connect${method}SandboxPortforward`),
    description: 'Send Connection: Upgrade and Upgrade: tcp; 101 Switching Protocols, then raw bytes both ways.',
    parameters: [query('port', 'integer', 'Guest TCP port, 1-65535.', true)],
    responses: { '101': { description: 'Switching Protocols' } },
  });
  return {
    [`${base}/exec`]: {
      parameters: common,
      post: {
        ...meta('connect', 'SandboxExecResult', 'connectPostSandboxExec'),
        requestBody: { content: json(ref('SandboxExecOptions')) },
        responses: { '200': { description: 'OK', content: json(ref('SandboxExecResult')) } },
      },
    },
    [`${base}/files`]: {
      parameters: common,
      get: {
        ...meta('get', 'SandboxFileInfo', 'readSandboxFiles'),
        description: 'A file: its bytes. A directory: a SandboxFileList. Accept: application/x-tar: a tar stream of either.',
        parameters: [path, query('stat', 'boolean', 'Answer a SandboxFileInfo instead of the contents.')],
        responses: {
          '200': {
            description: 'OK',
            content: {
              ...raw,
              ...tar,
              'application/json': { schema: { oneOf: [{ $ref: ref('SandboxFileList') }, { $ref: ref('SandboxFileInfo') }] } },
            },
          },
        },
      },
      put: {
        ...meta('put', 'SandboxFileInfo', 'replaceSandboxFiles'),
        description:
          'Writes the body to the path atomically (parents created); Content-Type: application/x-tar extracts it under the path.',
        parameters: [path, query('mode', 'string', 'Permission bits of a new file, in octal (0644).')],
        requestBody: { content: { ...raw, ...tar } },
        responses: { '201': { description: 'Created', content: json(ref('SandboxFileInfo')) } },
      },
      delete: {
        ...meta('delete', 'SandboxFileInfo', 'deleteSandboxFiles'),
        parameters: [path, query('recursive', 'boolean', 'Remove a directory with its contents.')],
        responses: { '200': { description: 'OK (a Status)' } },
      },
    },
    [`${base}/portforward`]: { parameters: common, get: upgrade('Get'), post: upgrade('Post') },
  };
}
