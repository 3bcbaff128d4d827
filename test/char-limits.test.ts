// String limits count characters (Unicode code points), as JSON Schema's
// minLength/maxLength do, not zod's UTF-16 code units: contract/common.ts `chars`. The limits stay
// visible to the OpenAPI document and to the dashboard's forms (web/src/schema-limits.ts).
import { expect } from "chai";
import type { RequestBodyObject, SchemaObject } from "openapi3-ts/oas31";
import { AiPolicyBody, ConnectionSlug, SendMessageBody, chars } from "../contract/index.js";
import { buildOpenApiDocument } from "../server/openapi/document.js";
import { fieldLimits } from "../web/src/schema-limits.js";

describe("character counts of string limits", () => {
  it("counts an emoji (two UTF-16 units) as one character, at both ends of the range", () => {
    const s = chars(2, 3);
    expect(s.safeParse("😀😀😀").success).to.equal(true);
    expect(s.safeParse("😀😀😀😀").success).to.equal(false);
    expect(s.safeParse("😀").success).to.equal(false);
    expect(s.safeParse("ab").success).to.equal(true);
    expect(s.safeParse(3).success).to.equal(false);
    const refused = s.safeParse("😀😀😀😀");
    expect(refused.error?.issues).to.have.length(1);
    expect(refused.error?.issues[0]).to.include({ code: "too_big", maximum: 3 });
  });

  it("gives the same issues, in the same order, whether or not the string holds a surrogate pair", () => {
    const s = chars(3, 5).regex(/^[a-z]+$/);
    const codes = (v: unknown) => s.safeParse(v).error?.issues.map((i) => i.code);
    // Refused by the pattern and the minimum: the pattern's issue first, on either path.
    expect(codes("A")).to.deep.equal(["invalid_string", "too_small"]);
    expect(codes("😀")).to.deep.equal(["invalid_string", "too_small"]);
    expect(codes("ABCDEF")).to.deep.equal(["invalid_string", "too_big"]);
    expect(codes("😀😀😀😀😀😀")).to.deep.equal(["invalid_string", "too_big"]);
    expect(codes("abcde")).to.equal(undefined);
    expect(codes(7)).to.deep.equal(["invalid_type"]);
    // Parsed many times, a schema keeps its answers (what it builds on first use is reused).
    for (let i = 0; i < 3; i++) expect([codes("abc"), codes("😀😀😀")]).to.deep.equal([undefined, ["invalid_string"]]);
  });

  it("keeps other checks and the class through chaining (regex, describe, optional)", () => {
    expect(ConnectionSlug.safeParse("-bad").success).to.equal(false);
    expect(ConnectionSlug.safeParse("ab").success).to.equal(false);
    expect(ConnectionSlug.safeParse("abc").success).to.equal(true);
    const body = SendMessageBody.shape.body;
    expect(body.safeParse("😀".repeat(4096)).success).to.equal(true);
    expect(body.safeParse("😀".repeat(4097)).success).to.equal(false);
    expect(body.safeParse(undefined).success).to.equal(true);
  });

  it("leaves the limits readable by the dashboard's forms", () => {
    expect(fieldLimits(AiPolicyBody.shape.system_instruction)).to.include({ min: 1, max: 4000 });
    expect(fieldLimits(SendMessageBody.shape.body)).to.include({ max: 4096 });
  });

  it("leaves minLength/maxLength in the OpenAPI document", () => {
    const doc = buildOpenApiDocument();
    const schemas = doc.components!.schemas as Record<string, SchemaObject>;
    expect(schemas.SendMessageBody!.properties!.body).to.deep.include({ type: "string", maxLength: 4096 });
    expect(schemas.AiPolicyBody!.properties!.system_instruction).to.deep.include({ type: "string", minLength: 1, maxLength: 4000 });
    const send = doc.paths!["/v1/messages/text"]!.post!.requestBody as RequestBodyObject;
    expect(send.content["application/json"]!.schema).to.deep.equal({ $ref: "#/components/schemas/SendMessageBody" });
  });
});
