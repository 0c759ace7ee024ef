// The official TypeScript SDK client (@modelcontextprotocol/sdk) against a lazymcp server.
//
//   node ts_client.mjs '<config JSON>'
//
// config: {
//   "sdk": "<dir of the installed @modelcontextprotocol/sdk package>",
//   "stdio": {"command": "...", "args": [...]}  or  "url": "http://HOST:PORT/mcp",
//   "kind": "serve" | "everything",   what is behind lazymcp: its sample catalog, or server-everything
//   "declare": false | true,          declare the io.lazymcp/lazy-tools extension in the capabilities
//   "tool": "<name>", "good": {...}, "bad": {...},   a tool, arguments its schema takes, and ones it refuses
//   "timeoutMs": 20000
// }
//
// It runs a fixed list of steps, each on its own so one failure does not hide the next, and prints
// one JSON object: {"steps": {"<step>": {"ok": true, "value": ...} | {"ok": false, "error": {...}}}}.
// The Python test (tests/interop/test_interop_ts.py) asserts on it. Plain ESM, no build step: the SDK is
// imported from the directory the test installed it in.

import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const EXT_ID = 'io.lazymcp/lazy-tools';
const META_TOOL = 'describe_tools';

const config = JSON.parse(process.argv[2]);
const esm = (path) => import(pathToFileURL(join(config.sdk, 'dist', 'esm', path)).href);

const { Client } = await esm('client/index.js');
const { StdioClientTransport } = await esm('client/stdio.js');
const { StreamableHTTPClientTransport } = await esm('client/streamableHttp.js');
const { ResultSchema, ListToolsResultSchema, McpError } = await esm('types.js');

const limit = config.timeoutMs ?? 20000;
const watchdog = setTimeout(() => {
  process.stderr.write(`ts_client: no result within ${limit} ms\n`);
  process.exit(3);
}, limit);

const steps = {};
const options = { timeout: Math.min(limit, 15000) };

async function step(name, run) {
  try {
    steps[name] = { ok: true, value: await run() };
  } catch (error) {
    steps[name] = {
      ok: false,
      error: {
        name: error?.name,
        code: error instanceof McpError ? error.code : undefined,
        message: String(error?.message ?? error),
        data: error instanceof McpError ? error.data : undefined,
      },
    };
  }
}

/** A request whose result the SDK does not validate: what the server sent, member for member. */
const raw = (client, method, params) => client.request({ method, params }, ResultSchema, options);

function textOf(result) {
  const first = (result.content ?? []).find((block) => block.type === 'text');
  return first ? first.text : null;
}

const capabilities = config.declare ? { extensions: { [EXT_ID]: {} } } : {};
const client = new Client({ name: 'lazymcp-interop-ts', version: '1.0.0' }, { capabilities });
const transport = config.url
  ? new StreamableHTTPClientTransport(new URL(config.url))
  : new StdioClientTransport({
      command: config.stdio.command,
      args: config.stdio.args,
      env: { ...process.env },
      stderr: 'inherit',
    });

await step('connect', async () => {
  await client.connect(transport, options);
  const caps = client.getServerCapabilities();
  return {
    server: client.getServerVersion(),
    advertised: caps?.extensions?.[EXT_ID] ?? null,
    toolsListChanged: caps?.tools?.listChanged ?? null,
    sessionId: transport.sessionId ?? null,
  };
});

if (steps.connect.ok) {
  const tool = config.tool;

  if (!config.declare) {
    // A stock client: the SDK's own typed, validated listing.
    await step('listTools', async () => {
      const listed = await client.listTools(undefined, options);
      return { tools: listed.tools, nextCursor: listed.nextCursor ?? null };
    });
  } else {
    // A declaring client gets bare stubs by default: only an unvalidated request can take them.
    await step('listDefaultRaw', async () => (await raw(client, 'tools/list', {})).tools);
  }

  // The full listing, with lazy: false, through the SDK's validated listTools and as raw JSON.
  await step('listToolsLazyFalse', async () => (await client.listTools({ lazy: false }, options)).tools);
  await step('rawLazyFalse', async () => (await raw(client, 'tools/list', { lazy: false })).tools);
  await step('rawLazyTrue', async () => (await raw(client, 'tools/list', { lazy: true })).tools);

  await step('describe', async () => (await raw(client, 'tools/describe', { name: tool })).tool);
  await step('describeUnknown', async () => raw(client, 'tools/describe', { name: `${tool}_no_such` }));
  await step('describeBatch', async () => raw(client, 'tools/describe_batch', { names: [tool, 'no-such-tool', tool] }));

  await step('metaTool', async () => {
    const result = await client.callTool({ name: META_TOOL, arguments: { names: [tool] } }, undefined, options);
    return { isError: result.isError ?? false, payload: JSON.parse(textOf(result)) };
  });
  await step('callGood', async () => client.callTool({ name: tool, arguments: config.good }, undefined, options));
  await step('callBad', async () => client.callTool({ name: tool, arguments: config.bad }, undefined, options));

  if (config.kind === 'everything') {
    // listToolsLazyFalse above gave the SDK the real output schemas: this call's structured
    // content is checked against them by the SDK itself.
    await step('structured', async () =>
      client.callTool({ name: 'get-structured-content', arguments: { location: 'Chicago' } }, undefined, options),
    );
    await step('ping', async () => client.ping(options));
    await step('resources', async () => {
      const listed = await client.listResources(undefined, options);
      const first = listed.resources[0];
      const read = await client.readResource({ uri: first.uri }, options);
      const templates = await client.listResourceTemplates(undefined, options);
      return {
        count: listed.resources.length,
        read: { uri: first.uri, contents: read.contents },
        templates: templates.resourceTemplates.map((t) => t.uriTemplate),
      };
    });
    await step('templateRead', async () => client.readResource({ uri: 'demo://resource/dynamic/text/1' }, options));
    await step('prompts', async () => {
      const listed = await client.listPrompts(undefined, options);
      const simple = await client.getPrompt({ name: 'simple-prompt' }, options);
      const args = await client.getPrompt({ name: 'args-prompt', arguments: { city: 'Paris', state: 'TX' } }, options);
      return { names: listed.prompts.map((p) => p.name), simple: simple.messages, args: args.messages };
    });
    await step('complete', async () =>
      client.complete({ ref: { type: 'ref/prompt', name: 'completable-prompt' }, argument: { name: 'department', value: 'Eng' } }, options),
    );
  }
}

await step('close', async () => {
  if (transport.sessionId) await transport.terminateSession();
  await client.close();
  return true;
});

clearTimeout(watchdog);
// Exit once the output is flushed: a pipe takes large writes asynchronously.
process.stdout.write(JSON.stringify({ steps }) + '\n', () => process.exit(0));
