/**
 * Where the current value of an explorable figure is drawn, so a sighted
 * colleague beside a keyboard reader can follow (`explorableFigure.ts` draws
 * the outline). Kept apart from the DOM so the maths is tested on its own.
 *
 * The kernel sends each value's box as fractions of the image (`marks`,
 * `kernel/figure_marks.py`). Here they become invisible marks in an SVG laid
 * over the image (a square `0 0 1000 1000` space stretched to the image, so
 * they fit a HiDPI or scaled image alike), and maidr's data names them as its
 * `selectors`. maidr then marks the value it is on beside them, the same way
 * it does in its own SVG charts; that mark is read back as a box and drawn
 * as our outline. So the outline follows every key maidr has, not a copy of
 * its navigation.
 */

/** The side of the overlay's square coordinate space. */
export const SPACE = 1000;

/** A value's place: left, top, right, bottom as fractions of the image (0 to 1 from the top-left). */
export type Box = [number, number, number, number];

/** `{layer id: boxes}`: a bar layer's boxes in data order; a line layer's, one row per line. */
export type Marks = Record<string, Box[] | Box[][]>;

/** One layer's invisible marks: rectangles (bars) or polylines (one per line, a vertex per value). */
export interface ILayerMarks {
  key: string;
  rects: { x: number; y: number; width: number; height: number }[];
  lines: string[];
}

/** Where the outline goes, in fractions of the image; a point has no size. */
export interface IOutline {
  left: number;
  top: number;
  width: number;
  height: number;
  point: boolean;
}

const isBox = (value: unknown): value is Box =>
  Array.isArray(value) && value.length === 4 && value.every(n => typeof n === 'number' && Number.isFinite(n));

const scaled = (n: number): number => Math.round(Math.min(1, Math.max(0, n)) * SPACE * 100) / 100;

/**
 * maidr's data with its bar and line layers pointed at the overlay's marks
 * (a copy; the notebook's is not changed), and the marks to draw. Layers the
 * kernel sent no boxes for, or boxes that do not match their values, keep
 * their data and get no marks (they are explored, without an outline).
 */
export function withMarks(
  schema: Record<string, unknown>,
  marks: unknown,
  overlay: string
): { schema: Record<string, unknown>; layers: ILayerMarks[] } {
  const layers: ILayerMarks[] = [];
  const known = (marks && typeof marks === 'object' ? marks : {}) as Record<string, unknown>;
  const rows = Array.isArray(schema.subplots) ? (schema.subplots as unknown[]) : [];
  const subplots = rows.map(row =>
    (Array.isArray(row) ? row : []).map(panel => {
      const copy = { ...(panel as Record<string, unknown>) };
      const panelLayers = Array.isArray(copy.layers) ? (copy.layers as Record<string, unknown>[]) : [];
      copy.layers = panelLayers.map(layer => {
        const boxes = known[String(layer?.id)];
        const found = layerMarks(layer, boxes, `${layers.length}`);
        if (!found) {
          return layer;
        }
        layers.push(found);
        const group = `svg[data-aaep-marks="${overlay}"] g[data-aaep-layer="${found.key}"]`;
        return {
          ...layer,
          selectors: found.rects.length ? `${group} > rect` : [`${group} > polyline`]
        };
      });
      return copy;
    })
  );
  return { schema: { ...schema, subplots }, layers };
}

/** One layer's marks when its boxes match its values one to one, else null. */
export function layerMarks(layer: Record<string, unknown>, boxes: unknown, key: string): ILayerMarks | null {
  const data = layer?.data;
  if (!Array.isArray(data) || !Array.isArray(boxes) || boxes.length !== data.length || !data.length) {
    return null;
  }
  if (layer.type === 'bar' && boxes.every(isBox)) {
    const rects = (boxes as Box[]).map(([left, top, right, bottom]) => ({
      x: scaled(left),
      y: scaled(top),
      width: scaled(right) - scaled(left),
      height: scaled(bottom) - scaled(top)
    }));
    return { key, rects, lines: [] };
  }
  if (layer.type === 'line') {
    const lines: string[] = [];
    for (const [i, row] of boxes.entries()) {
      const values = data[i];
      if (!Array.isArray(row) || !Array.isArray(values) || row.length !== values.length || !row.every(isBox)) {
        return null;
      }
      lines.push((row as Box[]).map(([left, top]) => `${scaled(left)},${scaled(top)}`).join(' '));
    }
    return { key, rects: [], lines };
  }
  return null;
}

/**
 * The outline for maidr's mark of the current value (an SVG rectangle for a
 * bar, a circle for a point, in the overlay's space), or null when it has none.
 */
export function outlineOf(tag: string, attribute: (name: string) => string | null): IOutline | null {
  const read = (name: string): number => Number.parseFloat(attribute(name) ?? '');
  const fraction = (n: number): number => Math.min(1, Math.max(0, n / SPACE));
  if (tag.toLowerCase() === 'circle') {
    const [cx, cy] = [read('cx'), read('cy')];
    return Number.isFinite(cx) && Number.isFinite(cy)
      ? { left: fraction(cx), top: fraction(cy), width: 0, height: 0, point: true }
      : null;
  }
  if (tag.toLowerCase() === 'rect') {
    const [x, y, width, height] = [read('x'), read('y'), read('width'), read('height')];
    if (![x, y, width, height].every(Number.isFinite)) {
      return null;
    }
    const left = fraction(x);
    const top = fraction(y);
    const size = (n: number, start: number): number => Math.max(0, Math.min(n / SPACE, 1 - start));
    return { left, top, width: size(width, left), height: size(height, top), point: false };
  }
  return null;
}

/** The outline's place as CSS percentages of the image. */
export function outlineStyle(outline: IOutline): Record<'left' | 'top' | 'width' | 'height', string> {
  const percent = (n: number): string => `${Math.round(n * 100000) / 1000}%`;
  return {
    left: percent(outline.left),
    top: percent(outline.top),
    width: percent(outline.width),
    height: percent(outline.height)
  };
}
