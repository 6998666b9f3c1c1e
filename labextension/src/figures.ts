/**
 * "Describe this figure": the agent describes the active cell's plot for a
 * screen-reader user (what is plotted, axes, trend, extremes, outliers, from
 * the image and the code that drew it); the answer is shown in the
 * transcript and spoken as it streams; the user may then store it as the
 * figure's alt text in the notebook (`metadata[mime].alt`, which nbconvert's
 * HTML export writes into `<img alt>`; the open notebook's image gets the
 * `alt` attribute at once).
 */
import { TranslationBundle } from '@jupyterlab/translation';
import { ISignal, Signal } from '@lumino/signaling';

import { IAAEPEvent, coreName, str } from './aaep';
import { Announcer } from './announcer';
import { ChatController } from './controller';
import { AAEPRequestError } from './chatClient';
import { ChatModel, IProcessedEvent } from './model';

/** Output mime types that are figures (as the server counts them). */
export const FIGURE_TYPES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp', 'image/svg+xml'];

/** The figure a command acts on: a cell of a notebook, and one of its outputs. */
export interface IFigureTarget {
  notebookPath: string;
  cellId: string;
  /** 1-based position of the cell, as people count cells. */
  cellNumber: number;
  /** Index of the figure among the cell's outputs. */
  outputIndex: number;
  /** Alt text the figure has already, if any. */
  existingAlt: string | null;
}

/** Minimal view of a JupyterLab output model. */
interface IOutputLike {
  data: Record<string, unknown>;
  metadata: Record<string, unknown>;
}

/** The first figure output at or after `preferred` (or the first of all), with its alt text. */
export function findFigure(
  outputs: ReadonlyArray<IOutputLike>,
  preferred: number | null = null
): { index: number; alt: string | null } | null {
  const figures: number[] = [];
  outputs.forEach((output, index) => {
    if (FIGURE_TYPES.some(mime => mime in (output.data ?? {}))) {
      figures.push(index);
    }
  });
  if (figures.length === 0) {
    return null;
  }
  const index = preferred !== null && figures.includes(preferred) ? preferred : figures[0];
  return { index, alt: altOf(outputs[index]) };
}

/** The stored alt text of a figure output (`metadata[mime].alt`), if any. */
export function altOf(output: IOutputLike): string | null {
  for (const mime of FIGURE_TYPES) {
    const meta = output.metadata?.[mime];
    if (mime in (output.data ?? {}) && meta && typeof meta === 'object') {
      const alt = (meta as Record<string, unknown>).alt;
      if (typeof alt === 'string' && alt.trim()) {
        return alt;
      }
    }
  }
  return null;
}

/** Where a description is. */
export type DescriptionStatus = 'asking' | 'ready' | 'saving' | 'saved' | 'failed';

/** The description being made or shown. */
export interface IFigureDescription {
  target: IFigureTarget;
  status: DescriptionStatus;
  /** The agent's description (editable before saving). */
  text: string;
  /** What the last step said (the save's confirmation, or why it failed). */
  message: string;
  sessionId: string | null;
  /** The request text, to recognise the session before the POST answers. */
  request: string;
}

/**
 * Asks the agent for descriptions and stores them as alt text. One
 * description at a time, for the chat shown in the panel.
 */
export class FigureDescriber {
  constructor(options: FigureDescriber.IOptions) {
    this._controller = options.controller;
    this._announcer = options.announcer;
    this._trans = options.trans;
    this._controller.modelChanged.connect(this._watch, this);
    this._watch(this._controller, this._controller.model);
  }

  /** Emitted whenever {@link current} changes. */
  get changed(): ISignal<this, void> {
    return this._changed;
  }

  /** The description shown in the panel, or null. */
  /** Whether the active cell shows a figure (the panel offers "Describe this figure" only then). */
  get figureAvailable(): boolean {
    return this._figureAvailable;
  }

  set figureAvailable(value: boolean) {
    if (value !== this._figureAvailable) {
      this._figureAvailable = value;
      this._changed.emit();
    }
  }

  get current(): IFigureDescription | null {
    return this._current;
  }

  /**
   * Ask the agent to describe `target`. Says why when it cannot (no chat,
   * the agent is busy); the answer arrives in the transcript.
   */
  async describe(target: IFigureTarget): Promise<boolean> {
    const trans = this._trans;
    const model = this._controller.model;
    if (!model || this._controller.notebookPath !== target.notebookPath) {
      this._announcer.announce(
        trans.__("The agent panel is still opening this notebook's chat; try again in a moment.")
      );
      return false;
    }
    if (model.isRunning) {
      this._announcer.announce(
        trans.__('The agent is working on another request. Describe the figure when it has finished, or stop it.')
      );
      return false;
    }
    const request = trans.__('Describe the figure in cell %1.', target.cellNumber);
    this._set({ target, status: 'asking', text: '', message: '', sessionId: null, request });
    try {
      const answer = await this._controller.request({
        kind: 'user_input',
        text: request,
        describe_figure: { cell_id: target.cellId, output_index: target.outputIndex }
      });
      const current = this._current;
      if (current && current.request === request && !current.sessionId && answer?.session_id) {
        this._set({ ...current, sessionId: answer.session_id });
      }
      return true;
    } catch (error) {
      const text = error instanceof AAEPRequestError ? error.message : String(error);
      this._set({ target, status: 'failed', text: '', message: text, sessionId: null, request });
      this._announcer.announce(trans.__('Could not ask for a description: %1', text), 'assertive');
      return false;
    }
  }

