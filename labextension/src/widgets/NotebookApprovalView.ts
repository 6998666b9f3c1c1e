/**
 * The `%aaep` view's Approve and Reject, drawn in the browser: the view of
 * the kernel's `ApprovalWidget` (`jupyter_aaep/kernel/_view_approval.py`).
 *
 * The kernel names the chat and the request, nothing else. This view reads
 * those two once when it renders, fetches the request as the server describes
 * it, and sends the person's answer from the browser with their Jupyter login
 * (`POST aaep/v1/chats/{chat}/messages`, marked `via: notebook`). It never
 * listens to its model after that and sends nothing to the kernel: whatever
 * code in the kernel does to the widget (set traits, send custom messages on
 * its comm) changes nothing here and answers nothing.
 *
 * Loaded lazily by the widget manager, once a notebook shows such a widget.
 */
import { DOMWidgetModel, DOMWidgetView } from '@jupyter-widgets/base';
import type { TranslationBundle } from '@jupyterlab/translation';

import { getRequest, hasStreamKey, postMessage } from '../chatClient';
import { KeyedStream } from '../keyedStream';
import { IRequestAnswer, approvalWords, notebookReply, outcomeWords } from '../notebookApproval';

/** How often an open request is checked for an answer given elsewhere (ms). */
const POLL_OPEN_MS = 2000;
/** How often, once answered, until the producer's sentence about it is out (ms). */
const POLL_ANSWERED_MS = 400;

let counter = 0;

