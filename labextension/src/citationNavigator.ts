/**
 * Following a cell citation: the cell becomes the notebook's active cell,
 * scrolls into view and takes the focus (its cited lines selected), and the
 * person hears where they are. Also tells the transcript the cells' numbers
 * now, so a citation is named by the number the person sees. The `%aaep`
 * view's citation links come here too (`followViewCitations`), for the
 * notebook they are shown in.
 */
import { JupyterFrontEnd } from '@jupyterlab/application';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { TranslationBundle } from '@jupyterlab/translation';
import { DisposableDelegate, IDisposable } from '@lumino/disposable';
import { ISignal, Signal } from '@lumino/signaling';

import { Announcer } from './announcer';
import { ICitation, VIEW_CITATION_SELECTOR, citationOfLink, citationWords } from './citations';

/** What the transcript needs to name and follow citations. */
export interface ICitationNavigator {
  /** The cell's number now; `null` when it is gone, `undefined` when the notebook is not open. */
  numberOf(cellId: string): number | null | undefined;
  /** Go to the cited cell (of `panel`, else of the chat's notebook) and say so. */
  go(citation: ICitation, panel?: NotebookPanel): void;
  /** The notebook's cells changed (numbers may have). */
  readonly changed: ISignal<ICitationNavigator, void>;
}

export class CitationNavigator implements ICitationNavigator {
  constructor(options: {
    tracker: INotebookTracker;
    shell: JupyterFrontEnd.IShell;
    announcer: Announcer;
    trans: TranslationBundle;
    notebookPath: () => string | null;
  }) {
    this._options = options;
    options.tracker.currentChanged.connect(this._watch, this);
    this._watch();
  }

  get changed(): ISignal<ICitationNavigator, void> {
    return this._changed;
  }

  numberOf(cellId: string): number | null | undefined {
    const panel = this._panel();
    if (!panel) {
      return undefined;
    }
    const index = panel.content.widgets.findIndex(cell => cell.model.id === cellId);
    return index < 0 ? null : index + 1;
  }

  go(citation: ICitation, inPanel?: NotebookPanel): void {
    const { announcer, trans, shell } = this._options;
    const panel = inPanel ?? this._panel();
    if (!panel) {
      announcer.announce(trans.__('Open the notebook first: the cited cell is in it.'));
      return;
    }
    const notebook = panel.content;
    const index = notebook.widgets.findIndex(cell => cell.model.id === citation.cellId);
    if (index < 0) {
      announcer.announce(trans.__('That cell no longer exists.'));
      return;
    }
    shell.activateById(panel.id);
    notebook.deselectAll();
    notebook.activeCellIndex = index;
    const cell = notebook.widgets[index];
    void notebook.scrollToCell(cell, 'center');
    const words = citationWords(trans, citation, index + 1);
    const editor = cell.editor;
    if (citation.firstLine !== undefined && editor && cell.model.type !== 'markdown') {
      const last = editor.lineCount - 1;
      const from = Math.min(Math.max(citation.firstLine - 1, 0), last);
      const to = Math.min(Math.max((citation.lastLine ?? citation.firstLine) - 1, from), last);
      notebook.mode = 'edit';
      editor.setSelection({
        start: { line: from, column: 0 },
        end: { line: to, column: editor.getLine(to)?.length ?? 0 }
      });
      editor.focus();
    } else {
      notebook.mode = 'command';
      cell.node.focus();
    }
    const said = words.charAt(0).toUpperCase() + words.slice(1);
    announcer.announce(trans.__('%1 is now the active cell.', said));
  }

  private _panel(): NotebookPanel | null {
    const path = this._options.notebookPath();
    if (!path) {
      return null;
    }
    return this._options.tracker.find(panel => panel.context.path === path) ?? null;
  }

  /** Follow the cells of the notebooks the tracker knows; any change may renumber them. */
  private _watch(): void {
    this._options.tracker.forEach(panel => {
      const cells = panel.model?.cells;
      if (cells && !this._watched.has(cells)) {
        this._watched.add(cells);
        cells.changed.connect(() => this._changed.emit(undefined), this);
      }
    });
    this._changed.emit(undefined);
  }

  private _options: {
    tracker: INotebookTracker;
    shell: JupyterFrontEnd.IShell;
    announcer: Announcer;
    trans: TranslationBundle;
    notebookPath: () => string | null;
  };
  private _watched = new WeakSet<object>();
  private _changed = new Signal<ICitationNavigator, void>(this);
}

/**
 * Follow a click on a `%aaep` view's citation link (a real `<a href>`: Tab
 * reaches it, Enter clicks it) to its cell, in the notebook the link is in.
 * One listener on the page; links elsewhere are left alone.
 */
export function followViewCitations(tracker: INotebookTracker, navigator: ICitationNavigator): IDisposable {
  const onClick = (event: MouseEvent) => {
    const link = event.target instanceof Element ? event.target.closest(VIEW_CITATION_SELECTOR) : null;
    const panel = link ? tracker.find(p => p.node.contains(link)) : undefined;
    const citation = link instanceof HTMLElement ? citationOfLink(link.dataset) : null;
    if (!panel || !citation) {
      return;
    }
    event.preventDefault(); // the address stays as it is
    navigator.go(citation, panel);
  };
  document.addEventListener('click', onClick);
  return new DisposableDelegate(() => document.removeEventListener('click', onClick));
}
