// Loads clients/testdata/vectors.json without losing precision. JSON.parse turns
// 9223372036854775807 into 9223372036854775808, and Node 20's JSON.parse has no access to a
// number's source text, so integer literals too long to be safe are quoted with a marker before
// parsing and turned into BigInt by the reviver. Only number tokens are touched: the lookbehind
// requires a JSON value position (after ':', '[' or ','), which a digit run inside a string
// ("1700000006000000000") never follows directly since strings start with '"'.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
export const vectorsPath = path.resolve(here, '../../../testdata/vectors.json');

const MARK = '@@bigint:';

export function parseExact(text) {
  const quoted = text.replace(/(?<=[:\[,]\s*)(-?\d{16,})(?=\s*[,\]}])/g, `"${MARK}$1"`);
  return JSON.parse(quoted, (_k, v) => {
    if (typeof v === 'string' && v.startsWith(MARK)) {
      const big = BigInt(v.slice(MARK.length));
      // A 16-digit literal may still be safe: keep it a number then, so that plain values
      // compare as numbers everywhere.
      return big >= BigInt(Number.MIN_SAFE_INTEGER) && big <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(big) : big;
    }
    return v;
  });
}

export function loadVectors() {
  return parseExact(readFileSync(vectorsPath, 'utf8'));
}
