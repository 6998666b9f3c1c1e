/**
 * "Check this notebook's accessibility": the server checks the open chat's
 * notebook (the rules of the agent's `check_accessibility` tool) and the panel
 * shows the problems as a list by cell number and says them. The words are
 * pure functions, tested without a DOM; {@link AccessibilityChecker} holds the
 * report the panel shows.
 */
import { TranslationBundle } from '@jupyterlab/translation';
import { ISignal, Signal } from '@lumino/signaling';

import { Announcer } from './announcer';
import { AAEPRequestError, IAccessibilityAnswer, getAccessibility } from './chatClient';

/** How many problems are said aloud; the rest are in the panel's list. */
export const SPOKEN_PROBLEMS = 6;

/** Where a check is. */
export type CheckStatus = 'checking' | 'ready' | 'failed';

/** The check shown in the panel. */
export interface IAccessibilityView {
  status: CheckStatus;
  notebookPath: string;
  report: IAccessibilityAnswer | null;
  /** Why the check failed. */
  message: string;
}

/** What is said when a check finishes: the count, then the first problems, then where the rest are. */
export function spokenReport(report: IAccessibilityAnswer, trans: TranslationBundle, limit = SPOKEN_PROBLEMS): string {
  const problems = report.problems;
  if (problems.length === 0) {
    return report.summary;
  }
  const said = problems.slice(0, limit).map(p => p.text);
  const rest = problems.length - said.length;
  const tail =
    rest > 0
      ? trans._n('1 more is listed in the agent panel.', '%1 more are listed in the agent panel.', rest)
      : trans.__('The list is in the agent panel.');
  return [report.summary, ...said, tail].join(' ');
}

/** The label of a problem's "go to the cell" button. */
export function goToLabel(cellNumber: number, trans: TranslationBundle): string {
  return trans.__('Go to cell %1', cellNumber);
}

/** Runs the check for the chat shown in the panel and keeps its report. */
export class AccessibilityChecker {
  constructor(options: AccessibilityChecker.IOptions) {
    this._options = options;
  }

  /** Emitted whenever {@link current} changes. */
  get changed(): ISignal<this, void> {
    return this._changed;
  }

  /** The check shown in the panel, or null. */
  get current(): IAccessibilityView | null {
    return this._current;
  }

  /** Check the notebook of the chat `chatId` (the panel's); says the result. */
  async check(chatId: string | null, notebookPath: string | null): Promise<void> {
    const { announcer, trans } = this._options;
    if (!chatId || !notebookPath) {
      announcer.announce(trans.__("Open a notebook first; the check reads the agent panel's notebook."));
      return;
    }
    this._set({ status: 'checking', notebookPath, report: null, message: '' });
    announcer.announce(trans.__('Checking the accessibility of %1…', notebookPath));
    try {
      const report = await (this._options.fetch ?? getAccessibility)(chatId);
      this._set({ status: 'ready', notebookPath, report, message: '' });
      announcer.announce(spokenReport(report, trans));
    } catch (error) {
      const why = error instanceof AAEPRequestError ? error.message : String(error);
      const message = trans.__('The accessibility check failed: %1', why);
      this._set({ status: 'failed', notebookPath, report: null, message });
      announcer.announce(message, 'assertive');
    }
  }

  /** Close the list. */
  dismiss(): void {
    this._set(null);
  }

  dispose(): void {
    Signal.clearData(this);
  }

  private _set(next: IAccessibilityView | null): void {
    this._current = next;
    this._changed.emit();
  }

  private _options: AccessibilityChecker.IOptions;
  private _current: IAccessibilityView | null = null;
  private _changed = new Signal<this, void>(this);
}

/** Options of {@link AccessibilityChecker}. */
export namespace AccessibilityChecker {
  export interface IOptions {
    announcer: Pick<Announcer, 'announce'>;
    trans: TranslationBundle;
    /** The server call (tests pass their own). */
    fetch?: (chatId: string) => Promise<IAccessibilityAnswer>;
  }
}
