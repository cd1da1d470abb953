// A real MCP client of the official TypeScript SDK: connect to URL with a bearer token, then make
// the calls given as JSON on argv[4] and print one JSON line of results (used by
// tests/integration/test_http_typescript.py).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, token, callsJson] = process.argv.slice(2);
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
const client = new Client({ name: "sleuth-ts-test", version: "1.0.0" });
try {
  await client.connect(transport);
  const tools = (await client.listTools()).tools.map((t) => t.name);
  const results = [];
  for (const [name, args] of JSON.parse(callsJson)) {
    results.push(await client.callTool({ name, arguments: args }));
  }
  console.log(JSON.stringify({ tools, results }));
  await transport.terminateSession();
  await client.close();
} catch (err) {
  console.log(JSON.stringify({ error: String(err && err.message ? err.message : err), code: err && err.code }));
  process.exitCode = 3;
}
