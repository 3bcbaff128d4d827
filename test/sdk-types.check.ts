// Compile-time proof (checked by `npm run typecheck`) that the SDK's generated client type
// (sdk/src/types.gen.ts) is what ts-rest infers from the contract, route by route: the same
// routes, the same request shape and optionality, the same responses. A contract change without
// `npm run types -w sdk` fails here, and test/sdk-types.test.ts fails on a stale file.
import type { InitClientReturn } from "@ts-rest/core";
import type { Contract } from "../contract/index.js";
import type { SvcClientArgs } from "../sdk/src/client-args.js";
import type { CallOptions, SvcClient } from "../sdk/src/index.js";

type Inferred = InitClientReturn<Contract, SvcClientArgs>;
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type RequestOf<F, Drop extends PropertyKey> = F extends (...args: infer P) => unknown ? Omit<NonNullable<P[0]>, Drop> : never;
type Optional<F> = F extends (...args: infer P) => unknown ? (P extends [] | [unknown?] ? (undefined extends P[0] ? true : [] extends P ? true : false) : false) : never;
type TsRestOptions = keyof CallOptions | "overrideClientOptions" | "cache" | "next";

type ResponseOf<F> = F extends (...args: never[]) => Promise<infer R> ? R : never;

type RouteMatches<O, T> =
  Same<ResponseOf<O>, ResponseOf<T>> extends true
    ? Same<RequestOf<O, keyof CallOptions>, RequestOf<T, TsRestOptions>> extends true
      ? Same<Optional<O>, Optional<T>>
      : false
    : false;

/** `group.route` of every route whose generated type differs from the inferred one. */
type GroupMismatches<O, T, G extends string> = {
  [R in keyof T & string]: R extends keyof O ? (RouteMatches<O[R], T[R]> extends true ? never : `${G}.${R}`) : `${G}.${R}`;
}[keyof T & string];
type Mismatches = {
  [G in keyof Inferred & keyof SvcClient & string]: GroupMismatches<SvcClient[G], Inferred[G], G>;
}[keyof Inferred & keyof SvcClient & string];

/** Routes or groups only one side has. */
type Extra =
  | Exclude<keyof SvcClient, keyof Inferred>
  | Exclude<keyof Inferred, keyof SvcClient>
  | { [G in keyof Inferred & keyof SvcClient]: Exclude<keyof SvcClient[G], keyof Inferred[G]> }[keyof Inferred & keyof SvcClient];

export const generatedTypesMatchTheContract: { mismatches: [Mismatches] extends [never] ? "none" : Mismatches; extra: [Extra] extends [never] ? "none" : Extra } = {
  mismatches: "none",
  extra: "none",
};
