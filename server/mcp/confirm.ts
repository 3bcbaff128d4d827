// The confirm step of a mutating tool, asked of the person where the client can ask (MCP
// 2026-07-28 multi-round-trip requests): instead of answering a preview for the model to confirm,
// the call answers `input_required` with a form (elicitation) naming what would happen; the client
// shows it and calls again with the answer and the state we minted. Accepted: the tool acts.
// Declined: nothing changes. `confirm: true` still acts at once, and a client that cannot show a
// form (every 2025 revision, or no `elicitation` capability) gets the preview as before.
import {
  CLIENT_CAPABILITIES_META_KEY,
  createRequestStateCodec,
  inputRequired,
  inputResponse,
  type InputRequiredResult,
  type RequestStateCodec,
  type ServerContext,
} from "@modelcontextprotocol/server";
import { canonicalJson } from "../http/idempotency.js";
import type { Principal } from "../http/principal.js";
import { deriveKey, sha256 } from "../secrets.js";

/** The id of the one question asked: the key of its answer in `inputResponses`. */
export const CONFIRM_QUESTION = "confirm";
/** How long a question may stay unanswered: a person reads it and decides. */
const QUESTION_TTL_S = 600;

/** What the minted state binds the answer to: this tool, these arguments, this credential. */
interface Asked {
  tool: string;
  args: string;
  credential: string;
}

export type Confirmation =
  | { kind: "preview" }
  | { kind: "ask"; question(preview: Record<string, unknown>): Promise<InputRequiredResult> }
  | { kind: "accepted" }
  | { kind: "declined" };

export class ConfirmQuestions {
  private readonly codec: RequestStateCodec<Asked>;

  constructor(secretKey: Buffer) {
    this.codec = createRequestStateCodec<Asked>({ key: deriveKey(secretKey, "mcp-confirm-question"), ttlSeconds: QUESTION_TTL_S });
  }

  /** ServerOptions.requestState.verify: a state we did not mint, or an expired one, is refused. */
  readonly verify = (state: string, ctx: ServerContext): Promise<Asked> => this.codec.verify(state, ctx);

  /** Where this call stands: answered, to be asked, or (no way to ask) previewed. */
  of(ctx: ServerContext, principal: Principal, tool: string, args: Record<string, unknown>): Confirmation {
    const asked: Asked = { tool, args: sha256(canonicalJson(args)).toString("hex"), credential: credentialOf(principal) };
    const echoed = ctx.mcpReq.requestState<Asked>();
    if (echoed && echoed.tool === asked.tool && echoed.args === asked.args && echoed.credential === asked.credential) {
      const answer = inputResponse(ctx.mcpReq.inputResponses, CONFIRM_QUESTION);
      if (answer.kind === "elicit") return answer.action === "accept" && answer.content?.confirm === true ? { kind: "accepted" } : { kind: "declined" };
    }
    if (!canShowForm(ctx)) return { kind: "preview" };
    return {
      kind: "ask",
      question: async ({ preview: _p, tool: _t, would, next_step: _n, ...details }) =>
        inputRequired({
          inputRequests: {
            [CONFIRM_QUESTION]: inputRequired.elicit({
              message: `${capitalized(String(would))}. ${describe(details)}Nothing has happened yet: confirm to go ahead.`,
              requestedSchema: {
                type: "object",
                properties: { confirm: { type: "boolean", title: "Confirm", description: `Go ahead: ${would}` } },
                required: ["confirm"],
              },
            }),
          },
          requestState: await this.codec.mint(asked),
        }),
    };
  }
}

/** Form elicitation declared on this request's envelope (a bare `elicitation: {}` means form). */
function canShowForm(ctx: ServerContext): boolean {
  const envelope = ctx.mcpReq.envelope as Record<string, unknown> | undefined;
  const capabilities = envelope?.[CLIENT_CAPABILITIES_META_KEY] as { elicitation?: { form?: object; url?: object } } | undefined;
  const elicitation = capabilities?.elicitation;
  if (elicitation === undefined) return false;
  return elicitation.form !== undefined || elicitation.url === undefined;
}

function credentialOf(p: Principal): string {
  return p.kind === "api_key" ? p.keyId : p.kind === "oauth" ? p.tokenId : p.sessionId;
}

function describe(details: Record<string, unknown>): string {
  const parts = Object.entries(details)
    .filter(([, v]) => v !== null && v !== undefined)
    .map(([k, v]) => `${k.replace(/_/g, " ")}: ${typeof v === "string" ? v : JSON.stringify(v)}`);
  return parts.length > 0 ? `${parts.join("; ")}. ` : "";
}

function capitalized(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
