// A host built on the TypeScript SDK whose person answers a form slowly (tests/test_waiting_progress.py).
//
// usage: node slow_person_host.mjs TIMEOUT_MS COMMAND [ARGS...]
// Spawns the MCP server COMMAND over stdio, calls book_table on a full date with the SDK's request
// timeout of TIMEOUT_MS and resetTimeoutOnProgress, and answers the form after 3 x TIMEOUT_MS.
// Prints one JSON line: {result | error, progress: [...], asked}.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [timeoutArg, command, ...args] = process.argv.slice(2);
const timeout = Number(timeoutArg);
const client = new Client({ name: "slow-person-host", version: "1.0.0" }, { capabilities: { elicitation: {} } });
const progress = [];
let asked = 0;

client.setRequestHandler(ElicitRequestSchema, async () => {
  asked += 1;
  // The person thinks for three times the host's request timeout before answering.
  await new Promise((resolve) => setTimeout(resolve, 3 * timeout));
  return { action: "accept", content: { accept_alternative: true } };
});

// The whole environment (the SDK passes only a few variables by default): the server finds its code.
const transport = new StdioClientTransport({ command, args, env: process.env, stderr: "inherit" });
await client.connect(transport);
const out = { asked: 0, progress };
try {
  out.result = await client.callTool(
    { name: "book_table", arguments: { date: "2025-12-25", party_size: 4 } },
    undefined,
    { timeout, resetTimeoutOnProgress: true, onprogress: (p) => progress.push(p) },
  );
} catch (error) {
  out.error = { code: error.code, message: String(error.message) };
}
out.asked = asked;
await client.close();
console.log(JSON.stringify(out));
