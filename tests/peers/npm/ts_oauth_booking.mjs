// The TypeScript SDK's client (the pinned @modelcontextprotocol/sdk) with its OAuth provider, headless:
// it books a table on an MCP server protected by an authorization server that signs people in by
// persona (NanoIDP: login_hint=persona-auto-login:USER redirects back at once).
//
//   node ts_oauth_booking.mjs MCP_URL USER
//
// The provider keeps the client information, tokens and PKCE verifier in memory. Its
// redirectToAuthorization follows the authorization URL with fetch (redirects not followed) and
// captures the code from the redirect's Location; the first connect then ends in UnauthorizedError,
// as the SDK's docs describe, and the host calls transport.finishAuth(code) and connects again on a
// new transport. Every HTTP request the SDK makes (MCP and OAuth) goes through a recording fetch.
//
// Prints one JSON line: {"requests", "authorizations", "redirects", "client", "tokens", "asked",
// "booked", "status"} or {"error", "requests", ...} when a step fails (exit status 1).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { randomBytes } from "node:crypto";

const [mcpUrl, user] = process.argv.slice(2);
const report = { requests: [], authorizations: [], redirects: [], asked: [] };

// Every request the SDK makes: method, URL, status; for form posts (registration, token) the body's keys
// and the few values a test checks (never a secret's value).
async function recordingFetch(url, init) {
  const entry = { method: (init?.method ?? "GET").toUpperCase(), url: String(url) };
  const body = init?.body;
  if (body instanceof URLSearchParams) {
    entry.form = Object.fromEntries([...body.keys()].map((k) => [k, ["grant_type", "resource", "redirect_uri"].includes(k) ? body.get(k) : "…"]));
  } else if (typeof body === "string" && entry.url !== mcpUrl) {
    try { entry.json = JSON.parse(body); } catch { /* not JSON */ }
  }
  const headers = new Headers(init?.headers);
  entry.bearer = (headers.get("authorization") ?? "").startsWith("Bearer ");
  const response = await fetch(url, init);
  entry.status = response.status;
  if (response.status === 401 || response.status === 403) entry.challenge = response.headers.get("www-authenticate");
  report.requests.push(entry);
  return response;
}

class InMemoryHeadlessProvider {
  constructor(person) {
    this.person = person;
    this.redirectUri = "http://127.0.0.1:1/callback"; // never listened on: the code is read from the Location
    this._client = undefined;
    this._tokens = undefined;
    this._verifier = undefined;
    this._state = undefined;
    this.code = undefined;
  }
  get redirectUrl() { return this.redirectUri; }
  get clientMetadata() {
    return {
      client_name: "TypeScript SDK against minimcp",
      redirect_uris: [this.redirectUri],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  }
  state() { this._state = randomBytes(16).toString("base64url"); return this._state; }
  clientInformation() { return this._client; }
  saveClientInformation(info) { this._client = info; }
  tokens() { return this._tokens; }
  saveTokens(tokens) { this._tokens = tokens; }
  saveCodeVerifier(verifier) { this._verifier = verifier; }
  codeVerifier() {
    if (!this._verifier) throw new Error("no code verifier saved");
    return this._verifier;
  }
  // The person's browser, headless: the authorization server signs them in and sends them straight back.
  async redirectToAuthorization(authorizationUrl) {
    report.authorizations.push(authorizationUrl.href);
    const signIn = new URL(authorizationUrl);
    signIn.searchParams.set("login_hint", `persona-auto-login:${this.person}`);
    const answer = await fetch(signIn, { redirect: "manual" });
    const location = answer.headers.get("location");
    if (![302, 303].includes(answer.status) || !location) {
      throw new Error(`sign-in answered ${answer.status}: ${(await answer.text()).slice(0, 300)}`);
    }
    const back = new URL(location);
    report.redirects.push(Object.fromEntries([...back.searchParams.keys()].map((k) => [k, k === "code" ? "…" : back.searchParams.get(k)])));
    if (back.searchParams.get("error")) throw new Error(`authorization refused: ${back.search}`);
    if (back.searchParams.get("state") !== this._state) throw new Error("the state came back changed");
    this.code = back.searchParams.get("code");
  }
}

const provider = new InMemoryHeadlessProvider(user);
const newTransport = () => new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider, fetch: recordingFetch });

function newClient() {
  const client = new Client({ name: "ts-oauth-host", version: "1.0.0" }, { capabilities: { elicitation: { form: {} } } });
  // The person answers the tool's form: yes, the next free date it proposes.
  client.setRequestHandler(ElicitRequestSchema, (request) => {
    report.asked.push({ message: request.params.message, schema: request.params.requestedSchema });
    const proposed = request.params.requestedSchema.properties.date.default;
    return { action: "accept", content: { accept_alternative: true, date: proposed } };
  });
  return client;
}

try {
  let client = newClient();
  let transport = newTransport();
  try {
    await client.connect(transport);
    throw new Error("connected without signing in");
  } catch (error) {
    if (!(error instanceof UnauthorizedError)) throw error;
    report.unauthorized = error.message;
    if (!provider.code) throw new Error("no authorization code captured");
    await transport.finishAuth(provider.code); // the token request: code + PKCE verifier + resource
  }
  client = newClient();
  transport = newTransport();
  await client.connect(transport);
  report.tools = (await client.listTools()).tools.map((t) => t.name).sort();
  report.booked = await client.callTool({ name: "book_table", arguments: { date: "2025-12-25", party_size: 2 } });
  const id = report.booked.structuredContent?.booking_id;
  report.status = await client.callTool({ name: "booking_status", arguments: { booking_id: id } });
  report.client = { client_id: provider._client?.client_id };
  report.tokens = { token_type: provider._tokens?.token_type, scope: provider._tokens?.scope, refresh: Boolean(provider._tokens?.refresh_token) };
  await client.close();
  console.log(JSON.stringify(report));
} catch (error) {
  report.error = String(error?.stack ?? error);
  console.log(JSON.stringify(report));
  process.exit(1);
}
