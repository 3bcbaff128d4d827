// Client ID Metadata Documents: a client_id that is a URL is fetched through the outbound address
// policy and must describe itself. The tests serve documents from loopback, which the test
// gateway's OUTBOUND_ALLOW_PRIVATE (127.0.0.0/8) opens, http included; [::1] stays refused.
import { expect } from "chai";
import { METADATA_DOCUMENT_MAX_BYTES } from "../server/oauth/clients.js";
import { newWorkspace, type TestWorkspace } from "./support/actors.js";
import { authorizationUrl, ClientDocuments, consent, openConsent, pkce, REDIRECT_URI, tokenRequest, toolResource } from "./support/oauth.js";

describe("OAuth: Client ID Metadata Documents", () => {
  let ws: TestWorkspace;
  let docs: ClientDocuments;
  let base: string;
  let documents: Map<string, string>;

  before(async () => {
    ws = await newWorkspace();
    docs = await ClientDocuments.start();
    base = docs.base;
    documents = docs.documents;
  });

  after(() => docs.close());

  const serve = (path: string, doc: Record<string, unknown> | string) => docs.serve(path, doc);

  it("takes a document naming itself: consent shows its name, the code exchanges with the URL as client_id", async () => {
    const clientId = serve("/good.json", { client_name: "Document assistant", redirect_uris: [REDIRECT_URI] });
    const p = pkce();
    const page = await openConsent(authorizationUrl(clientId, p), ws.owner.cookie);
    expect(page.json).to.include({ client_id: clientId, client_name: "Document assistant" });
    const query = await consent(authorizationUrl(clientId, p), ws.owner.cookie);
    const t = await tokenRequest({ grant_type: "authorization_code", code: query.get("code")!, code_verifier: p.verifier, redirect_uri: REDIRECT_URI, client_id: clientId, resource: toolResource() });
    expect(t.status).to.equal(200);
    expect(t.json.access_token).to.match(/^svc_mcp_at_/);
  });

  it("refuses a document that names another client_id, an unlisted redirect, a refused address, a missing or oversized document", async () => {
    const cases = [
      authorizationUrl(serve("/other.json", JSON.stringify({ client_id: "https://elsewhere.example/c.json", redirect_uris: [REDIRECT_URI] })), pkce()),
      authorizationUrl(serve("/redirects.json", { redirect_uris: ["https://app.example/cb"] }), pkce()),
      authorizationUrl(serve("/plain-http.json", { redirect_uris: ["http://app.example/cb"] }), pkce()),
      authorizationUrl(`http://[::1]:${new URL(base).port}/good.json`, pkce()),
      authorizationUrl(`${base}/missing.json`, pkce()),
      authorizationUrl(serve("/big.json", { redirect_uris: [REDIRECT_URI], client_name: "x".repeat(METADATA_DOCUMENT_MAX_BYTES) }), pkce()),
    ];
    for (const url of cases) {
      const res = await fetch(url, { redirect: "manual" });
      expect(res.status, url).to.equal(400);
    }
  });

  it("takes a document of exactly the size limit", async () => {
    const path = "/limit.json";
    const url = `${base}${path}`;
    const skeleton = JSON.stringify({ client_id: url, redirect_uris: [REDIRECT_URI], client_name: "" });
    documents.set(path, JSON.stringify({ client_id: url, redirect_uris: [REDIRECT_URI], client_name: "n".repeat(METADATA_DOCUMENT_MAX_BYTES - skeleton.length) }));
    expect(Buffer.byteLength(documents.get(path)!)).to.equal(METADATA_DOCUMENT_MAX_BYTES);
    const res = await fetch(authorizationUrl(url, pkce()), { redirect: "manual" });
    expect(res.status).to.equal(302);
  });
});
