// `jlpm watch`: rebuild what the browser loads whenever a source changes. Runs the TypeScript
// compiler in watch mode (src → lib) and jupyter-builder's watch (lib and style → the bundle in
// ../jupyter_aaep/labextension) side by side; a reload of the browser tab then gets the new
// panel. Ctrl+C stops both. Run `jlpm build` once before (it also copies install.json).
import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

// The bundle is about to become a development one: a wheel built later must rebuild it.
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
rmSync(join(root, 'jupyter_aaep', 'labextension', 'PRODUCTION_BUNDLE.txt'), { force: true });

const children = [
  spawn('tsc', ['-w', '--sourceMap', '--preserveWatchOutput'], { stdio: 'inherit', shell: true }),
  spawn('jupyter-builder', ['watch', '.'], { stdio: 'inherit', shell: true })
];
let stopping = false;
const stop = code => {
  if (stopping) {
    return;
  }
  stopping = true;
  for (const child of children) {
    child.kill('SIGTERM');
  }
  process.exitCode = code;
};
for (const child of children) {
  child.on('exit', code => stop(code ?? 1));
}
process.on('SIGINT', () => stop(0));
process.on('SIGTERM', () => stop(0));
