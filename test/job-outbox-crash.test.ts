// Follow-up work survives a process killed between the commit of the rows that need it and the
// hand-off of its job to Agenda: the statements write the jobs into the job outbox themselves, so
// whatever was committed is relayed, by any process, once one relays again. The relay is held
// here by a trigger that refuses to take outbox rows (as a relay that has not run yet), so the
// kill lands exactly between commit and enqueue; then it is let go and everything happens.
import { expect } from "chai";
import { randomUUID } from "node:crypto";
import { RELAY_LEASE_MS } from "../jobs/outbox.js";
import { enqueueJob } from "../server/db/job-outbox.js";
import { createClient, expectOk } from "../sdk/src/index.js";
import { testEnv } from "./setup.js";
import { aiConnection, received, uniquePhone } from "./support/ai.js";
import { startChildGateway } from "./support/child-gateway.js";
import { sandbox } from "./support/sandbox.js";
import { startVendorOne, type VendorServer } from "./support/vendors.js";
import { waitFor } from "./support/wait.js";
import { Receiver } from "./support/webhook-receiver.js";

const db = () => testEnv().gateway.ctx.db;

async function holdRelay(): Promise<void> {
  await db().query(`CREATE FUNCTION hold_job_relay() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'the relay is held by the test'; END $$`);
  await db().query(`CREATE TRIGGER hold_job_relay BEFORE UPDATE OR DELETE ON job_outbox FOR EACH ROW EXECUTE FUNCTION hold_job_relay()`);
}

async function releaseRelay(): Promise<void> {
  await db().query(`DROP TRIGGER IF EXISTS hold_job_relay ON job_outbox`);
  await db().query(`DROP FUNCTION IF EXISTS hold_job_relay()`);
  testEnv().gateway.ctx.services.jobRelay.wake();
}

