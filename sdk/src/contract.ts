// `@svc/sdk/contract`: the ts-rest contract and its zod schemas, for runtime validation or a
// client of one's own. Heavier for the compiler than the main entry's generated types.
export * from "../../contract/index.js";
