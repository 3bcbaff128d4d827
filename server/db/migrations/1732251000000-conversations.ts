import type { MigrationInterface, QueryRunner } from "typeorm";

/**
 * Conversations (docs/conversations.md). A message gains what people do around it: the
 * message it quotes (`reply_to`, our id), the reactions to it (one emoji per reactor, reactor →
 * emoji, counted per emoji when shown), when it was edited or deleted for everyone (the record and
 * its timeline stay), when we marked an inbound one read, and for a poll its question, options and
 * each voter's current choice. `chat` is derived from the row (the group, else the contact) so
 * that a connection's chats and a chat's messages read from one index.
 *
 * The sandbox records what the network got besides messages (reactions, edits, revokes, reads,
 * presence) in sandbox_actions, and a reply's quoted message and a poll on its deliveries.
 */
export class Conversations1732251000000 implements MigrationInterface {
  name = "Conversations1732251000000";

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE messages
        ADD COLUMN reply_to text,
        ADD COLUMN reactions jsonb,
        ADD COLUMN edited_at timestamptz,
        ADD COLUMN revoked_at timestamptz,
        ADD COLUMN read_at timestamptz,
        ADD COLUMN poll jsonb,
        ADD COLUMN poll_votes jsonb,
        ADD COLUMN chat text GENERATED ALWAYS AS (
          CASE WHEN jsonb_typeof(recipient) = 'object' AND recipient ? 'group' THEN 'group:' || (recipient->>'group')
               WHEN direction = 'inbound' THEN sender
               WHEN jsonb_typeof(recipient) = 'string' THEN recipient #>> '{}'
               ELSE recipient->>'phone' END
        ) STORED;
      CREATE INDEX messages_chat ON messages(connection_id, chat, created_at DESC, id DESC);

      ALTER TABLE sandbox_deliveries ADD COLUMN quoted_message_id text, ADD COLUMN poll jsonb;
      CREATE TABLE sandbox_actions (
        id bigserial PRIMARY KEY,
        connection_id text NOT NULL,
        -- the phone or group id the action concerns (a chat's other side)
        to_address text NOT NULL,
        kind text NOT NULL CHECK (kind IN ('reaction','edit','revoke','read','presence')),
        message_id text,
        detail jsonb NOT NULL DEFAULT '{}',
        created_at timestamptz NOT NULL DEFAULT clock_timestamp()
      );
      CREATE INDEX sandbox_actions_to ON sandbox_actions(to_address, id);
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
      DROP TABLE sandbox_actions;
      ALTER TABLE sandbox_deliveries DROP COLUMN quoted_message_id, DROP COLUMN poll;
      DROP INDEX messages_chat;
      ALTER TABLE messages DROP COLUMN chat, DROP COLUMN reply_to, DROP COLUMN reactions, DROP COLUMN edited_at, DROP COLUMN revoked_at,
        DROP COLUMN read_at, DROP COLUMN poll, DROP COLUMN poll_votes;
    `);
  }
}
