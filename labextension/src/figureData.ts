/**
 * The words and data of an explorable figure (`explorableFigure.ts`), kept
 * apart from the DOM so they are tested on their own.
 */
import type { TranslationBundle } from '@jupyterlab/translation';

/** The MIME type of a figure's data (`jupyter_aaep/figure_mime.py`). */
export const MAIDR_MIME = 'application/vnd.jupyter-aaep.maidr+json';

/** What the kernel sends beside a figure's image. */
export interface IFigureData {
  version?: number;
  explorable?: boolean;
  reason?: string;
  maidr?: Record<string, unknown>;
  /** Where each value is drawn, as fractions of the image (`figureMarks.ts`). */
  marks?: unknown;
}

/** Why a figure is not explorable, in the reader's words. */
export function notExplorableText(reason: string | undefined, trans: TranslationBundle): string {
  switch (reason) {
    case 'unsupported':
      return trans.__(
        'This kind of chart cannot be explored by keyboard yet; the image and its description are all there is.'
      );
    case 'too_large':
      return trans.__(
        'This chart has too much data to explore by keyboard; the image and its description are all there is.'
      );
    case 'script':
      return trans.__(
        'This chart cannot be explored by keyboard: the server could not send the script that does it (is maidr installed?).'
      );
    default:
      return trans.__('This chart cannot be explored by keyboard: its data could not be read.');
  }
}

/** The chart's title from maidr's data (the first layer that has one), or ''. */
export function chartTitle(schema: Record<string, unknown> | undefined): string {
  const rows = (schema?.subplots as unknown[][] | undefined) ?? [];
  for (const row of rows) {
    for (const panel of Array.isArray(row) ? row : []) {
      for (const layer of ((panel as Record<string, unknown>)?.layers as Record<string, unknown>[]) ?? []) {
        if (typeof layer?.title === 'string' && layer.title.trim()) {
          return layer.title.trim();
        }
      }
    }
  }
  return '';
}

let counter = 0;

/**
 * maidr's data with ids of this page's own: maidr names its elements after
 * them, and the same notebook open twice (or a figure shown twice) must not
 * repeat an id in the page.
 */
export function withPageIds(schema: Record<string, unknown>): Record<string, unknown> {
  const suffix = `aaep${++counter}`;
  const walk = (value: unknown): unknown => {
    if (Array.isArray(value)) {
      return value.map(walk);
    }
    if (value && typeof value === 'object') {
      const copy: Record<string, unknown> = {};
      for (const [key, item] of Object.entries(value as Record<string, unknown>)) {
        copy[key] = key === 'id' && typeof item === 'string' ? `${item}-${suffix}` : key === 'data' ? item : walk(item);
      }
      return copy;
    }
    return value;
  };
  return walk(schema) as Record<string, unknown>;
}

/** The image's alt: the stored description, else the chart's title and that it has none yet. */
export function altText(
  stored: unknown,
  schema: Record<string, unknown> | undefined,
  trans: TranslationBundle
): string {
  if (typeof stored === 'string' && stored.trim()) {
    return stored.trim();
  }
  const title = chartTitle(schema);
  return title ? trans.__('Chart: %1 (no description yet)', title) : trans.__('Chart (no description yet)');
}

/**
 * maidr's instructions as they hold while the chart has the focus: without its prompt for a
 * pointer ("Click to activate.", which maidr drops itself once the chart is focused).
 */
export function steadyInstructions(text: string): string {
  return text
    .replace(/\bClick to activate\.\s*/, '')
    .replace(/\s+/g, ' ')
    .trim();
}
