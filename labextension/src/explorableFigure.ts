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
 * each value is drawn, the outline of the current value (`figureOutline.ts`).
 */
import { URLExt } from '@jupyterlab/coreutils';
import { IRenderMime } from '@jupyterlab/rendermime';
import { ServerConnection } from '@jupyterlab/services';
import { TranslationBundle } from '@jupyterlab/translation';
import { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';

import { IFigureData, MAIDR_MIME, altText, notExplorableText, withPageIds } from './figureData';
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
    this._schema = null;
    const trans = this._trans;
    const data = (model.data[MAIDR_MIME] ?? {}) as IFigureData;
    const mime = IMAGE_TYPES.find(type => type in model.data);
    const meta = ((mime && model.metadata[mime]) ?? {}) as Record<string, unknown>;
    const alt = altText(meta.alt, data.maidr, trans);

    const host = document.createElement('div');
    host.className = 'jp-AAEPExplorable-host';
    this.node.appendChild(host);
    this._host = host;
    if (mime) {
      const img = document.createElement('img');
      const value = model.data[mime] as string;
      img.src =
        mime === 'image/svg+xml'
          ? `data:image/svg+xml;charset=utf-8,${encodeURIComponent(value)}`
          : `data:${mime};base64,${String(value).replace(/\s/g, '')}`;
      img.alt = alt;
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
    const key = `${++figures}`;
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
    this._keepApplicationRole();
    host.dispatchEvent(new CustomEvent('maidr:bindchart', { bubbles: true }));
    this._bound = true;
  }

  /**
   * The chart's focusable element keeps the role `application`. maidr switches it from `img`
   * to `application` as it takes the focus (and back on blur); the browser then replaces its
   * accessible object, so a screen reader's focus event finds a dead one: Orca said nothing
   * on Tab, stayed in browse mode and took the arrows as its own caret moves, moving the focus
   * out of the chart. With the role fixed before the focus comes, focusing changes no role.
   * The observer runs before the page is rendered, so the browser never sees `img`.
   */
  private _keepApplicationRole(): void {
    this._roles?.disconnect();
    const fix = () => {
      for (const el of Array.from(this.node.querySelectorAll('[tabindex="0"][role="img"]'))) {
        el.setAttribute('role', 'application');
      }
    };
    this._roles = new MutationObserver(fix);
    this._roles.observe(this.node, {
      subtree: true,
      childList: true,
      attributes: true,
      attributeFilter: ['role', 'tabindex']
    });
    fix();
  }

  private _unbind(): void {
    this._roles?.disconnect();
    this._roles = null;
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
  private _outline: FigureOutline | null = null;
  private _schema: Record<string, unknown> | null = null;
  private _bound = false;
  private _roles: MutationObserver | null = null;
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
