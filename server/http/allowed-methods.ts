// 405 for a known path asked with a method it does not take: the methods each path of the contract
// (and the routes mounted beside it) answers, matched against a request no route took.
import type { AppRouter } from "@ts-rest/core";
import { routesOf } from "../../contract/index.js";

/** `:name` segments match any one segment; a trailing slash is allowed, as Express allows it. */
function patternOf(path: string): RegExp {
  const source = path
    .split("/")
    .map((segment) => (segment.startsWith(":") ? "[^/]+" : segment.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")))
    .join("/");
  return new RegExp(`^${source}/?$`);
}

/** Answers the methods a path takes (GET implies HEAD), or none when no route has the path. */
export function allowedMethods(router: AppRouter, extra: Record<string, string[]> = {}): (path: string) => string[] {
  const pairs = [...routesOf(router).map(({ route }) => [route.path, route.method] as const), ...Object.entries(extra).flatMap(([path, methods]) => methods.map((m) => [path, m] as const))];
  const table = pairs.map(([path, method]) => ({ pattern: patternOf(path), method }));
  return (path) => {
    const methods = new Set(table.filter((t) => t.pattern.test(path)).map((t) => t.method));
    if (methods.has("GET")) methods.add("HEAD");
    return [...methods].sort();
  };
}