/** The model and view classes the widget manager asks for, built with the panel's translations. */
export function notebookApprovalExports(trans: TranslationBundle): {
  AAEPApprovalModel: typeof DOMWidgetModel;
  AAEPApprovalView: typeof DOMWidgetView;
} {
  class AAEPApprovalModel extends DOMWidgetModel {}

  class AAEPApprovalView extends DOMWidgetView {
    render(): void {
      // Read once: a later change from the kernel must not swap the request under the person.
      this._chatId = String(this.model.get('chat_id') ?? '');
      this._requestId = String(this.model.get('request_id') ?? '');
      const id = `jp-AAEPApproval-${++counter}`;
      this.el.classList.add('jp-AAEPApproval');
      this._card.className = 'jp-AAEPApproval-card';
      this._card.setAttribute('role', 'group');
      this._card.setAttribute('aria-labelledby', `${id}-title`);
      this._title.id = `${id}-title`;
      this._title.className = 'jp-AAEPApproval-title';
      this._title.textContent = trans.__('Reading this request from the server…');
      this._card.appendChild(this._title);
      const status = document.createElement('div');
      status.setAttribute('role', 'status');
      status.setAttribute('aria-live', 'polite');
      status.setAttribute('aria-atomic', 'true');
      this._outcome.className = 'jp-AAEPApproval-outcome';
      this._outcome.tabIndex = -1;
      status.appendChild(this._outcome);
      this.el.append(this._card, status);
      // Answers carry a key of this page: the panel's when it shows this chat, else our own.
      if (this._chatId && !hasStreamKey(this._chatId)) {
        this._keyed = new KeyedStream(this._chatId);
      }
      void this._refresh();
    }

    remove(): this {
      this._stopped = true;
      window.clearTimeout(this._timer);
      this._keyed?.dispose();
      return super.remove();
    }

    /** Ask the server how the request stands, show it, and check again while it may change. */
    private async _refresh(): Promise<void> {
      if (this._stopped) {
        return;
      }
      let answer: IRequestAnswer | null = null;
      try {
        answer = await getRequest(this._chatId, this._requestId);
      } catch (error) {
        if (!this._answer) {
          this._failed(String((error as Error)?.message ?? error));
          return; // nothing to show: the panel is the way
        }
      }
      if (answer) {
        this._show(answer);
      }
      const done = this._answer !== null && !this._answer.open && this._answer.outcome !== null;
      if (!done && !this._stopped) {
        const wait = this._answer?.open === false || this._sent ? POLL_ANSWERED_MS : POLL_OPEN_MS;
        this._timer = window.setTimeout(() => void this._refresh(), wait);
      }
    }

    private _failed(message: string): void {
      this._title.textContent = trans.__('This request could not be read from the server: %1', message);
      this._say(trans.__('Approve or reject this in the side panel.'));
    }

    private _show(answer: IRequestAnswer): void {
      const first = this._answer === null;
      this._answer = answer;
      if (answer.kind !== 'confirmation') {
        this._title.textContent = trans.__('Answer this question in the side panel.');
        return;
      }
      if (first) {
        this._draw(answer);
      }
      if (!answer.open && answer.outcome !== null) {
        this._close(outcomeWords(answer, trans));
      } else if (!answer.open) {
        this._hideActions(); // answered; the producer's sentence about it follows in a moment
      }
    }

    private _draw(answer: IRequestAnswer): void {
      const words = approvalWords(answer.event, trans);
      const strong = document.createElement('strong');
      strong.textContent = words.title;
      this._title.replaceChildren(strong);
      const line = (label: string, text: string) => {
        const p = document.createElement('p');
        p.textContent = `${label} ${text}`;
        this._card.appendChild(p);
      };
      if (words.steps !== null) {
        // The plan's steps as a numbered list: a screen reader says "list, 3 items".
        const steps = document.createElement('ol');
        steps.className = 'jp-AAEPApproval-steps';
        steps.setAttribute('aria-label', trans.__('Steps of the plan'));
        for (const step of words.steps) {
          const item = document.createElement('li');
          item.textContent = step;
          steps.appendChild(item);
        }
        this._card.appendChild(steps);
      }
      line(trans.__('Risk:'), words.risk);
      line(trans.__('Consequence:'), words.consequence);
      if (words.warnings.length > 0) {
        line(trans.__('Warnings:'), '');
        const list = document.createElement('ul');
        for (const warning of words.warnings) {
          const item = document.createElement('li');
          item.textContent = warning;
          list.appendChild(item);
        }
        this._card.appendChild(list);
      }
      for (const block of words.code) {
        const figure = document.createElement('figure');
        figure.className = 'jp-AAEPApproval-code';
        const caption = document.createElement('figcaption');
        caption.textContent = block.caption;
        const pre = document.createElement('pre');
        pre.textContent = block.code;
        figure.append(caption, pre);
        this._card.appendChild(figure);
      }
      if (words.deadline) {
        this._deadline.textContent = words.deadline;
        this._card.appendChild(this._deadline);
      }
      if (words.elsewhere) {
        const note = document.createElement('p');
        note.className = 'jp-AAEPApproval-elsewhere';
        note.textContent = words.elsewhere;
        this._card.appendChild(note);
      }
      this._actions.className = 'jp-AAEPApproval-actions';
      this._actions.append(
        this._button(words.approve, 'jp-mod-accept jp-AAEPApproval-approve', 'accept'),
        this._button(words.reject, 'jp-mod-reject jp-AAEPApproval-reject', 'reject')
      );
      this._card.appendChild(this._actions);
    }

    private _button(label: string, css: string, decision: 'accept' | 'reject'): HTMLButtonElement {
      const button = document.createElement('button');
      button.type = 'button';
      button.className = `jp-Button jp-mod-styled ${css}`;
      button.textContent = label;
      // A real click or key press in the browser; the kernel has no way to reach this handler.
      // A click made by a script (`button.click()` from a JavaScript output) is not trusted and
      // is ignored: a speed bump, not a wall (such a script runs in the page, with its login).
      button.addEventListener('click', event => {
        if (event.isTrusted) {
          void this._press(decision);
        }
      });
      return button;
    }

    private async _press(decision: 'accept' | 'reject'): Promise<void> {
      const answer = this._answer;
      if (!answer || !answer.open || this._sending) {
        return;
      }
      this._sending = true;
      this._actions.hidden = true;
      this._say(trans.__('Sending your answer…'));
      this._outcome.focus();
      try {
        await this._keyed?.ready();
        await postMessage(this._chatId, notebookReply(answer.event, decision));
        this._sent = true;
        window.clearTimeout(this._timer);
        void this._refresh();
      } catch (error) {
        this._actions.hidden = false;
        this._say(
          trans.__(
            'Your answer was not sent: %1 Try again, or answer in the side panel.',
            String((error as Error)?.message ?? error)
          )
        );
      } finally {
        this._sending = false;
      }
    }

    /** The request is answered (here or elsewhere): the outcome replaces the buttons. */
    private _close(outcome: string): void {
      this._keyed?.dispose();
      this._hideActions();
      this._actions.remove();
      this._deadline.remove();
      this._say(outcome);
    }

    /** No more buttons; a focus on one of them moves to the outcome line (the person's place). */
    private _hideActions(): void {
      const hadFocus = this._actions.contains(document.activeElement);
      this._actions.hidden = true;
      if (hadFocus) {
        this._outcome.focus();
      }
    }

    private _say(text: string): void {
      if (this._outcome.textContent !== text) {
        this._outcome.textContent = text;
      }
    }

    private _chatId = '';
    private _requestId = '';
    private _answer: IRequestAnswer | null = null;
    private _sending = false;
    private _sent = false;
    private _stopped = false;
    private _timer = 0;
    private _keyed: KeyedStream | null = null;
    private readonly _card = document.createElement('div');
    private readonly _title = document.createElement('p');
    private readonly _deadline = document.createElement('p');
    private readonly _actions = document.createElement('div');
    private readonly _outcome = document.createElement('p');
  }

  return { AAEPApprovalModel, AAEPApprovalView };
}
