import type { MigrationInterface, QueryRunner } from "typeorm";

/**
 * Groups: the metadata of each connection's groups as the network last reported it (read by the
 * group routes and the send path instead of asking the network), whether a connection's full list
 * was fetched; and in the sandbox's simulated network, each group, its members with their roles,
 * and how a contact answers being added to a group (their privacy setting).
 */
export class Groups1732261500000 implements MigrationInterface {
  name = "Groups1732261500000";

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE group_metadata (
        connection_id text NOT NULL REFERENCES connections(id) ON DELETE CASCADE,
        group_id text NOT NULL,
        subject text NOT NULL,
        description text,
        announce boolean NOT NULL,
        locked boolean NOT NULL,
        -- when the network made the group
        created_at timestamptz NOT NULL,
        -- [{phone, lid, role}]
        participants jsonb NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (connection_id, group_id)
      );
      CREATE INDEX group_metadata_list ON group_metadata(connection_id, created_at DESC, group_id DESC);

      -- A connection whose full group list was fetched once: from then on its network events keep it fresh
      CREATE TABLE group_lists (
        connection_id text PRIMARY KEY REFERENCES connections(id) ON DELETE CASCADE,
        fetched_at timestamptz NOT NULL DEFAULT now()
      );

      ALTER TABLE sandbox_contacts ADD COLUMN group_add text NOT NULL DEFAULT 'allow' CHECK (group_add IN ('allow','invite','refuse'));

      CREATE TABLE sandbox_groups (
        id text PRIMARY KEY,
        subject text NOT NULL,
        description text,
        announce boolean NOT NULL DEFAULT false,
        locked boolean NOT NULL DEFAULT false,
        invite_code text,
        created_at timestamptz NOT NULL DEFAULT clock_timestamp()
      );

      CREATE TABLE sandbox_group_members (
        group_id text NOT NULL REFERENCES sandbox_groups(id) ON DELETE CASCADE,
        phone text NOT NULL,
        role text NOT NULL CHECK (role IN ('member','admin','superadmin')),
        PRIMARY KEY (group_id, phone)
      );
      CREATE INDEX sandbox_group_members_phone ON sandbox_group_members(phone);
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE sandbox_group_members, sandbox_groups, group_lists, group_metadata; ALTER TABLE sandbox_contacts DROP COLUMN group_add`);
  }
}
