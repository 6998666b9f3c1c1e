// After `jupyter-builder build`: copy install.json next to the bundle, and record which kind of
// bundle this is. The production build writes PRODUCTION_BUNDLE.txt; a development build removes
// it. The Python build hook skips the JavaScript build only when that file exists (an sdist
// carries it) and requires it in every wheel or sdist, so a release never ships a development
// bundle (unminified, with source maps).
import { copyFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const mode = process.argv[2];
if (mode !== 'production' && mode !== 'development') {
  console.error('usage: node scripts/finish-build.mjs production|development');
  process.exit(2);
}
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const out = join(root, 'jupyter_aaep', 'labextension');
copyFileSync(join(root, 'install.json'), join(out, 'install.json'));
const marker = join(out, 'PRODUCTION_BUNDLE.txt');
if (mode === 'production') {
  writeFileSync(marker, 'Built by `jlpm build:prod`: minified, without source maps.\n');
} else {
  rmSync(marker, { force: true });
}
