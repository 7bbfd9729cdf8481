// A host on the TypeScript SDK (the pinned @modelcontextprotocol/sdk) that calls a tool whose
// question it never answers, and reports whether the server's notifications/cancelled for that
// question reached its elicitation handler (the SDK aborts the handler's signal).
//
//   node ts_cancelled_question.mjs PYTHON SERVER_SCRIPT BACKEND
//
// Prints one JSON line: {"asked": [ids], "aborted": [ids], "result": <tools/call result>}.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [python, server, backend] = process.argv.slice(2);
const asked = [];
const aborted = [];
const client = new Client({ name: "ts-host", version: "1.0.0" }, { capabilities: { elicitation: {} } });
client.setRequestHandler(ElicitRequestSchema, (_request, extra) => new Promise((_resolve, reject) => {
  asked.push(extra.requestId);
  extra.signal.addEventListener("abort", () => {
    aborted.push(extra.requestId);
    reject(new Error("cancelled by the server"));
  });
}));
// The whole environment (the SDK passes on only a few variables by default): PYTHONPATH picks the minimcp under test.
const transport = new StdioClientTransport({ command: python, args: [server, backend], env: process.env, stderr: "inherit" });
await client.connect(transport);
const result = await client.callTool({ name: "ask", arguments: {} }, undefined, { timeout: 60000 });
// The cancellation may come before or after the result: wait for it a while (not forever).
for (let i = 0; i < 200 && aborted.length === 0; i++) {
  await new Promise((r) => setTimeout(r, 100));
}
console.log(JSON.stringify({ asked, aborted, result }));
await client.close();
