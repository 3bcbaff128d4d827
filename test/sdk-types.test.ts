// The SDK's generated types (sdk/src/types.gen.ts) are the contract's, regenerated: the committed
// file must be what `npm run types -w sdk` writes now. test/sdk-types.check.ts proves at compile
// time that the generated client equals ts-rest's inferred one.
import { expect } from "chai";
import { spawnSync } from "node:child_process";

describe("@svc/sdk generated types", function () {
  this.timeout(120_000);

  it("are committed up to date with the contract", () => {
    const run = spawnSync(process.execPath, ["--import", "tsx", "sdk/scripts/generate-types.ts", "--check"], { encoding: "utf8" });
    expect(run.status, `${run.stdout}${run.stderr}`).to.equal(0);
  });
});
