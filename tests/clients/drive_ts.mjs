// The official TypeScript SDK client in the compatibility suite: the steps of drive.py, as a stock client.
//
//   node drive_ts.mjs '<config JSON>'
//
// config: the one drive.py takes (without "client"), plus "sdk": the installed package's directory.
// It prints one JSON line: {"steps": {"<step>": {"ok": true, "value": ...} | {"ok": false, "error": "..."}}}.

import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const config = JSON.parse(process.argv[2]);
const esm = (path) => import(pathToFileURL(join(config.sdk, 'dist', 'esm', path)).href);
const { Client } = await esm('client/index.js');
const { StdioClientTransport } = await esm('client/stdio.js');
const { StreamableHTTPClientTransport } = await esm('client/streamableHttp.js');

const limit = config.timeout * 3000;
const watchdog = setTimeout(() => {
  process.stderr.write(`drive_ts: no result within ${limit} ms\n`);
  process.exit(3);
}, limit);
const options = { timeout: config.timeout * 1000 };
const steps = {};

async function step(name, run) {
  try {
    steps[name] = { ok: true, value: await run() };
  } catch (error) {
    steps[name] = { ok: false, error: `${error?.name}: ${String(error?.message ?? error)}`.slice(0, 600) };
  }
}

let listed = [];
const howToCall = (args) =>
  ['proxy', 'core'].includes(config.mode) || listed.includes('invoke_tool')
    ? ['invoke_tool', { name: config.tool, arguments: args }]
    : [config.tool, args];

const textOf = (result) => (result.content ?? []).filter((b) => b.type === 'text').map((b) => b.text).join('\n');

const target = config.target;
const transport = target.url
  ? new StreamableHTTPClientTransport(new URL(target.url))
  : new StdioClientTransport({
      command: target.command[0],
      args: target.command.slice(1),
      env: target.env,
      stderr: 'ignore',
    });
const client = new Client({ name: 'lazymcp-compat', version: '1.0.0' }, { capabilities: {} });

try {
  await client.connect(transport, options);
  const listing = async () => (await client.listTools(undefined, options)).tools.map((t) => t.name);
  const call = async (name, args) => {
    const result = await client.callTool({ name, arguments: args }, undefined, options);
    return { isError: result.isError === true, text: textOf(result) };
  };
  await step('list', async () => (listed = await listing()));
  if (config.mode !== 'eager') await step('describe', async () => {
    const { text } = await call('describe_tools', { names: [config.tool] });
    const [described] = JSON.parse(text).tools;
    return { name: described.name, required: described.inputSchema.required ?? [] };
  });
  await step('call', async () => {
    if (config.mode === 'dynamic' && !listed.includes('invoke_tool')) {
      await call('search_tools', { query: config.query });
      listed = await listing();
    }
    return await call(...howToCall(config.good));
  });
  await step('invalid', async () => await call(...howToCall(config.bad)));
  if (['proxy', 'core', 'dynamic'].includes(config.mode)) {
    await step('unlisted', async () => await call(config.unlisted, config.unlisted_args));
  }
  await client.close();
} catch (error) {
  steps.connect = { ok: false, error: `${error?.name}: ${String(error?.message ?? error)}`.slice(0, 600) };
}
clearTimeout(watchdog);
process.stdout.write(JSON.stringify({ steps }) + '\n');
process.exit(0);
