// The migrations on an empty database of this file's own: all of them apply, a second run applies
// none (on start, every gateway process migrates), and the TypeORM entities agree with the schema
// they built: TypeORM's schema diff between the entities and the migrated database adds, alters
// and drops no table or column. Only the migrations declare indexes, checks, unique constraints
// and defaults (docs/decisions.md, "TypeORM's role"), so the diff's statements that would drop
// those are expected, and only those.
import { expect } from "chai";
import { openDatabase, type Database } from "../server/db/database.js";
import { MIGRATIONS } from "../server/db/schema.js";
import { createLogger } from "../server/logger.js";
import { ownDatabase, type OwnDatabase } from "./support/own-database.js";

/** Statements that would drop what only the migrations declare. */
const MIGRATIONS_ONLY = [/^DROP INDEX "public"\."\w+"$/, /^ALTER TABLE "\w+" DROP CONSTRAINT "\w+"$/, /^ALTER TABLE "\w+" ALTER COLUMN "\w+" DROP DEFAULT$/];

describe("migrations", function () {
  this.timeout(120_000);
  let target: OwnDatabase;
  let database: Database | undefined;

  before(async () => {
    target = await ownDatabase();
  });

  after(async () => {
    await database?.close();
    await target?.close();
  });

  it("migrate an empty database, then again without change, and leave the entities in step with the schema", async () => {
    const applied: string[][] = [];
    const logger = createLogger("silent");
    logger.info = ((fields: { migrations?: string[] }) => {
      if (fields?.migrations) applied.push(fields.migrations);
    }) as typeof logger.info;
    database = await openDatabase({ url: target.url, dataDir: null, logger });
    expect(applied).to.deep.equal([MIGRATIONS.map((m) => m.name)]);
    // Every process migrates on start: a second run finds nothing to do.
    expect(await database.dataSource.runMigrations({ transaction: "each" })).to.deep.equal([]);
    expect(await database.dataSource.showMigrations()).to.equal(false);
    // What TypeORM would change to make the schema match the entities: nothing of theirs.
    const diff = (await database.dataSource.driver.createSchemaBuilder().log()).upQueries.map((q) => q.query);
    expect(diff.filter((query) => !MIGRATIONS_ONLY.some((only) => only.test(query)))).to.deep.equal([]);
  });
});
