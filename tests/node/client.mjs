// Drives codescout through the official TypeScript SDK client, as a TypeScript host would.
//
//   EXAMPLE=args.json node client.mjs SDK_PACKAGE stdio COMMAND [ARG...]
//   EXAMPLE=args.json node client.mjs SDK_PACKAGE http URL
//
// The test suite copies this file next to the node_modules it installs, so that the SDK
// packages (pinned in package.json, three versions under aliases) resolve from there.
// Prints one JSON object: the protocol version, the tool list, a valid call's result, an
// invalid call's result, how long close() took, and (stdio) the server's process id.
import { readFileSync } from "node:fs";

const [sdk, transportKind, target, ...rest] = process.argv.slice(2);
const { Client } = await import(`${sdk}/client/index.js`);

const example = JSON.parse(readFileSync(process.env.EXAMPLE, "utf8"));
const invalid = { hits: [{ path: "a.ts", matches: "3", last_modified_days: 0 }] };

let transport;
if (transportKind === "stdio") {
  const { StdioClientTransport } = await import(`${sdk}/client/stdio.js`);
  transport = new StdioClientTransport({ command: target, args: rest, stderr: "inherit" });
} else {
  const { StreamableHTTPClientTransport } = await import(`${sdk}/client/streamableHttp.js`);
  transport = new StreamableHTTPClientTransport(new URL(target));
}

// The client tells the transport the negotiated version when the transport asks to know it.
let protocolVersion = null;
const setProtocolVersion = transport.setProtocolVersion?.bind(transport);
transport.setProtocolVersion = (version) => {
  protocolVersion = version;
  setProtocolVersion?.(version);
};

const client = new Client({ name: "codescout-ts-test", version: "1.0.0" });
await client.connect(transport);
const serverPid = transport.pid ?? transport._process?.pid ?? null;
const tools = await client.listTools();
const valid = await client.callTool({ name: "rank_search_results", arguments: example });
const refused = await client.callTool({ name: "rank_search_results", arguments: invalid });
const started = performance.now();
await client.close();
const closeMs = performance.now() - started;

process.stdout.write(
  JSON.stringify({
    protocolVersion,
    serverName: client.getServerVersion()?.name ?? null,
    tools: tools.tools,
    valid,
    invalid: refused,
    closeMs,
    serverPid,
  }) + "\n",
);
