// Lets Node run the panel's compiled modules (lib/*.js, ES modules without
// file extensions in their imports) for the unit tests in this folder.
import { register } from 'node:module';

register(
  'data:text/javascript,' +
    encodeURIComponent(`
export async function resolve(specifier, context, next) {
  if (specifier.startsWith('.') && context.parentURL && context.parentURL.includes('/lib/') && !specifier.endsWith('.js')) {
    return next(specifier + '.js', context);
  }
  return next(specifier, context);
}
export async function load(url, context, next) {
  if (url.includes('/labextension/lib/') && url.endsWith('.js')) {
    return next(url, { ...context, format: 'module' });
  }
  return next(url, context);
}
`),
  import.meta.url
);