  /** Change the text before saving it. */
  edit(text: string): void {
    if (this._current && (this._current.status === 'ready' || this._current.status === 'saved')) {
      this._set({ ...this._current, text, status: 'ready', message: '' });
    }
  }

  /** Store the (possibly edited) description as the figure's alt text. */
  async save(): Promise<void> {
    const current = this._current;
    const model = this._controller.model;
    const trans = this._trans;
    if (!current || !model || current.status !== 'ready') {
      return;
    }
    const text = current.text.trim();
    if (!text) {
      this._announcer.announce(trans.__('The alt text is empty; write a description first.'), 'assertive');
      return;
    }
    this._set({ ...current, status: 'saving', message: '' });
    try {
      const answer = await this._controller.request({
        kind: 'figure_alt_text',
        cell_id: current.target.cellId,
        output_index: current.target.outputIndex,
        alt_text: text
      });
      const said =
        answer?.message ?? trans.__('Saved as the alt text of the figure in cell %1.', current.target.cellNumber);
      this._set({
        ...current,
        status: 'saved',
        message: said,
        target: { ...current.target, existingAlt: text }
      });
      this._announcer.announce(said);
      this._savedAlt.emit({ ...current.target, existingAlt: text });
    } catch (error) {
      const why = error instanceof AAEPRequestError ? error.message : String(error);
      const said = trans.__('The alt text was not saved: %1', why);
      this._set({ ...current, status: 'ready', message: said });
      this._announcer.announce(said, 'assertive');
    }
  }

  /** Emitted after an alt text was stored (the notebook view sets `img.alt`). */
  get savedAlt(): ISignal<this, IFigureTarget> {
    return this._savedAlt;
  }

  /** Close the description card. */
  dismiss(): void {
    this._set(null);
  }

  dispose(): void {
    Signal.clearData(this);
  }

  private _watch(_: ChatController, model: ChatModel | null): void {
    if (this._model) {
      this._model.eventProcessed.disconnect(this._onEvent, this);
    }
    this._model = model;
    if (this._current && (!model || this._controller.notebookPath !== this._current.target.notebookPath)) {
      this._set(null); // another notebook's chat: its description does not apply here
    }
    model?.eventProcessed.connect(this._onEvent, this);
  }

  private _onEvent(model: ChatModel, { event }: IProcessedEvent): void {
    const current = this._current;
    if (!current || current.status !== 'asking') {
      return;
    }
    const name = coreName(event.type);
    if (!current.sessionId && name === 'session.started' && str(event, 'request_text') === current.request) {
      this._set({ ...current, sessionId: event.session_id });
      return;
    }
    if (event.session_id !== current.sessionId) {
      return;
    }
    if (name === 'session.completed') {
      const text = this._answerOf(model, event);
      if (!text) {
        this._set({ ...current, status: 'failed', message: this._trans.__('The agent gave no description.') });
        return;
      }
      this._set({ ...current, status: 'ready', text, message: '' });
      // The description itself was just heard as it streamed: say what can be done with it.
      this._announcer.announce(
        this._trans.__(
          'You can store this description as the alt text of the figure in cell %1: Save as alt text, below the transcript.',
          current.target.cellNumber
        )
      );
    } else if (name === 'session.errored' || name === 'session.cancelled') {
      this._set({
        ...current,
        status: 'failed',
        message: str(event, 'summary_normal') ?? this._trans.__('The description was not finished.')
      });
    }
  }

  private _answerOf(model: ChatModel, event: IAAEPEvent): string {
    const parts = model.items
      .filter(item => item.kind === 'answer' && item.sessionId === event.session_id)
      .map(item => (item.kind === 'answer' ? item.text : ''));
    const streamed = parts.join('\n\n').trim();
    return streamed || (str(event, 'output_summary') ?? '').trim();
  }

  private _set(next: IFigureDescription | null): void {
    this._current = next;
    this._changed.emit();
  }

  private _controller: ChatController;
  private _announcer: Announcer;
  private _trans: TranslationBundle;
  private _model: ChatModel | null = null;
  private _figureAvailable = false;
  private _current: IFigureDescription | null = null;
  private _changed = new Signal<this, void>(this);
  private _savedAlt = new Signal<this, IFigureTarget>(this);
}

/** Options of {@link FigureDescriber}. */
export namespace FigureDescriber {
  export interface IOptions {
    controller: ChatController;
    announcer: Announcer;
    trans: TranslationBundle;
  }
}
