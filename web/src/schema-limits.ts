// A contract field's limits and default, read from its zod schema, so a form states exactly what the
// API accepts (and what it validates with) instead of a second copy of the numbers.
import { z } from "zod";
import { formatCount } from "./format.js";

export interface FieldLimits {
  /** Least value (numbers) or length (strings). */
  min?: number;
  /** Greatest value (numbers) or length (strings). */
  max?: number;
  /** What the API takes when the field is left out. */
  defaultValue?: unknown;
  nullable: boolean;
}

export function fieldLimits(schema: z.ZodTypeAny): FieldLimits {
  let s = schema;
  let defaultValue: unknown;
  let nullable = false;
  for (;;) {
    if (s instanceof z.ZodDefault) {
      defaultValue = (s._def as { defaultValue: () => unknown }).defaultValue();
      s = s._def.innerType as z.ZodTypeAny;
    } else if (s instanceof z.ZodNullable || s instanceof z.ZodOptional) {
      if (s instanceof z.ZodNullable) nullable = true;
      s = s.unwrap() as z.ZodTypeAny;
    } else break;
  }
  const limits: FieldLimits = { nullable, ...(defaultValue !== undefined && { defaultValue }) };
  const [min, max] = s instanceof z.ZodNumber ? [s.minValue, s.maxValue] : s instanceof z.ZodString ? [s.minLength, s.maxLength] : [null, null];
  if (min !== null) limits.min = min;
  if (max !== null) limits.max = max;
  return limits;
}

/** `32 to 2,000; default 300`: the range (then `unit`) and the default in words, each number written by `n`. */
export function limitsText(l: FieldLimits, unit = "", n: (value: number) => string = formatCount): string {
  const range =
    l.min !== undefined && l.max !== undefined ? `${n(l.min)} to ${n(l.max)}` : l.max !== undefined ? `at most ${n(l.max)}` : l.min !== undefined ? `at least ${n(l.min)}` : "";
  const dflt = typeof l.defaultValue === "number" ? `default ${n(l.defaultValue)}` : "";
  return [range && range + unit, dflt].filter(Boolean).join("; ");
}
