// AI runs end to end (docs/ai.md): inbound messages through the sandbox, the real
// vendor SDKs against loopback vendors (test/support/vendors.ts), replies back through the sandbox,
// drafts through a real webhook receiver, every ceiling at its boundary. Both databases.
//
// Runs that need settings of their own (a short vendor timeout, an empty outbound allow-list) are
// worked by a second AiRunner on the test gateway's database, with the gateway's own runner
// standing aside meanwhile: its `ai.run` jobs bounce a second later until it takes part again.
import { createHash, randomBytes } from "node:crypto";
import { expect } from "chai";
import { aiRunJob } from "../jobs/ai-run.js";
import { AI_RUN_JOB } from "../jobs/names.js";
import { createClient, expectOk } from "../sdk/src/index.js";
import { buildContext } from "../server/ai/runs/context.js";
import { costMicros, countedUsage } from "../server/ai/runs/cost.js";
import { AiRunner, type AiRunnerOptions } from "../server/ai/runs/runner.js";
import { vendorRequestBody, type VendorRequest } from "../server/ai/vendor.js";
import { newId } from "../server/ids.js";
import { createLogger } from "../server/logger.js";
import { EMPTY_ALLOW_LIST } from "../server/outbound/address-policy.js";
import { testEnv } from "./setup.js";
import { http } from "./support/actors.js";
import { aiConnection, debounceMs, insertRuns, received, uniquePhone, SYSTEM, type AiConnection } from "./support/ai.js";
import { liveSocket } from "./support/baileys.js";
import { CHILD_READY_MS, jobsLeftToChildren, lastLines, startChildGateway } from "./support/child-gateway.js";
import { queuedJobs } from "./support/jobs.js";
import { sandbox } from "./support/sandbox.js";
import { startVendorOne, startVendorTwo, DEFAULT_VENDOR_TEXT, type VendorServer } from "./support/vendors.js";
import { sleep, waitFor } from "./support/wait.js";
import { Receiver } from "./support/webhook-receiver.js";

const db = () => testEnv().gateway.ctx.db;
const sha256 = (s: string) => createHash("sha256").update(s, "utf8").digest("hex");
const gatewayRunner = () => testEnv().gateway.ctx.services.aiRuns;

/** While true, the test gateway's `ai.run` jobs are put off by a second each time they fall due. */
let gatewayAside = false;
/** The test gateway's `ai.run` job, redefined to stand aside while `gatewayAside` is true. */
function gateGatewayJobs(): void {
  const ctx = testEnv().gateway.ctx;
  const job = aiRunJob(ctx.services.aiRuns);
  ctx.jobs.define({
    ...job,
    async run(data) {
      if (gatewayAside) await ctx.jobs.agenda.schedule(new Date(Date.now() + 1_000), AI_RUN_JOB, data);
      else await job.run(data);
    },
  });
}
const standAside = (aside: boolean) => {
  gatewayAside = aside;
};

/** The message id the gateway gave an inbound message, by the sandbox's provider id. */
async function inboundId(t: AiConnection, providerId: string): Promise<string> {
  const found = await waitFor(
    () => db().query(`SELECT id FROM messages WHERE connection_id = $1 AND provider_message_id = $2`, [t.connectionId, providerId]) as Promise<{ id: string }[]>,
    (r) => r.length > 0,
  );
  return found[0]!.id;
}

/** A runner of our own on the test gateway's database, as another process would have. */
function ownRunner(options: Partial<AiRunnerOptions> = {}): AiRunner {
  const ctx = testEnv().gateway.ctx;
  return new AiRunner(ctx.db, ctx.services.sender, createLogger("silent"), {
    secretKey: ctx.config.secretKey,
    allowPrivate: ctx.config.webhooks.allowPrivate,
    ...options,
  });
}

async function waitDue(t: AiConnection, contact: string): Promise<void> {
  await waitFor(
    () => db().query(`SELECT 1 FROM ai_debounce WHERE connection_id = $1 AND contact = $2 AND due_at <= now()`, [t.connectionId, contact]) as Promise<unknown[]>,
    (r) => r.length > 0,
  );
}

/** A run of the pair worked by a runner of our own (the gateway's stands aside): waits for the debounce row to be due. */
async function runWith(options: Partial<AiRunnerOptions>, t: AiConnection, contact: string): Promise<void> {
  await waitDue(t, contact);
  await ownRunner(options).runDue(t.connectionId, contact);
}

