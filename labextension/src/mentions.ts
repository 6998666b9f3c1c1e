/**
 * What `@` in the message box offers: the active cell, the selected cells,
 * the notebook kernel's variables (`GET aaep/v1/chats/{id}/variables`, read
 * by the server without running any cell) and the files beside the notebook.
 * A choice travels with the request as `context` on `user_input`; the model
 * receives it in a delimited block.
 */
import type { Cell } from '@jupyterlab/cells';
import { INotebookTracker } from '@jupyterlab/notebook';
import { Contents } from '@jupyterlab/services';
import { TranslationBundle } from '@jupyterlab/translation';

import { JSONRecord } from './aaep';
import { Announcer } from './announcer';
import { ChatController } from './controller';
import { listVariables } from './chatClient';

/** One thing `@` can attach. */
export interface IMention {
  /** Unique within one list. */
  key: string;
  /** What the list shows and the screen reader says ("Active cell: cell 3"). */
  label: string;
  /** A short second line (the start of the cell, a variable's type and summary). */
  detail: string;
  /** The words that replace `@query` in the message ("cell 3"). */
  inline: string;
  /** The `context` items sent with the request. */
  items: JSONRecord[];
}

/** What the composer needs to offer `@` choices (absent: no `@` picker). */
export interface IMentionSource {
  candidates(query: string): Promise<IMention[]>;
  /** Why some kinds are missing (e.g. no kernel), said when the list opens. */
  note(): string | null;
  /** Say something politely (the list opened, an item was attached). */
  announce(text: string): void;
}

const MAX_FILES = 40;
/** Choices listed at once (typing after `@` narrows them). */
const MAX_LISTED = 12;

/** A short single-line preview of a cell's source. */
function preview(cell: Cell): string {
  const text = cell.model.sharedModel.getSource().replace(/\s+/g, ' ').trim();
  return text.length > 60 ? `${text.slice(0, 59)}…` : text;
}

/** `@` choices for the chat of the active notebook. */
export class NotebookMentions implements IMentionSource {
  constructor(options: NotebookMentions.IOptions) {
    this._tracker = options.tracker;
    this._contents = options.contents;
    this._controller = options.controller;
    this._trans = options.trans;
    this._announcer = options.announcer;
  }

  announce(text: string): void {
    this._announcer.announce(text);
  }

  note(): string | null {
    return this._note;
  }

  async candidates(query: string): Promise<IMention[]> {
    const trans = this._trans;
    const all: IMention[] = [];
    const panel = this._tracker.currentWidget;
    const path = this._controller.notebookPath;
    this._note = null;
    if (panel && panel.context.path === path) {
      const notebook = panel.content;
      const active = notebook.activeCell;
      const cells = notebook.widgets;
      if (active) {
        const number = notebook.activeCellIndex + 1;
        all.push({
          key: `cell:${active.model.id}`,
          label: trans.__('Active cell: cell %1', number),
          detail: preview(active) || trans.__('(empty)'),
          inline: trans.__('cell %1', number),
          items: [{ type: 'cell', cell_id: active.model.id }]
        });
      }
      const selected = cells
        .map((cell, index) => ({ cell, number: index + 1 }))
        .filter(({ cell }) => notebook.isSelectedOrActive(cell));
      if (selected.length > 1) {
        const numbers = selected.map(s => s.number).join(', ');
        all.push({
          key: 'selected',
          label: trans.__('Selected cells: %1', numbers),
          detail: trans._n('%1 cell', '%1 cells', selected.length),
          inline: trans.__('cells %1', numbers),
          items: selected.slice(0, 10).map(({ cell }) => ({ type: 'cell', cell_id: cell.model.id }))
        });
      }
    }
    const [variables, files] = await Promise.all([this._variables(), this._files(path)]);
    all.push(...variables, ...files);
    const wanted = query.trim().toLowerCase();
    const found = wanted
      ? all.filter(m => m.label.toLowerCase().includes(wanted) || m.inline.toLowerCase().includes(wanted))
      : all;
    return found.slice(0, MAX_LISTED);
  }

  private async _variables(): Promise<IMention[]> {
    const model = this._controller.model;
    if (!model) {
      return [];
    }
    try {
      const answer = await listVariables(model.chatId);
      if (answer.note) {
        this._note = answer.note;
      }
      return (answer.variables ?? []).map(v => ({
        key: `var:${v.name}`,
        label: this._trans.__('Variable: %1', v.name),
        detail: [v.type, v.summary].filter(Boolean).join(' · '),
        inline: v.name,
        items: [{ type: 'variable', name: v.name }]
      }));
    } catch {
      this._note = this._trans.__('The kernel variables could not be listed.');
      return [];
    }
  }

  private async _files(notebookPath: string | null): Promise<IMention[]> {
    if (!notebookPath) {
      return [];
    }
    const dir = notebookPath.includes('/') ? notebookPath.slice(0, notebookPath.lastIndexOf('/')) : '';
    try {
      const listing = await this._contents.get(dir, { content: true });
      const entries = (listing.content as Contents.IModel[]) ?? [];
      return (
        entries
          .filter(e => e.type !== 'directory' && e.path !== notebookPath && !e.name.startsWith('.'))
          // Data files first: they are attached more often than other notebooks.
          .sort((a, b) => Number(a.type === 'notebook') - Number(b.type === 'notebook') || a.name.localeCompare(b.name))
          .slice(0, MAX_FILES)
          .map(e => ({
            key: `file:${e.path}`,
            label: this._trans.__('File: %1', e.name),
            detail: e.path,
            inline: e.name,
            items: [{ type: 'file', path: e.path }]
          }))
      );
    } catch {
      return [];
    }
  }

  private _tracker: INotebookTracker;
  private _contents: Contents.IManager;
  private _controller: ChatController;
  private _trans: TranslationBundle;
  private _note: string | null = null;
  private _announcer: Announcer;
}

export namespace NotebookMentions {
  export interface IOptions {
    tracker: INotebookTracker;
    contents: Contents.IManager;
    controller: ChatController;
    trans: TranslationBundle;
    announcer: Announcer;
  }
}
