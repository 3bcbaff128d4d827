// Runs autocannon in its own process (so the load does not share the gateway's event loop) with
// the options given as JSON in argv[2]; prints autocannon's result as one JSON line.
import autocannon from "autocannon";

const options = JSON.parse(process.argv[2]!) as autocannon.Options;
const result = await autocannon({ ...options, idReplacement: true });
process.stdout.write(`${JSON.stringify(result)}\n`);
