// A unique violation (on the named constraint, or on any), as pg reports it directly (a pooled
// query) or as TypeORM wraps it (QueryFailedError carries pg's error as driverError).

export function isUniqueViolation(err: unknown, constraint?: string): boolean {
  const driverError = ((err as { driverError?: unknown } | null)?.driverError ?? err) as { code?: unknown; constraint?: unknown } | null;
  return driverError?.code === "23505" && (constraint === undefined || driverError.constraint === constraint);
}
