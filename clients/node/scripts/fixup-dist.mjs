// The package is "type": "module", so Node reads dist/cjs/*.js as ESM unless the folder says
// otherwise: a nested package.json marks the CommonJS build as CommonJS (and the ESM build as
// ESM, for tools that look at the nearest package.json only).
import { writeFileSync } from 'node:fs';
writeFileSync(new URL('../dist/cjs/package.json', import.meta.url), JSON.stringify({ type: 'commonjs' }) + '\n');
writeFileSync(new URL('../dist/esm/package.json', import.meta.url), JSON.stringify({ type: 'module' }) + '\n');
