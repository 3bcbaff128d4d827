// How the dashboard writes numbers: counts with thousands separators, and money as currency units
// while the API counts micros (millionths of a unit). The conversion is done on decimal strings,
// never through floating point, so every value up to the API's largest integer survives the trip.

/** The page's language (index.html says `en`): `1,234,567`. */
export function formatCount(n: number): string {
  return n.toLocaleString("en-US");
}

const MICROS_PER_UNIT_DIGITS = 6;

/** Micros as currency units with thousands separators, no trailing zeros: 2500000 → `2.5`, 1234567890 → `1,234.56789`. */
export function formatUnits(micros: number): string {
  const [whole, fraction] = splitMicros(micros);
  return fraction ? `${formatCount(Number(whole))}.${fraction}` : formatCount(Number(whole));
}

/** Micros as an input's value in currency units, without separators: 9007199254740991 → `9007199254.740991`. */
export function unitsInputValue(micros: number): string {
  const [whole, fraction] = splitMicros(micros);
  return fraction ? `${whole}.${fraction}` : whole;
}

function splitMicros(micros: number): [whole: string, fraction: string] {
  if (!Number.isSafeInteger(micros) || micros < 0) throw new RangeError(`not a count of micros: ${micros}`);
  const digits = String(micros).padStart(MICROS_PER_UNIT_DIGITS + 1, "0");
  const whole = digits.slice(0, -MICROS_PER_UNIT_DIGITS);
  const fraction = digits.slice(-MICROS_PER_UNIT_DIGITS).replace(/0+$/, "");
  return [whole, fraction];
}

export type UnitsParse = { ok: true; micros: number } | { ok: false; message: string };

/**
 * What a person typed in currency units, as micros: `2.50` → 2500000, `1,000` → 1000000000.
 * Commas may group thousands; the decimal point is `.`; at most six decimals (a micro is the
 * smallest amount the API stores); at most `maxMicros` (the contract's limit of the field).
 */
export function parseUnits(text: string, maxMicros: number): UnitsParse {
  const plain = text.trim().replace(/,/g, "");
  const m = /^(\d*)(?:\.(\d*))?$/.exec(plain);
  if (!m || (m[1] === "" && !m[2])) return { ok: false, message: "Enter an amount such as 2.50 (digits, and a point before the decimals)" };
  const fraction = m[2] ?? "";
  if (fraction.length > MICROS_PER_UNIT_DIGITS) return { ok: false, message: "At most six decimals: a millionth of a unit is the smallest amount" };
  const digits = (m[1] + fraction.padEnd(MICROS_PER_UNIT_DIGITS, "0")).replace(/^0+(?=\d)/, "");
  const micros = Number(digits);
  // Past the largest safe integer a Number is no longer exact: such a value is past every limit too.
  if (!Number.isSafeInteger(micros) || micros > maxMicros) return { ok: false, message: `At most ${formatUnits(maxMicros)}` };
  return { ok: true, micros };
}
