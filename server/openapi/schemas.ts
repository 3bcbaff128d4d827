// zod → JSON Schema for the OpenAPI document, with named components. Every object, union or enum
// the contract exports under a name becomes `#/components/schemas/<Name>` and is referenced with
// `$ref` wherever a route uses it, so that generated clients get named types (Message, Connection…)
// instead of anonymous inline shapes. The names are the contract's export names, except the few
// renamed below to read as resources.
import type { ReferenceObject, SchemaObject } from "openapi3-ts/oas31";
import { ZodDiscriminatedUnion, ZodEnum, ZodObject, ZodType, ZodUnion, type z, type ZodTypeDef } from "zod";
import { ignoreOverride, zodToJsonSchema, type PostProcessCallback } from "zod-to-json-schema";
import * as exported from "../../contract/index.js";
import { DaysOfWeek, Timestamp, ZonedDateTime } from "../../contract/index.js";

/** Export name → component name, where the export's name says less than the resource's. */
const RENAMED: Record<string, string> = {
  TimelineEntry: "MessageTimelineEntry",
  WorkspaceOverview: "Workspace",
  ScopeSchema: "Scope",
};

// Parameter groups are spread into `parameters`, never referenced as a whole.
const PARAMETER_GROUP = /(Params|Query|Headers)$/;

function namedDefs(): Map<ZodTypeDef, string> {
  const names = new Map<ZodTypeDef, string>();
  for (const [name, value] of Object.entries(exported)) {
    if (!(value instanceof ZodType) || PARAMETER_GROUP.test(name)) continue;
    if (!(value instanceof ZodObject || value instanceof ZodEnum || value instanceof ZodUnion || value instanceof ZodDiscriminatedUnion)) continue;
    if (!names.has(value._def)) names.set(value._def, RENAMED[name] ?? name);
  }
  return names;
}

const dateTimeDefs = new Set<ZodTypeDef>([ZonedDateTime._def, Timestamp._def]);

// Fill in what the converter cannot see through refinements and shortcuts: RFC 3339 date-times
// (a refine in ZonedDateTime; `Timestamp.nullable()` is emitted without visiting Timestamp) and
// the no-repeat rule of days_of_week.
const postProcess: PostProcessCallback = (schema, def) => {
  if (!schema) return schema;
  const inner = (def as { innerType?: z.ZodTypeAny }).innerType?._def;
  if (dateTimeDefs.has(def) || (inner && dateTimeDefs.has(inner) && "type" in schema)) {
    return { ...schema, format: "date-time" } as typeof schema;
  }
  if (def === DaysOfWeek._def) return { ...schema, uniqueItems: true } as typeof schema;
  return schema;
};

/**
 * Converts schemas, replacing each named one by a `$ref` and remembering which names were
 * referenced; `components()` then defines exactly those (and whatever they reference in turn).
 */
export class SchemaRegistry {
  private readonly names = namedDefs();
  private readonly byName = new Map<string, z.ZodTypeAny>();
  private readonly referenced = new Set<string>();

  constructor() {
    for (const [name, value] of Object.entries(exported)) {
      if (value instanceof ZodType && this.names.get(value._def) === (RENAMED[name] ?? name)) this.byName.set(RENAMED[name] ?? name, value);
    }
  }

  /** The JSON Schema of `schema`; a named schema (at any depth) becomes a `$ref`. */
  convert(schema: z.ZodTypeAny, defining?: ZodTypeDef): SchemaObject | ReferenceObject {
    const out = zodToJsonSchema(schema, {
      target: "jsonSchema2019-09",
      $refStrategy: "none",
      // Strict zod objects get `additionalProperties: false`; stripping and passthrough objects
      // (every response) stay open so that added fields are not breaking changes.
      removeAdditionalStrategy: "strict",
      allowedAdditionalProperties: undefined,
      postProcess,
      override: (def) => {
        const name = def === defining ? undefined : this.names.get(def);
        if (name === undefined) return ignoreOverride;
        this.referenced.add(name);
        return { $ref: `#/components/schemas/${name}` };
      },
    }) as Record<string, unknown>;
    delete out.$schema;
    return out as SchemaObject | ReferenceObject;
  }

  /** The component name of a schema, if it has one. */
  nameOf(schema: z.ZodTypeAny): string | undefined {
    return this.names.get(schema._def);
  }

  /** Every referenced component, sorted by name, including those only other components reference. */
  components(): Record<string, SchemaObject> {
    const out: Record<string, SchemaObject> = {};
    for (let pending = [...this.referenced]; pending.length > 0; pending = [...this.referenced].filter((n) => !(n in out))) {
      for (const name of pending) out[name] = this.convert(this.byName.get(name)!, this.byName.get(name)!._def) as SchemaObject;
    }
    return Object.fromEntries(Object.entries(out).sort(([a], [b]) => a.localeCompare(b)));
  }
}
