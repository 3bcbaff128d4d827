// Runs autocannon in its own process (so the load does not share the gateway's event loop) with
// the options given as JSON in argv[2]; prints autocannon's result as one JSON line, with
// `answeredSeconds`: from the run's start to its last response. autocannon's own `duration` ends
// at the sampling tick after the last response (a whole second, by default), so a run of a fixed
// amount that took 3.2 s reads 4.0 s there.
import autocannon from "autocannon";

const options = JSON.parse(process.argv[2]!) as autocannon.Options;
let lastResponse = 0;
const result = await new Promise<autocannon.Result>((resolve, reject) => {
  const instance = autocannon({ ...options, idReplacement: true }, (err, r) => (err ? reject(err) : resolve(r)));
  instance.on("response", () => {
    lastResponse = Date.now();
  });
});
const answeredSeconds = lastResponse ? (lastResponse - result.start.getTime()) / 1000 : result.duration;
process.stdout.write(`${JSON.stringify({ ...result, answeredSeconds })}\n`);
