// `npm run openapi`: writes openapi.json at the repository root. No server URL, so the committed
// document is the same in every environment (servers: [{url: "/"}]). A script, not a module:
// importing it writes the file.
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { buildOpenApiDocument } from "./document.js";

const file = fileURLToPath(new URL("../../openapi.json", import.meta.url));
writeFileSync(file, `${JSON.stringify(buildOpenApiDocument(), null, 2)}\n`);
process.stdout.write(`wrote ${file}\n`);
