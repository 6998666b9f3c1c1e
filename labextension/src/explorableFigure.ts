/**
 * Explorable figures: a notebook output that carries maidr's data for a
 * figure (sent by the kernel beside its image, `kernel/figures.py`) is shown
 * as the image, with its stored description as `alt`, and made explorable by
 * keyboard with maidr's script: Tab reaches the chart, arrows move value by
 * value, and maidr's own keys switch text, braille and sound.
 *
 * The script comes from this Jupyter server (`/aaep/v1/figures/maidr.js`,
 * the copy in the maidr wheel), never from a CDN, and is loaded by this
 * extension, not by the output: JupyterLab does not run scripts of untrusted
 * outputs, so a notebook reopened later stays explorable. The renderer is
 * "safe" (it runs nothing from the notebook) and so is used in untrusted
 * notebooks too. Nothing here moves the focus.
 *
 * maidr is bound to a box holding the image and, when the kernel said where
 * each value is drawn, the outline of the current value (`figureOutline.ts`);
 * that box sits in the figure's frame, an `application` named by the image's
 * description (see `_keepChartSemantics` for why).
 */
import { URLExt } from '@jupyterlab/coreutils';
import { IRenderMime } from '@jupyterlab/rendermime';
import { ServerConnection } from '@jupyterlab/services';
import { TranslationBundle } from '@jupyterlab/translation';
import { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';

import { IFigureData, MAIDR_MIME, altText, notExplorableText, steadyInstructions, withPageIds } from './figureData';
import { withMarks } from './figureMarks';
import { FigureOutline } from './figureOutline';
import { serverSettings } from './handler';

export { MAIDR_MIME };

/** Preferred over the image renderers (SVG 80, PNG 90), so the figure is drawn here. */
export const EXPLORABLE_RANK = 75;

/** The image types the figure may come as, in the order they are used. */
const IMAGE_TYPES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp', 'image/svg+xml'];

let scriptLoad: Promise<boolean> | null = null;
let figures = 0;

/** Load maidr's script from the server once per page; false when it cannot be had. */
export function loadMaidr(): Promise<boolean> {
  if (!scriptLoad) {
    scriptLoad = (async () => {
      const settings = serverSettings();
      const url = URLExt.join(settings.baseUrl, 'aaep/v1/figures/maidr.js');
      // Fetched with the page's credentials (token or cookie), then run from a local copy.
      const response = await ServerConnection.makeRequest(url, { method: 'GET' }, settings);
      if (!response.ok) {
        console.warn('jupyter-aaep: maidr.js could not be loaded', response.status);
        return false;
      }
      const source = await response.text();
      const local = URL.createObjectURL(new Blob([source], { type: 'text/javascript' }));
      await new Promise<void>((resolve, reject) => {
        const script = document.createElement('script');
        script.src = local;
        script.dataset.aaep = 'maidr';
        script.onload = () => resolve();
        script.onerror = () => reject(new Error('maidr.js failed to run'));
        document.head.appendChild(script);
      });
      const page = window as unknown as { disconnectMaidrObservers?: () => void; maidrLive?: unknown };
      // maidr watches the whole page for charts by itself; here each figure is bound when it
      // is shown, so that watching (a callback on every change of JupyterLab's page) is stopped.
      page.disconnectMaidrObservers?.();
      return typeof page.maidrLive === 'object';
    })().catch(error => {
      console.warn('jupyter-aaep: maidr.js could not be loaded', error);
      scriptLoad = null; // a later figure tries again
      return false;
    });
  }
  return scriptLoad;
}

/** A figure output: its image (with its description as alt) and, when it has data, maidr. */
export class ExplorableFigure extends Widget implements IRenderMime.IRenderer {
  constructor(trans: TranslationBundle) {
    super();
    this._trans = trans;
    this.addClass('jp-RenderedImage');
    this.addClass('jp-AAEPExplorable');
    // While the chart has the focus its keys are maidr's (arrows, B, T, S, …), not
    // JupyterLab's notebook shortcuts; Tab and Shift+Tab still leave it.
    this.node.setAttribute('data-lm-suppress-shortcuts', '');
  }

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    this._unbind();
    this._outline?.dispose();
    this._outline = null;
    this.node.textContent = '';
    this._img = null;
    this._host = null;
    this._frame = null;
    this._helpNode = null;
    this._schema = null;
    const key = `${++figures}`;
    const trans = this._trans;
    const data = (model.data[MAIDR_MIME] ?? {}) as IFigureData;
    const mime = IMAGE_TYPES.find(type => type in model.data);
    const meta = ((mime && model.metadata[mime]) ?? {}) as Record<string, unknown>;
    const alt = altText(meta.alt, data.maidr, trans);

    const frame = document.createElement('div');
    frame.className = 'jp-AAEPExplorable-frame';
    const host = document.createElement('div');
    host.className = 'jp-AAEPExplorable-host';
    frame.appendChild(host);
    this.node.appendChild(frame);
    this._frame = frame;
    this._host = host;
    if (mime) {
      const img = document.createElement('img');
      const value = model.data[mime] as string;
      img.src =
        mime === 'image/svg+xml'
          ? `data:image/svg+xml;charset=utf-8,${encodeURIComponent(value)}`
          : `data:${mime};base64,${String(value).replace(/\s/g, '')}`;
      img.alt = alt;
      img.id = `jp-AAEPExplorable-image-${key}`;
      for (const side of ['width', 'height'] as const) {
        if (typeof meta[side] === 'number') {
          img[side] = meta[side] as number;
        }
      }
      host.appendChild(img);
      this._img = img;
    }
    if (!data.explorable || !data.maidr || !this._img) {
      this._note(notExplorableText(data.explorable ? 'failed' : data.reason, trans));
      return;
    }
    const loaded = await loadMaidr();
    if (this.isDisposed || !this._img) {
      return;
    }
    if (!loaded) {
      this._note(notExplorableText('script', trans));
      return;
    }
    const marked = withMarks(data.maidr, data.marks, key);
    if (marked.layers.length) {
      this._outline = new FigureOutline(host, marked.layers, key);
    }
    this._schema = withPageIds(marked.schema);
    if (this.isAttached) {
      this._bind();
    }
  }

  dispose(): void {
    this._unbind();
    this._outline?.dispose();
    super.dispose();
  }

  protected onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    this._bind();
  }

  protected onBeforeDetach(msg: Message): void {
    this._unbind();
    super.onBeforeDetach(msg);
  }

  /** Hand the image's box and its data to maidr (it must be in the page to be found). */
  private _bind(): void {
    const host = this._host;
    if (!host || !this._img || !this._schema || this._bound || !host.isConnected) {
      return;
    }
    host.setAttribute('maidr-data', JSON.stringify(this._schema));
    // The figure: an application named by its image's description (ARIA names every one).
    this._frame?.setAttribute('role', 'application');
    this._frame?.setAttribute('aria-labelledby', this._img.id);
    this._keepChartSemantics();
    host.dispatchEvent(new CustomEvent('maidr:bindchart', { bubbles: true }));
    this._bound = true;
  }

  /**
   * What a screen reader meets when Tab reaches the chart, kept steady while maidr works:
   *
   * - The chart's focusable element keeps the role `application`. maidr switches it from `img`
   *   to `application` as it takes the focus (and back on blur); the browser then replaces its
   *   accessible object and a screen reader's focus event finds a dead one (Orca said nothing).
   * - It sits inside the figure's frame, itself an `application` (set in `_bind`): the figure is
   *   a region of keyboard interaction with one focusable chart in it. Orca 43 (Debian 12)
   *   takes a focused `application` that is not inside another one for a document of its own:
   *   its focus handler sees "document changed", moves its focus there without presenting it,
   *   and never asks whether to use focus mode, so the arrows stayed its caret moves. Inside
   *   an application the chart is "a web app descendant": Orca presents it and, its role being
   *   one it treats as a focus-mode widget, switches to focus mode as for a form field.
   * - Its description is one text of ours, maidr's instructions without "Click to activate."
   *   maidr swaps the description as the chart takes the focus (to the same instructions
   *   without that phrase); a screen reader that is seconds behind reads the focused chart
   *   with the new text and then the change again (Orca read 14 s of instructions twice).
   *
   * The observer runs before the page is rendered, so the browser never sees maidr's values.
   */
  private _keepChartSemantics(): void {
    this._watch?.disconnect();
    const fix = () => {
      for (const el of Array.from(this.node.querySelectorAll('[tabindex="0"][role="img"]'))) {
        el.setAttribute('role', 'application');
      }
      const chart = this.node.querySelector('[tabindex="0"][role="application"]');
      const help = this._help();
      if (!chart || !help) {
        return;
      }
      const ids = (chart.getAttribute('aria-describedby') ?? '').split(/\s+/);
      const kept = ids.filter(id => id && !id.startsWith('maidr-instruction-') && id !== help.id);
      const wanted = [...kept, help.id].join(' ');
      if (chart.getAttribute('aria-describedby') !== wanted) {
        chart.setAttribute('aria-describedby', wanted);
      }
    };
    this._watch = new MutationObserver(fix);
    this._watch.observe(this.node, {
      subtree: true,
      childList: true,
      characterData: true,
      attributes: true,
      attributeFilter: ['role', 'tabindex', 'aria-describedby']
    });
    fix();
  }

  /** The chart's description (hidden, ours), from maidr's instructions; null before maidr's. */
  private _help(): HTMLElement | null {
    const source = this.node.querySelector('[id^="maidr-instruction-"]:not([id$="-current"])');
    const text = steadyInstructions(source?.textContent ?? '');
    if (!text) {
      return null;
    }
    if (!this._helpNode) {
      this._helpNode = document.createElement('div');
      this._helpNode.id = `jp-AAEPExplorable-help-${++figures}`;
      this._helpNode.hidden = true;
      this.node.appendChild(this._helpNode);
    }
    if (this._helpNode.textContent !== text) {
      this._helpNode.textContent = text;
    }
    return this._helpNode;
  }

  private _unbind(): void {
    this._watch?.disconnect();
    this._watch = null;
    this._frame?.removeAttribute('role');
    this._frame?.removeAttribute('aria-labelledby');
    if (this._bound && this._host) {
      document.dispatchEvent(new CustomEvent('maidr:unbindchart', { detail: this._host }));
      this._host.removeAttribute('maidr-data');
    }
    this._bound = false;
  }

  private _note(text: string): void {
    const note = document.createElement('p');
    note.className = 'jp-AAEPExplorable-note';
    note.textContent = text;
    this.node.appendChild(note);
  }

  private _trans: TranslationBundle;
  private _img: HTMLImageElement | null = null;
  private _host: HTMLDivElement | null = null;
  private _frame: HTMLDivElement | null = null;
  private _helpNode: HTMLElement | null = null;
  private _outline: FigureOutline | null = null;
  private _schema: Record<string, unknown> | null = null;
  private _bound = false;
  private _watch: MutationObserver | null = null;
}

/** The renderer factory JupyterLab's rendermime registry uses for figure data. */
export function explorableFigureFactory(trans: TranslationBundle): IRenderMime.IRendererFactory {
  return {
    safe: true,
    mimeTypes: [MAIDR_MIME],
    defaultRank: EXPLORABLE_RANK,
    createRenderer: () => new ExplorableFigure(trans)
  };
}
