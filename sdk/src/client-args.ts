// The client arguments createClient hands to ts-rest; they shape each route's request type, so
// the type generator (sdk/scripts/generate-types.ts) and its check read them from here. Not part
// of the public declarations, which must not reach ts-rest's or zod's types.
import type { ApiFetcher } from "@ts-rest/core";

export interface SvcClientArgs {
  baseUrl: string;
  baseHeaders: Record<string, string>;
  api: ApiFetcher;
  throwOnUnknownStatus: true;
  validateResponse: false;
  jsonQuery: false;
}
