// What a run costs and counts: prices are micros per million tokens, exact in bigint.

/** The cost of a run in micros: each side rounded up separately, exactly (prices reach 2^53-1). */
export function costMicros(inputTokens: number, outputTokens: number, inputPricePerMillion: bigint, outputPricePerMillion: bigint): bigint {
  return ceilDiv(BigInt(inputTokens) * inputPricePerMillion, 1_000_000n) + ceilDiv(BigInt(outputTokens) * outputPricePerMillion, 1_000_000n);
}

/** Token counts of one side each (input, output). */
export interface Tokens {
  inputTokens: number;
  outputTokens: number;
}

/**
 * What a run counts of the usage a vendor reports: never more than the vendor could bill for the
 * request, which is its worst case: the request body's UTF-8 bytes as input tokens (a token is
 * never shorter than a byte) and the `max_output_tokens` it asked for as output. `over`: the
 * vendor reported more than that on either side (it is flagged, and counted at the limit).
 */
export function countedUsage(reported: Tokens, limit: Tokens): Tokens & { over: boolean } {
  return {
    inputTokens: Math.min(reported.inputTokens, limit.inputTokens),
    outputTokens: Math.min(reported.outputTokens, limit.outputTokens),
    over: reported.inputTokens > limit.inputTokens || reported.outputTokens > limit.outputTokens,
  };
}

function ceilDiv(a: bigint, b: bigint): bigint {
  return (a + b - 1n) / b;
}
