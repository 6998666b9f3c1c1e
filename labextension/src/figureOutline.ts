/**
 * The visible outline of the value a keyboard reader is on in an explorable
 * figure (the maths is in `figureMarks.ts`). An SVG of invisible marks lies
 * over the image; maidr marks the current one beside it (an element whose id
 * starts `maidr-highlight-`); its box is drawn here as a thick two-tone
 * outline with a hatched fill, so it shows on any chart colour, without
 * relying on colour, and in forced colours (style/figures.css). It is hidden
 * from assistive technology (the reader hears the value from maidr) and
 * never takes or moves the focus.
 */
import { ILayerMarks, SPACE, outlineOf, outlineStyle } from './figureMarks';

const SVG = 'http://www.w3.org/2000/svg';

export class FigureOutline {
  /** Lay the marks of *layers* over the image in *host* (which maidr is bound to). */
  constructor(host: HTMLElement, layers: ILayerMarks[], key: string) {
    const svg = document.createElementNS(SVG, 'svg');
    svg.setAttribute('class', 'jp-AAEPExplorable-marks');
    svg.setAttribute('data-aaep-marks', key);
    svg.setAttribute('viewBox', `0 0 ${SPACE} ${SPACE}`);
    svg.setAttribute('preserveAspectRatio', 'none');
    svg.setAttribute('aria-hidden', 'true');
    svg.setAttribute('focusable', 'false');
    for (const layer of layers) {
      const group = document.createElementNS(SVG, 'g');
      group.setAttribute('data-aaep-layer', layer.key);
      for (const rect of layer.rects) {
        const mark = document.createElementNS(SVG, 'rect');
        for (const [name, value] of Object.entries(rect)) {
          mark.setAttribute(name, String(value));
        }
        group.appendChild(mark);
      }
      for (const points of layer.lines) {
        const mark = document.createElementNS(SVG, 'polyline');
        mark.setAttribute('points', points);
        group.appendChild(mark);
      }
      svg.appendChild(group);
    }
    const outline = document.createElement('div');
    outline.className = 'jp-AAEPExplorable-current';
    outline.setAttribute('aria-hidden', 'true');
    outline.hidden = true;
    host.append(svg, outline);
    this._svg = svg;
    this._outline = outline;
    this._watch = new MutationObserver(() => this.update());
    this._watch.observe(svg, { subtree: true, childList: true, attributes: true, attributeFilter: ['visibility'] });
  }

  /** Draw the outline where maidr's mark of the current value is (or hide it when there is none). */
  update(): void {
    const mark = Array.from(this._svg.querySelectorAll('[id^="maidr-highlight-"]')).find(
      el => el.getAttribute('visibility') !== 'hidden'
    );
    const outline = mark ? outlineOf(mark.tagName, name => mark.getAttribute(name)) : null;
    this._outline.hidden = !outline;
    if (outline) {
      Object.assign(this._outline.style, outlineStyle(outline));
      this._outline.classList.toggle('jp-mod-point', outline.point);
    }
  }

  dispose(): void {
    this._watch.disconnect();
    this._svg.remove();
    this._outline.remove();
  }

  private _svg: SVGSVGElement;
  private _outline: HTMLDivElement;
  private _watch: MutationObserver;
}
