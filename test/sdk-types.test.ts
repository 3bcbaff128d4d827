// The SDK's generated types (sdk/src/types.gen.ts) are the contract's, regenerated: the committed
// file must be what `npm run types -w sdk` writes now. test/sdk-types.check.ts proves at compile
// time that the generated client equals ts-rest's inferred one.
import { expect } from "chai";
import { spawnSync } from "node:child_process";
import { newestMtime } from "../server/web/build.js";

describe("@svc/sdk generated types", function () {
  this.timeout(120_000);

  it("are committed up to date with the contract, and checking them leaves sdk/src as it was", () => {
    // What is built from sdk/src (the dashboard, dist/ for the child gateways) would look stale.
    const before = newestMtime("sdk/src");
    const run = spawnSync(process.execPath, ["--import", "tsx", "sdk/scripts/generate-types.ts", "--check"], { encoding: "utf8" });
    expect(run.status, `${run.stdout}${run.stderr}`).to.equal(0);
    expect(newestMtime("sdk/src"), "sdk/src's newest change").to.equal(before);
  });
});