describe("the job outbox across SIGKILL", function () {
  this.timeout(120_000);
  let vendor: VendorServer;
  let hook: Receiver;
  before(async () => {
    vendor = await startVendorOne();
    hook = await Receiver.start();
  });
  after(async () => {
    await releaseRelay();
    await vendor.close();
    await hook.close();
  });

  it("releases a deferred send, runs an AI reply and retries a webhook whose jobs were committed but never enqueued", async () => {
    const t = await aiConnection(vendor, "vendorone_compatible");
    hook.answer = (n) => (n === 1 ? 500 : 204);
    const endpoint = await expectOk(t.client.webhooks.create({ body: { url: hook.url, events: ["message.received"] } }));
    const contact = uniquePhone("+1551");
    const to = uniquePhone("+1553");
    const outbox = (name: string, field: string, value: string) =>
      db().query(`SELECT id::text FROM job_outbox WHERE name = $1 AND data->>$2 = $3`, [name, field, value]) as Promise<{ id: string }[]>;

    await holdRelay();
    const child = await startChildGateway({ OUTBOUND_ALLOW_PRIVATE: "127.0.0.0/8" });
    let deferred: string;
    let delivery: string;
    try {
      const client = createClient({ baseUrl: child.url, apiKey: t.auth.authorization!.slice("Bearer ".length) });
      const sendAt = new Date(Date.now() + 2_000).toISOString();
      deferred = (await expectOk(client.messages.send({ body: { connection: t.slug, to, body: "later", send_at: sendAt } }))).id;
      expect((await sandbox("POST", "/inbound", { to: t.linked, from: contact, body: "anyone there?" }, child.url)).status).to.equal(202);
      // The inbound message's event fans out to the endpoint; its first attempt fails (500).
      delivery = (
        await waitFor(
          () => db().query(`SELECT id FROM webhook_deliveries WHERE endpoint_id = $1 AND attempt_count = 1 AND status = 'pending'`, [endpoint.id]) as Promise<{ id: string }[]>,
          (r) => r.length === 1,
        )
      )[0]!.id;
      // Committed, each with its job in the outbox, and none of them in Agenda.
      const jobs = [
        ...(await outbox("message.release", "message_id", deferred)),
        ...(await outbox("ai.run", "contact", contact)),
        ...(await outbox("webhook.retry", "delivery_id", delivery)),
      ];
      expect(jobs).to.have.length(3);
      const [relayed] = (await db().query(`SELECT count(*)::int AS n FROM agenda_jobs WHERE data->>'outbox_id' = ANY($1::text[])`, [
        jobs.map((j) => `outbox:${j.id}`),
      ])) as { n: number }[];
      expect(relayed!.n).to.equal(0);
    } finally {
      await child.kill();
    }

    await releaseRelay();
    const message = await waitFor(() => expectOk(t.client.messages.get({ params: { id: deferred } })), (m) => m.status === "read", 30_000);
    expect(message.timeline.map((e) => e.status)).to.include.members(["scheduled", "queued", "read"]);
    expect(await received(to)).to.have.length(1);
    const [run] = await t.waitRuns(1, 30_000);
    expect(run!.outcome).to.equal("replied");
    await waitFor(() => received(contact), (r) => r.length === 1, 30_000);
    const done = await waitFor(
      () => expectOk(t.client.webhooks.listDeliveries({ params: { id: endpoint.id } })),
      (l) => l.data.some((d) => d.id === delivery && d.status === "succeeded"),
      30_000,
    );
    const attempts = done.data.find((d) => d.id === delivery)!.attempts;
    expect(attempts.map((a) => [a.trigger, a.status_code])).to.deep.equal([
      ["initial", 500],
      ["retry", 204],
    ]);
    // Relayed once each: the outbox is empty of them.
    expect(await db().query(`SELECT 1 FROM job_outbox WHERE data->>'message_id' = $1 OR data->>'contact' = $2 OR data->>'delivery_id' = $3`, [deferred, contact, delivery])).to.deep.equal([]);
  });

  it("leases what a relay takes for RELAY_LEASE_MS, and relays a dead relay's rows when the lease ends, not at the next poll", async () => {
    // The test gateway's relay takes the row and fails to save its job (a trigger refuses it, as
    // if the process had died there): the row stays leased, and no NOTIFY says when it is free.
    const messageId = `msg_lease_${randomUUID()}`;
    // A sequence counts the refusals: it is not rolled back with the refused statement.
    await db().query(`CREATE SEQUENCE refused_lease_jobs`);
    await db().query(`CREATE FUNCTION refuse_lease_job() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
      IF NEW.data->>'message_id' = '${messageId}' THEN PERFORM nextval('refused_lease_jobs'); RAISE EXCEPTION 'the save is refused by the test'; END IF; RETURN NEW; END $$`);
    await db().query(`CREATE TRIGGER refuse_lease_job BEFORE INSERT ON agenda_jobs FOR EACH ROW EXECUTE FUNCTION refuse_lease_job()`);
    try {
      await enqueueJob(db(), "message.release", { message_id: messageId }, new Date());
      await waitFor(() => db().query(`SELECT is_called FROM refused_lease_jobs`) as Promise<{ is_called: boolean }[]>, (r) => r[0]!.is_called, 10_000, 20);
      const [leased] = (await db().query(`SELECT (extract(epoch FROM locked_until - now()) * 1000)::float8 AS ms FROM job_outbox WHERE data->>'message_id' = $1`, [messageId])) as { ms: number }[];
      expect(leased!.ms, "ms of lease left once taken").to.be.within(RELAY_LEASE_MS - 2_000, RELAY_LEASE_MS);
    } finally {
      await db().query(`DROP TRIGGER refuse_lease_job ON agenda_jobs`);
      await db().query(`DROP FUNCTION refuse_lease_job()`);
      await db().query(`DROP SEQUENCE refused_lease_jobs`);
    }
    // As if it had been taken all but 2 s of its lease ago; the relay looks (as at any other
    // process's NOTIFY), finds it leased, and must come back when the lease ends, well before its
    // next poll (10 s).
    const [{ ends }] = (await db().query(
      `WITH moved AS (UPDATE job_outbox SET locked_until = now() + interval '2 seconds' WHERE data->>'message_id' = $1 RETURNING locked_until)
       SELECT (extract(epoch FROM locked_until) * 1000)::float8 AS ends FROM moved`,
      [messageId],
    )) as [{ ends: number }];
    testEnv().gateway.ctx.services.jobRelay.wake();
    const relayed = () => db().query(`SELECT 1 FROM agenda_jobs WHERE data->>'message_id' = $1`, [messageId]) as Promise<unknown[]>;
    await waitFor(relayed, (r) => r.length === 1, 8_000, 50);
    const [{ now }] = (await db().query(`SELECT (extract(epoch FROM now()) * 1000)::float8 AS now`)) as [{ now: number }];
    expect(now - ends, "ms from the lease's end to the relay").to.be.within(-100, 2_000);
    // Deleted from the outbox by the statement after the save.
    await waitFor(() => db().query(`SELECT 1 FROM job_outbox WHERE data->>'message_id' = $1`, [messageId]) as Promise<unknown[]>, (r) => r.length === 0, 5_000, 20);
  });
});
