// 405 for a known path asked with a method it does not take: the methods each path of the contract
// (and the routes mounted beside it) answers, matched against a request no route took.
import { isAppRoute, type AppRouter } from "@ts-rest/core";

interface PathMethods {
  pattern: RegExp;
  methods: Set<string>;
}

/** `:name` segments match any one segment; a trailing slash is allowed, as Express allows it. */
function patternOf(path: string): RegExp {
  const source = path
    .split("/")
    .map((segment) => (segment.startsWith(":") ? "[^/]+" : segment.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")))
    .join("/");
  return new RegExp(`^${source}/?$`);
}

function collect(router: AppRouter, into: Map<string, Set<string>>): Map<string, Set<string>> {
  for (const entry of Object.values(router)) {
    if (isAppRoute(entry)) {
      const methods = into.get(entry.path) ?? new Set<string>();
      methods.add(entry.method);
      into.set(entry.path, methods);
    } else {
      collect(entry, into);
    }
  }
  return into;
}

/** Answers the methods a path takes (GET implies HEAD), or none when no route has the path. */
export function allowedMethods(router: AppRouter, extra: Record<string, string[]> = {}): (path: string) => string[] {
  const byPath = collect(router, new Map());
  for (const [path, methods] of Object.entries(extra)) byPath.set(path, new Set([...(byPath.get(path) ?? []), ...methods]));
  const table: PathMethods[] = [...byPath].map(([path, methods]) => ({ pattern: patternOf(path), methods }));
  return (path) => {
    const methods = new Set<string>();
    for (const t of table) if (t.pattern.test(path)) for (const m of t.methods) methods.add(m);
    if (methods.has("GET")) methods.add("HEAD");
    return [...methods].sort();
  };
}