describe("AI runs", function () {
  this.timeout(90_000);
  let one: VendorServer;
  let two: VendorServer;
  before(async () => {
    gateGatewayJobs();
    one = await startVendorOne();
    two = await startVendorTwo();
  });
  after(async () => {
    await one.close();
    await two.close();
  });
  afterEach(() => standAside(false));

  describe("auto and draft modes", () => {
    for (const provider of ["vendorone_compatible", "vendortwo"] as const) {
      // How soon the reply follows the vendor's answer is measured in bench/ai-reply.ts, not here.
      it(`answers a contact in auto mode with ${provider}: the vendor's answer reaches the contact`, async () => {
        const v = provider === "vendortwo" ? two : one;
        const t = await aiConnection(v, provider, { input_cost_micros_per_million: 1_000_000, output_cost_micros_per_million: 2_000_000 });
        const contact = uniquePhone("+1551");
        v.reply(() => ({ text: `Hello from ${provider}`, inputTokens: 50, outputTokens: 7 }));
        const before = v.requests.length;
        const providerId = await t.inbound(contact, "Do you open on Sunday?");
        const [reply] = await waitFor(() => received(contact), (r) => r.length > 0, 20_000, 20);
        expect(reply!.body).to.equal(`Hello from ${provider}`);

        expect(v.requests.length - before).to.equal(1);
        const sent = v.requests[v.requests.length - 1]!;
        if (provider === "vendortwo") {
          expect(sent.json).to.deep.include({ model: "test-model", system: SYSTEM, max_tokens: 300, messages: [{ role: "user", content: "Do you open on Sunday?" }] });
        } else {
          expect(sent.json).to.deep.include({ model: "test-model", max_tokens: 300, messages: [{ role: "system", content: SYSTEM }, { role: "user", content: "Do you open on Sunday?" }] });
        }
        const [run] = await t.waitRuns(1);
        const message = await inboundId(t, providerId);
        expect(run).to.include({ connection: t.slug, message_id: message, mode: "auto", model: "test-model", outcome: "replied", error: null, input_tokens: 50, output_tokens: 7, cost_micros: 50 + 14 });
        expect(run!.prompt_sha256).to.equal(sha256(sent.body));
        expect(run!.latency_ms).to.be.a("number");
        const [msg] = (await db().query(`SELECT metadata FROM messages WHERE id = $1`, [reply!.message_id])) as { metadata: Record<string, unknown> }[];
        expect(msg!.metadata).to.deep.equal({ ai_run_id: run!.id });
        const [key] = (await db().query(`SELECT 1 FROM idempotency_keys WHERE workspace_id = $1 AND key = $2`, [t.ws.id, `ai-reply:${message}`])) as unknown[];
        expect(key).to.not.equal(undefined);
        const [credential] = (await db().query(`SELECT last_used_at FROM ai_credentials WHERE id = $1`, [t.credentialId])) as { last_used_at: Date | null }[];
        expect(credential!.last_used_at).to.be.instanceOf(Date);

        // The record shows hashes and usage, never a text.
        const listed = await http("GET", `/v1/ai/runs?connection=${t.slug}`, { headers: t.auth });
        expect(listed.text).to.not.include("Sunday").and.not.include("Hello from").and.not.include(SYSTEM);
        expect(Object.keys((listed.json.data as object[])[0]!).sort()).to.deep.equal(
          ["id", "connection", "message_id", "mode", "model", "prompt_sha256", "input_tokens", "output_tokens", "cost_micros", "latency_ms", "outcome", "error", "created_at"].sort(),
        );
      });
    }

    it("emits ai.draft.created in draft mode (to a real webhook receiver) and sends nothing", async () => {
      const receiver = await Receiver.start();
      try {
        const t = await aiConnection(one, "vendorone_compatible", { mode: "draft" });
        await expectOk(t.client.webhooks.create({ body: { url: receiver.url, events: ["ai.draft.created", "ai.reply.sent"] } }));
        const contact = uniquePhone("+1551");
        one.reply(() => ({ text: "A draft for you" }));
        const providerId = await t.inbound(contact, "Can I return shoes?");
        const [delivery] = await waitFor(async () => receiver.events("ai.draft.created"), (e) => e.length > 0, 20_000, 100);
        const [run] = await t.waitRuns(1);
        const message = await inboundId(t, providerId);
        expect(delivery!.event).to.deep.include({ type: "ai.draft.created", connection: t.slug });
        expect(delivery!.event.data).to.deep.equal({ run_id: run!.id, message_id: message, contact, text: "A draft for you" });
        expect(run).to.include({ outcome: "drafted", mode: "draft" });
        await sleep(500);
        expect(await received(contact)).to.deep.equal([]);
        expect(receiver.events("ai.reply.sent")).to.deep.equal([]);
        const stored = (await db().query(`SELECT 1 FROM messages WHERE connection_id = $1 AND body = 'A draft for you'`, [t.connectionId])) as unknown[];
        expect(stored).to.deep.equal([]);
      } finally {
        await receiver.close();
      }
    });

    it("emits ai.reply.sent with the reply's id in auto mode", async () => {
      const receiver = await Receiver.start();
      try {
        const t = await aiConnection(two, "vendortwo");
        await expectOk(t.client.webhooks.create({ body: { url: receiver.url, events: ["ai.reply.sent"] } }));
        const contact = uniquePhone("+1551");
        two.reply(() => ({ text: "auto answer" }));
        const providerId = await t.inbound(contact, "hi");
        const [delivery] = await waitFor(async () => receiver.events("ai.reply.sent"), (e) => e.length > 0, 20_000, 100);
        const [run] = await t.waitRuns(1);
        const [reply] = await received(contact);
        expect(delivery!.event.data).to.deep.equal({ run_id: run!.id, message_id: await inboundId(t, providerId), reply_message_id: reply!.message_id, contact });
        expect(delivery!.body).to.not.include("auto answer");
      } finally {
        await receiver.close();
      }
    });
  });

  describe("trigger and debounce", () => {
    it("answers messages arriving together with one run and one vendor request holding both", async () => {
      const t = await aiConnection(one, "vendorone_compatible");
      const contact = uniquePhone("+1551");
      one.reply(() => ({ text: "one answer" }));
      const before = one.requests.length;
      // No job runs while the burst is recorded: however slowly a loaded machine records the two
      // messages, the run cannot start between them. What joins them is the debounce row.
      const jobRunner = testEnv().gateway.ctx.jobs;
      await jobRunner.pause();
      let secondId: string;
      try {
        await inboundId(t, await t.inbound(contact, "first part"));
        secondId = await inboundId(t, await t.inbound(contact, "second part"));
        // The burst's second message pushed the due time to a debounce after itself and made no
        // job of its own: one job meets the burst.
        const [row] = (await db().query(`SELECT message_id, first_at, due_at FROM ai_debounce WHERE connection_id = $1 AND contact = $2`, [t.connectionId, contact])) as {
          message_id: string;
          first_at: Date;
          due_at: Date;
        }[];
        expect(row!.message_id).to.equal(secondId);
        expect(row!.due_at.getTime()).to.be.greaterThan(row!.first_at.getTime() + debounceMs());
        // Written by the statement that stored the first message: in the outbox, or relayed to Agenda already.
        expect(await queuedJobs(db(), "ai.run", "contact", contact)).to.equal(1);
      } finally {
        await jobRunner.start();
      }
      const [run] = await t.waitRuns(1);
      await sleep(debounceMs() + 500);
      expect(await t.runs()).to.have.length(1);
      expect(one.requests.length - before).to.equal(1);
      expect(one.requests[before]!.json.messages).to.deep.equal([
        { role: "system", content: SYSTEM },
        { role: "user", content: "first part" },
        { role: "user", content: "second part" },
      ]);
      expect(run!.message_id).to.equal(secondId);
      expect(await received(contact)).to.have.length(1);
    });

    it("ignores a group message, a connection whose policy is disabled, and a workspace whose plan lacks AI", async () => {
      const t = await aiConnection(one, "vendorone_compatible");
      const before = one.requests.length;
      await t.inbound(uniquePhone("+1551"), { body: "in the group", group: "120363000000000077@g.us" });
      const off = await aiConnection(one, "vendorone_compatible", { enabled: false });
      await off.inbound(uniquePhone("+1551"), "policy off");
      // A workspace moved to a plan without AI: its enabled policy starts nothing.
      const downgraded = await aiConnection(one, "vendorone_compatible");
      await testEnv().gateway.ctx.services.workspaces.setPlan(downgraded.ws.id, "free");
      await downgraded.inbound(uniquePhone("+1551"), "plan without AI");
      await sleep(debounceMs() + 1_500);
      // The downgraded workspace's debounce row is written (its policy is enabled) and dropped by
      // its job, which finds the plan without AI: waited for, as a loaded run's job may start late.
      const waiting = await waitFor(
        async () => (await db().query(`SELECT 1 FROM ai_debounce WHERE connection_id = ANY($1)`, [[t.connectionId, off.connectionId, downgraded.connectionId]])) as unknown[],
        (rows) => rows.length === 0,
        15_000,
      );
      expect(waiting).to.deep.equal([]);
      expect(await t.runs()).to.deep.equal([]);
      expect(await off.runs()).to.deep.equal([]);
      expect(await downgraded.runs()).to.deep.equal([]);
      expect(one.requests.length).to.equal(before);
    });

    it("answers a redelivered inbound message once", async () => {
      const t = await aiConnection(one, "vendorone_compatible");
      const contact = uniquePhone("+1551");
      const before = one.requests.length;
      await sandbox("POST", "/faults", { duplicate_callbacks: true });
      try {
        await t.inbound(contact, "said once, reported twice");
        await t.waitRuns(1);
      } finally {
        await sandbox("POST", "/faults", { duplicate_callbacks: false });
      }
      await sleep(debounceMs() + 500);
      expect(await t.runs()).to.have.length(1);
      expect(one.requests.length - before).to.equal(1);
      expect(await received(contact)).to.have.length(1);

      // The same message due again (a job retried after its run was recorded): no second run.
      const [run] = await t.runs();
      await db().query(`INSERT INTO ai_debounce (connection_id, contact, workspace_id, message_id, first_at, due_at) VALUES ($1, $2, $3, $4, now(), now())`, [
        t.connectionId,
        contact,
        t.ws.id,
        run!.message_id,
      ]);
      await gatewayRunner().runDue(t.connectionId, contact);
      expect(await t.runs()).to.have.length(1);
      expect(one.requests.length - before).to.equal(1);
    });

    it("writes the run's job with the debounce row, and a job that comes early writes one for the row's due time", async () => {
      const t = await aiConnection(one, "vendorone_compatible");
      const contact = uniquePhone("+1551");
      standAside(true);
      await t.inbound(contact, "job with the row");
      await waitFor(() => db().query(`SELECT 1 FROM ai_debounce WHERE connection_id = $1 AND contact = $2`, [t.connectionId, contact]) as Promise<unknown[]>, (r) => r.length > 0);
      // The job is in the outbox or already relayed to Agenda: never neither.
      expect(await queuedJobs(db(), "ai.run", "contact", contact)).to.equal(1);
      // Early (the row is not due yet): the job leaves the row alone and queues one for its due time.
      await db().query(`UPDATE ai_debounce SET due_at = now() + interval '1 hour' WHERE connection_id = $1 AND contact = $2`, [t.connectionId, contact]);
      await ownRunner().runDue(t.connectionId, contact);
      expect(await t.runs()).to.deep.equal([]);
      expect(await queuedJobs(db(), "ai.run", "contact", contact)).to.equal(2);
    });

    it("lets only one of two processes claim a due run", async () => {
      const t = await aiConnection(one, "vendorone_compatible");
      const contact = uniquePhone("+1551");
      one.reply(() => ({ text: "once", delayMs: 200 }));
      standAside(true);
      const before = one.requests.length;
      await t.inbound(contact, "who takes this?");
      await waitDue(t, contact);
      await Promise.all([ownRunner().runDue(t.connectionId, contact), ownRunner().runDue(t.connectionId, contact), ownRunner().runDue(t.connectionId, contact)]);
      expect(await t.runs()).to.have.length(1);
      expect(one.requests.length - before).to.equal(1);
      await waitFor(() => received(contact), (r) => r.length === 1);
    });

    it("keeps a burst across a SIGKILL: exactly one run after the restart", async function () {
      // Its own waits, each bounded: two child start-ups, the run (30 s), the rest.
      this.timeout(2 * CHILD_READY_MS + 30_000 + 30_000);
      const t = await aiConnection(two, "vendortwo");
      const contact = uniquePhone("+1551");
      const before = two.requests.length;
      // This test's processes work the runs; the test gateway's runner stands aside. (Its job
      // runner keeps going while the first child lives: a child killed while holding recurring
      // jobs would keep them locked from the test gateway for their lock's lifetime.)
      standAside(true);
      const first = await startChildGateway({ OUTBOUND_ALLOW_PRIVATE: "127.0.0.0/8" });
      try {
        await sandbox("POST", "/inbound", { to: t.linked, from: contact, body: "before the crash" }, first.url);
        await waitFor(() => db().query(`SELECT 1 FROM ai_debounce WHERE connection_id = $1 AND contact = $2`, [t.connectionId, contact]) as Promise<unknown[]>, (r) => r.length > 0);
      } finally {
        await first.kill();
      }
      expect(await t.runs()).to.deep.equal([]);
      await jobsLeftToChildren(async () => {
        const restarted = await startChildGateway({ OUTBOUND_ALLOW_PRIVATE: "127.0.0.0/8" });
        try {
          const [run] = await t.waitRuns(1, 30_000).catch((err: Error) => {
            throw new Error(`${err.message}; the restarted child's last lines:\n${lastLines(restarted.output())}`);
          });
          expect(run!.outcome).to.equal("replied");
          await sleep(1_000);
          expect(await t.runs()).to.have.length(1);
          expect(two.requests.length - before).to.equal(1);
          expect(await received(contact)).to.have.length(1);
        } finally {
          await restarted.terminate();
        }
      });
    });
  });

  describe("crash recovery", () => {
    it("resumes a run whose holder died: pending runs from the start, calling is recorded (or finished as replied when its reply exists)", async () => {
      const t = await aiConnection(one, "vendorone_compatible", { input_cost_micros_per_million: 1_000_000 });
      const contact = uniquePhone("+1551");
      standAside(true);
      const providerId = await t.inbound(contact, "cut off mid-run");
      const message = await inboundId(t, providerId);
      // The claim happened, then the process died: a pending run with a lease that has passed.
      await db().query(`DELETE FROM ai_debounce WHERE connection_id = $1`, [t.connectionId]);
      const insert = (id: string, messageId: string, state: string, cost: number) =>
        db().query(
          `INSERT INTO ai_runs (id, workspace_id, connection_id, message_id, contact, mode, model, state, cost_micros, lease_until)
           VALUES ($1, $2, $3, $4, $5, 'auto', 'test-model', $6, $7, now() - interval '1 second')`,
          [id, t.ws.id, t.connectionId, messageId, contact, state, cost],
        );
      const pending = newId("airun");
      await insert(pending, message, "pending", 0);
      // Another died while calling the vendor (its worst case reserved), a third after its reply was sent.
      const calling = newId("airun");
      await insert(calling, newId("msg"), "calling", 777);
      const answered = newId("airun");
      await insert(answered, newId("msg"), "calling", 555);
      await expectOk(t.client.messages.send({ body: { connection: t.slug, to: uniquePhone("+1551"), body: "sent before the crash", metadata: { ai_run_id: answered } } }));
      // A run whose lease has not passed is someone else's: left alone.
      const held = newId("airun");
      await db().query(
        `INSERT INTO ai_runs (id, workspace_id, connection_id, message_id, contact, mode, model, state, lease_until)
         VALUES ($1, $2, $3, $4, $5, 'auto', 'test-model', 'pending', now() + interval '1 minute')`,
        [held, t.ws.id, t.connectionId, newId("msg"), contact],
      );

      const before = one.requests.length;
      standAside(false);
      await gatewayRunner().runDue(t.connectionId, contact);
      const byId = new Map((await t.runs()).map((r) => [r.id, r]));
      expect(byId.get(pending)).to.include({ outcome: "replied", message_id: message });
      expect(byId.get(calling)).to.include({ outcome: "vendor_error", error: "interrupted", cost_micros: 777 });
      expect(byId.get(answered)).to.include({ outcome: "replied", cost_micros: 555 });
      expect(byId.has(held)).to.equal(false);
      expect(one.requests.length - before).to.equal(1);
      expect(one.requests[before]!.json.messages).to.deep.include({ role: "user", content: "cut off mid-run" });
      await waitFor(() => received(contact), (r) => r.length === 1);
      // Resumed again (a second job): nothing is answered twice.
      await db().query(`UPDATE ai_runs SET lease_until = now() - interval '1 second' WHERE id = $1`, [held]);
      await db().query(`UPDATE ai_runs SET state = 'done', outcome = 'human_active' WHERE id = $1`, [held]);
      await gatewayRunner().runDue(t.connectionId, contact);
      expect(one.requests.length - before).to.equal(1);
      expect(await received(contact)).to.have.length(1);
    });
  });

  describe("human takeover", () => {
    it("leaves a contact written to from the linked phone to the human for 30 minutes; API sends do not count", async () => {
      const t = await aiConnection(one, "vendorone_compatible");
      const contact = uniquePhone("+1551");
      const before = one.requests.length;
      const phone = await sandbox("POST", "/phone-send", { from: t.linked, to: contact, body: "I'll handle this one" });
      await waitFor(() => db().query(`SELECT 1 FROM messages WHERE connection_id = $1 AND provider_message_id = $2`, [t.connectionId, phone.json.provider_message_id]) as Promise<unknown[]>, (r) => r.length > 0);
      await t.inbound(contact, "hello human?");
      const [paused] = await t.waitRuns(1);
      expect(paused).to.include({ outcome: "human_active", prompt_sha256: null, cost_micros: 0, latency_ms: null });
      expect(one.requests.length).to.equal(before);

      // 31 minutes later (backdated rather than waited for), the AI answers again by itself.
      await db().query(`UPDATE messages SET created_at = created_at - interval '31 minutes' WHERE connection_id = $1 AND provider_message_id = $2`, [t.connectionId, phone.json.provider_message_id]);
      await t.inbound(contact, "anyone there?");
      const [back] = await t.waitRuns(2);
      expect(back!.outcome).to.equal("replied");
      // The human's message is part of the conversation the model sees.
      expect(one.requests[before]!.json.messages).to.deep.include({ role: "assistant", content: "I'll handle this one" });

      // A send through the API to another contact does not pause the AI for that contact.
      const other = uniquePhone("+1551");
      await expectOk(t.client.messages.send({ body: { connection: t.slug, to: other, body: "from the API" } }));
      await t.inbound(other, "thanks");
      const [api] = await t.waitRuns(3);
      expect(api!.outcome).to.equal("replied");
    });
  });

  describe("context", () => {
    it("never sends restricted messages, redacts sensitive ones, and shows media as a placeholder (the exact bodies received)", async () => {
      const t = await aiConnection(two, "vendortwo");
      const contact = uniquePhone("+1551");
      for (const [body, sensitivity] of [
        ["normal note", "normal"],
        ["SECRET-RESTRICTED account 991", "restricted"],
        ["SECRET-SENSITIVE balance 12", "sensitive"],
      ] as const) {
        await expectOk(t.client.messages.send({ body: { connection: t.slug, to: contact, body, context_sensitivity: sensitivity } }));
        await sleep(20);
      }
      await waitFor(() => received(contact), (r) => r.length === 3);
      const before = two.requests.length;
      await t.inbound(contact, { media: { url: "https://example.test/photo.jpg", mimetype: "image/jpeg" } });
      await t.waitRuns(1);
      const sent = two.requests[before]!;
      expect(sent.body).to.not.include("SECRET-");
      expect(sent.json.messages).to.deep.equal([
        { role: "assistant", content: "normal note" },
        { role: "assistant", content: "[redacted]" },
        { role: "user", content: "[media]" },
      ]);
    });

    it("packs the newest messages into max_context_bytes with the system instruction, at the boundary", () => {
      const system = "s".repeat(100);
      const m = (body: string, direction: "inbound" | "outbound" = "inbound") => ({ direction, body, hasMedia: false, hasLocation: false, contextSensitivity: null });
      // newest first: 100 + 50 + 56 + 50 = 256 bytes exactly ("é" is two bytes)
      const history = [m("n".repeat(50)), m("é".repeat(28), "outbound"), m("o".repeat(50)), m("x")];
      expect(buildContext(system, history, 256)).to.deep.equal([
        { role: "user", content: "o".repeat(50) },
        { role: "assistant", content: "é".repeat(28) },
        { role: "user", content: "n".repeat(50) },
      ]);
      // One byte less: the oldest of them no longer fits, and nothing older is taken past the gap.
      expect(buildContext(system, history, 255)).to.deep.equal([
        { role: "assistant", content: "é".repeat(28) },
        { role: "user", content: "n".repeat(50) },
      ]);
      // Not even the newest fits: it is cut at a character boundary to what is left.
      expect(buildContext(system, [m("é".repeat(100))], 111)).to.deep.equal([{ role: "user", content: "é".repeat(5) }]);
    });

    it("honours max_context_bytes end to end (256, the lowest allowed)", async () => {
      const system = "s".repeat(150);
      const t = await aiConnection(one, "vendorone_compatible", { max_context_bytes: 256, system_instruction: system });
      const contact = uniquePhone("+1551");
      await expectOk(t.client.messages.send({ body: { connection: t.slug, to: contact, body: "o".repeat(60) } }));
      await waitFor(() => received(contact), (r) => r.length === 1);
      const before = one.requests.length;
      await t.inbound(contact, "n".repeat(100));
      await t.waitRuns(1);
      // 150 + 100 = 250: the 60-byte older message would make 310.
      expect(one.requests[before]!.json.messages).to.deep.equal([
        { role: "system", content: system },
        { role: "user", content: "n".repeat(100) },
      ]);
    });
  });

  describe("ceilings", () => {
    const PRICE = 1_000_000; // one micro per token
    const MAX_OUT = 32;
    const TEXT = "How much is shipping?";
    /** The worst case of a run answering TEXT alone: the request body's bytes as input tokens, MAX_OUT as output. */
    function worstCase(t: AiConnection): bigint {
      const req: VendorRequest = {
        provider: "vendorone_compatible",
        apiKey: "x",
        baseUrl: one.url,
        model: "test-model",
        system: SYSTEM,
        messages: [{ role: "user", content: TEXT }],
        maxOutputTokens: MAX_OUT,
      };
      void t;
      return costMicros(Buffer.byteLength(vendorRequestBody(req)), MAX_OUT, BigInt(PRICE), BigInt(PRICE));
    }
    const priced = (limit: number | null) => ({ max_output_tokens: MAX_OUT, input_cost_micros_per_million: PRICE, output_cost_micros_per_million: PRICE, monthly_cost_limit_micros: limit });

    it("computes cost exactly, rounding each side up, with prices up to 2^53-1", () => {
      expect(costMicros(1, 1, 1n, 1n)).to.equal(2n);
      expect(costMicros(0, 0, 5n, 5n)).to.equal(0n);
      expect(costMicros(1_000_000, 0, 3n, 0n)).to.equal(3n);
      expect(costMicros(1_000_001, 0, 3n, 0n)).to.equal(4n);
      const max = 9007199254740991n;
      expect(costMicros(2000, 2000, max, max)).to.equal(2n * ((2000n * max + 999_999n) / 1_000_000n));
    });

    it("passes a run whose worst case equals the allowance left, refuses one micro less, refuses at 0, never refuses with null", async () => {
      const calls = () => one.requests.length;
      one.reply(() => ({ text: "ok", inputTokens: 1, outputTokens: 1 }));

      const exact = await aiConnection(one, "vendorone_compatible", priced(null));
      const worst = worstCase(exact);
      await insertRuns(exact, 1, { cost: 1000 });
      await exact.setPolicy(priced(Number(worst) + 1000));
      let before = calls();
      await exact.inbound(uniquePhone("+1551"), TEXT);
      expect((await exact.waitRuns(2))[0]!.outcome).to.equal("replied");
      expect(calls() - before).to.equal(1);

      const short = await aiConnection(one, "vendorone_compatible", priced(null));
      await insertRuns(short, 1, { cost: 1000 });
      await short.setPolicy(priced(Number(worst) + 1000 - 1));
      before = calls();
      await short.inbound(uniquePhone("+1551"), TEXT);
      const [refused] = await short.waitRuns(2);
      expect(refused).to.include({ outcome: "cost_limit_reached", cost_micros: 0, prompt_sha256: null });
      expect(calls() - before).to.equal(0);

      // Last month's cost does not count (UTC calendar month).
      const lastMonth = await aiConnection(one, "vendorone_compatible", priced(Number(worst)));
      const start = new Date();
      const prev = new Date(Date.UTC(start.getUTCFullYear(), start.getUTCMonth(), 1) - 1000).toISOString();
      await insertRuns(lastMonth, 1, { cost: 10_000_000, createdAt: prev });
      await lastMonth.inbound(uniquePhone("+1551"), TEXT);
      expect((await lastMonth.waitRuns(2))[0]!.outcome).to.equal("replied");

      const zero = await aiConnection(one, "vendorone_compatible", { ...priced(0), input_cost_micros_per_million: 0, output_cost_micros_per_million: 0 });
      before = calls();
      await zero.inbound(uniquePhone("+1551"), TEXT);
      expect((await zero.waitRuns(1))[0]!.outcome).to.equal("cost_limit_reached");
      expect(calls() - before).to.equal(0);

      const unlimited = await aiConnection(one, "vendorone_compatible", priced(null));
      await insertRuns(unlimited, 1, { cost: Number.MAX_SAFE_INTEGER });
      await unlimited.inbound(uniquePhone("+1551"), TEXT);
      expect((await unlimited.waitRuns(2))[0]!.outcome).to.equal("replied");
    });

    it("lets only one of two concurrent runs pass when the allowance covers one worst case", async () => {
      const t = await aiConnection(one, "vendorone_compatible", priced(null));
      await t.setPolicy(priced(Number(worstCase(t))));
      one.reply(() => ({ text: "slow", inputTokens: 1, outputTokens: 1, delayMs: 800 }));
      const before = one.requests.length;
      await Promise.all([t.inbound(uniquePhone("+1551"), TEXT), t.inbound(uniquePhone("+1551"), TEXT)]);
      const runs = await t.waitRuns(2);
      expect(runs.map((r) => r.outcome).sort()).to.deep.equal(["cost_limit_reached", "replied"]);
      expect(one.requests.length - before).to.equal(1);
    });

    it("counts reported usage up to what the request allowed: at the limit as reported, one token over it capped and flagged", () => {
      const limit = { inputTokens: 400, outputTokens: 32 };
      expect(countedUsage({ inputTokens: 400, outputTokens: 32 }, limit)).to.deep.equal({ inputTokens: 400, outputTokens: 32, over: false });
      expect(countedUsage({ inputTokens: 0, outputTokens: 0 }, limit)).to.deep.equal({ inputTokens: 0, outputTokens: 0, over: false });
      expect(countedUsage({ inputTokens: 400, outputTokens: 33 }, limit)).to.deep.equal({ inputTokens: 400, outputTokens: 32, over: true });
      expect(countedUsage({ inputTokens: 401, outputTokens: 32 }, limit)).to.deep.equal({ inputTokens: 400, outputTokens: 32, over: true });
    });

    it("never counts more than the vendor could bill: a vendor reporting 100 times max_output_tokens is counted at its worst case, flagged, and the month stays within its ceiling", async () => {
      const overLimit = async () => {
        const res = await http("GET", "/metrics", { headers: { authorization: `Bearer ${testEnv().gateway.ctx.config.metricsToken}` } });
        expect(res.status).to.equal(200);
        const line = res.text.split("\n").find((l) => l.startsWith('svc_ai_vendor_usage_over_limit_total{provider="vendorone_compatible"}'));
        return line ? Number(line.split(" ")[1]) : 0;
      };
      const t = await aiConnection(one, "vendorone_compatible", priced(null));
      const worst = worstCase(t);
      // The ceiling covers one worst case exactly.
      await t.setPolicy(priced(Number(worst)));
      const flagged = await overLimit();
      const before = one.requests.length;
      one.reply(() => ({ text: "a very long answer", inputTokens: 1_000_000, outputTokens: MAX_OUT * 100 }));
      await t.inbound(uniquePhone("+1551"), TEXT);
      const [run] = await t.waitRuns(1);
      // What was asked for: max_output_tokens as the vendor's limit.
      expect(one.requests[before]!.json.max_tokens).to.equal(MAX_OUT);
      const bodyBytes = Buffer.byteLength(one.requests[before]!.body);
      expect(run).to.include({ outcome: "replied", input_tokens: bodyBytes, output_tokens: MAX_OUT, cost_micros: Number(worst) });
      expect(await overLimit()).to.equal(flagged + 1);
      const [month] = (await db().query(`SELECT sum(cost_micros)::text AS total FROM ai_runs WHERE connection_id = $1`, [t.connectionId])) as { total: string }[];
      expect(BigInt(month!.total)).to.equal(worst);
      // Nothing is left of the allowance: the next run is refused before any vendor call.
      await t.inbound(uniquePhone("+1551"), TEXT);
      const [next] = await t.waitRuns(2);
      expect(next).to.include({ outcome: "cost_limit_reached" });
      expect(one.requests.length - before).to.equal(1);
    });

    it("refuses the 31st run in a minute on a connection (rate_limited), passes the 30th", async () => {
      one.reply(() => ({ text: "ok" }));
      const t = await aiConnection(one, "vendorone_compatible");
      await insertRuns(t, 29);
      // Refused runs and runs older than a minute do not count.
      await insertRuns(t, 5, { outcome: "human_active" });
      await insertRuns(t, 5, { createdAt: new Date(Date.now() - 61_000).toISOString() });
      await t.inbound(uniquePhone("+1551"), "thirtieth");
      expect((await t.waitRuns(40))[0]!.outcome).to.equal("replied");
      const before = one.requests.length;
      await t.inbound(uniquePhone("+1551"), "thirty-first");
      const [limited] = await t.waitRuns(41);
      expect(limited).to.include({ outcome: "rate_limited", prompt_sha256: null });
      expect(one.requests.length).to.equal(before);
    });
  });

  describe("failures", () => {
    for (const [script, code, requests] of [
      [{ status: 429 }, "vendor_rate_limited", 3],
      [{ status: 503 }, "vendor_unavailable", 3],
      // A timeout is not retried: the run's one time bound has passed.
      [{ hang: true }, "vendor_timeout", 1],
    ] as const) {
      it(`records ${code} as vendor_error after ${requests === 1 ? "1 attempt" : `${requests} attempts`}, with no reply`, async () => {
        const t = await aiConnection(two, "vendortwo");
        const contact = uniquePhone("+1551");
        two.reply(() => script);
        standAside(true);
        const before = two.requests.length;
        await t.inbound(contact, "are you there?");
        // The bound ends a hang in a second; the retries of a status fit well within 20 s.
        await runWith({ vendorTimeoutMs: "hang" in script ? 1_000 : 20_000 }, t, contact);
        two.reply(() => ({ text: DEFAULT_VENDOR_TEXT }));
        const [run] = await t.runs();
        expect(run).to.include({ outcome: "vendor_error", error: code });
        // The vendor was called (retries included): the time is recorded, as on a success.
        expect(run!.latency_ms).to.be.a("number").and.satisfy(Number.isInteger).and.at.least(0);
        expect(run!.prompt_sha256).to.equal(sha256(two.requests[before]!.body));
        expect(two.requests.length - before).to.equal(requests);
        expect(await received(contact)).to.deep.equal([]);
      });
    }

    it("ends a run credential_missing when the policy's credential was deleted", async () => {
      const t = await aiConnection(one, "vendorone_compatible");
      expect((await http("DELETE", `/v1/ai/credentials/${t.credentialId}`, { headers: t.auth })).status).to.equal(204);
      const before = one.requests.length;
      await t.inbound(uniquePhone("+1551"), "hello?");
      const [run] = await t.waitRuns(1);
      expect(run).to.include({ outcome: "credential_missing", prompt_sha256: null });
      expect(one.requests.length).to.equal(before);
    });

    it("refuses a private base_url at call time unless OUTBOUND_ALLOW_PRIVATE opens it", async () => {
      const t = await aiConnection(one, "vendorone_compatible");
      const contact = uniquePhone("+1551");
      standAside(true);
      const before = one.requests.length;
      await t.inbound(contact, "private?");
      await runWith({ allowPrivate: EMPTY_ALLOW_LIST }, t, contact);
      const [run] = await t.runs();
      expect(run).to.include({ outcome: "vendor_error", error: "vendor_address_refused", prompt_sha256: null, cost_micros: 0, latency_ms: null });
      expect(one.requests.length).to.equal(before);
      // The gateway's own runner has 127.0.0.0/8 allowed: the next message is answered.
      standAside(false);
      await t.inbound(contact, "and now?");
      expect((await t.waitRuns(2))[0]!.outcome).to.equal("replied");
      expect(one.requests.length - before).to.equal(1);
    });
  });

  describe("GET /v1/ai/runs", () => {
    it("pages newest first with signed cursors, filters by connection, and shows no text", async () => {
      const a = await aiConnection(one, "vendorone_compatible");
      const key = await a.ws.key(["ai:read", "connections:write"]);
      const client = createClient({ baseUrl: testEnv().baseUrl, apiKey: key.key });
      await expectOk(client.connections.create({ body: { slug: "second" } }));
      const [second] = (await db().query(`SELECT id FROM connections WHERE workspace_id = $1 AND slug = 'second'`, [a.ws.id])) as { id: string }[];
      // Explicit instants, two of them equal (ties are ordered by id, descending).
      const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s)).toISOString();
      const b = { ...a, connectionId: second!.id };
      const ids = [...(await insertRuns(a, 1, { createdAt: at(1) })), ...(await insertRuns(a, 1, { createdAt: at(2) })), ...(await insertRuns(a, 1, { createdAt: at(3) }))];
      const otherIds = [...(await insertRuns(b, 1, { createdAt: at(3) })), ...(await insertRuns(b, 1, { createdAt: at(4) }))];
      const tied = [ids[2]!, otherIds[0]!].sort().reverse();
      const all = [otherIds[1]!, ...tied, ids[1]!, ids[0]!];

      const seen: string[] = [];
      let cursor: string | undefined;
      do {
        const page = await expectOk(client.ai.listRuns({ query: { limit: 2, ...(cursor ? { cursor } : {}) } }));
        expect(page.data.length).to.be.at.most(2);
        seen.push(...page.data.map((r) => r.id));
        cursor = page.next_cursor ?? undefined;
      } while (cursor);
      expect(seen).to.deep.equal(all);

      const filtered = await expectOk(client.ai.listRuns({ query: { connection: "second", limit: 100 } }));
      expect(filtered.data.map((r) => r.id)).to.deep.equal([...otherIds].reverse());
      expect(filtered.data.every((r) => r.connection === "second")).to.equal(true);
      // A cursor of the unfiltered list is refused for the filtered one; bad input is a 400.
      const firstPage = await expectOk(client.ai.listRuns({ query: { limit: 1 } }));
      expect((await http("GET", `/v1/ai/runs?connection=second&cursor=${firstPage.next_cursor}`, { headers: { authorization: `Bearer ${key.key}` } })).status).to.equal(400);
      expect((await http("GET", `/v1/ai/runs?limit=101`, { headers: { authorization: `Bearer ${key.key}` } })).status).to.equal(400);
      expect((await http("GET", `/v1/ai/runs?limit=0`, { headers: { authorization: `Bearer ${key.key}` } })).status).to.equal(400);
      expect((await expectOk(client.ai.listRuns({ query: { limit: 100 } }))).data).to.have.length(5);
      // Another workspace sees none of them.
      const other = await aiConnection(one, "vendorone_compatible");
      expect(await other.runs()).to.deep.equal([]);
    });
  });

  describe("on the Baileys engine", () => {
    it("creates the run's job with the inbound message and replies through the socket", async () => {
      const t = await aiConnection(one, "vendorone_compatible", {}, { engine: "baileys" });
      const socket = await liveSocket(t.connectionId, (s) => s.user !== undefined);
      const contact = uniquePhone("+1551");
      const jid = `${contact.slice(1)}@s.whatsapp.net`;
      one.reply(() => ({ text: "answered over Baileys" }));
      // The test gateway's runner stands aside while the job is counted (its jobs wait, keeping their outbox key).
      standAside(true);
      socket.emit("messages.upsert", {
        type: "notify",
        messages: [{ key: { id: `IN${randomBytes(8).toString("hex").toUpperCase()}`, remoteJid: jid, fromMe: false }, message: { conversation: "open today?" }, messageTimestamp: Math.floor(Date.now() / 1000) }],
      });
      await waitFor(() => db().query(`SELECT 1 FROM ai_debounce WHERE connection_id = $1 AND contact = $2`, [t.connectionId, contact]) as Promise<unknown[]>, (r) => r.length > 0);
      // Written by the statement that stored the message: in the outbox, or relayed to Agenda already.
      expect(await queuedJobs(db(), "ai.run", "contact", contact)).to.equal(1);
      standAside(false);
      const [run] = await t.waitRuns(1);
      expect(run!.outcome).to.equal("replied");
      const sends = await waitFor(
        async () => socket.calls.filter((c) => c.method === "sendMessage" && c.args[0] === jid),
        (c) => c.length > 0,
      );
      expect(sends.map((c) => c.args[1])).to.deep.equal([{ text: "answered over Baileys" }]);
    });
  });

  describe("logs", () => {
    it("writes no prompt, completion or message body to any log line at any level", async function () {
      // Its own waits, each bounded: a child start-up, the run (30 s), the reply and the rest.
      this.timeout(CHILD_READY_MS + 30_000 + 30_000);
      const t = await aiConnection(one, "vendorone_compatible", { system_instruction: "SYSTEM-MARKER-7f3a answer briefly" });
      const contact = uniquePhone("+1551");
      one.reply(() => ({ text: "COMPLETION-MARKER-9c1d" }));
      await jobsLeftToChildren(async () => {
        const child = await startChildGateway({ OUTBOUND_ALLOW_PRIVATE: "127.0.0.0/8", LOG_LEVEL: "trace" });
        try {
          await sandbox("POST", "/inbound", { to: t.linked, from: contact, body: "INBOUND-MARKER-4e2b" }, child.url);
          const [run] = await t.waitRuns(1, 30_000);
          expect(run!.outcome).to.equal("replied");
          await waitFor(() => received(contact), (r) => r.length === 1);
          await sleep(500);
          const out = child.output();
          expect(out).to.include(run!.id);
          for (const marker of ["SYSTEM-MARKER-7f3a", "COMPLETION-MARKER-9c1d", "INBOUND-MARKER-4e2b"]) expect(out).to.not.include(marker);
        } finally {
          await child.terminate();
        }
      });
    });
  });
});
