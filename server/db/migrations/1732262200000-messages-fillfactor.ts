import type { MigrationInterface, QueryRunner } from "typeorm";

/**
 * A message row is updated three to four times after its insert (submitting, submitted, the
 * network's receipts), mostly its status alone. With full pages (the default fillfactor of 100)
 * half of those updates found no room beside the row and were written elsewhere, each adding an
 * entry to every one of the table's indexes; with room on the page an update that changes no
 * indexed column stays on it (a HOT update) and touches no index. New pages keep a fifth free;
 * existing ones are left as they are.
 */
export class MessagesFillfactor1732262200000 implements MigrationInterface {
  name = "MessagesFillfactor1732262200000";

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE messages SET (fillfactor = 80)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE messages RESET (fillfactor)`);
  }
}
