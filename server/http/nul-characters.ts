// PostgreSQL cannot store the NUL character (U+0000) in text or jsonb: a request carrying one
// anywhere would otherwise fail at the database with a 500. Refused here instead with a 400 that
// names the field, after authentication (like every other input rule) and before validation.
import type { RequestHandler } from "express";
import { ApiError, type FieldError } from "./errors.js";

export const rejectNulCharacters: RequestHandler = (req, _res, next) => {
  const errors: FieldError[] = [];
  const sources: [string, unknown][] = [["path", req.params], ["query", req.query], ["body", req.body]];
  for (const [prefix, value] of sources) findNul(value, prefix, errors);
  next(errors.length ? ApiError.validation(errors) : undefined);
};

function findNul(value: unknown, path: string, errors: FieldError[]): void {
  if (errors.length >= 10) return;
  if (typeof value === "string") {
    if (value.includes("\u0000")) errors.push({ path, message: "must not contain the NUL character (U+0000)" });
  } else if (Array.isArray(value)) {
    value.forEach((v, i) => findNul(v, `${path}.${i}`, errors));
  } else if (value !== null && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) {
      if (k.includes("\u0000")) errors.push({ path: `${path}.${k.replaceAll("\u0000", "\\u0000")}`, message: "names must not contain the NUL character (U+0000)" });
      findNul(v, `${path}.${k}`, errors);
    }
  }
}
