/**
 * The message box's description (components/Composer.tsx): what the box does now, heard once
 * when it gets the focus. Pure, so it is tested without a page.
 */
import { TranslationBundle } from '@jupyterlab/translation';

/** What the hint depends on. */
export interface IComposerState {
  /** A run that takes guidance is going on (and nothing waits for an answer). */
  steering: boolean;
  paused: boolean;
  waiting: 'question' | 'approval' | null;
  /** Nothing can be sent: the connection is down. */
  disabled: boolean;
  /** The panel's first connection is still being made. */
  connecting: boolean;
  running: boolean;
  acceptsGuidance: boolean;
}

/** The hint for *state*. */
export function composerHint(trans: TranslationBundle, state: IComposerState): string {
  let hint = trans.__('Enter to send, Shift+Enter for a new line.');
  if (state.steering && state.paused) {
    hint = trans.__(
      'The agent is paused: guidance you send now applies when you resume. Enter to send, Shift+Enter for a new line.'
    );
  } else if (state.steering) {
    hint = trans.__(
      'The agent is working: what you send is guidance it reads at its next step. Enter to send, Shift+Enter for a new line.'
    );
  }
  if (state.waiting === 'question') {
    hint = trans.__(
      'The agent asked you a question: what you send answers it. Enter to send, Shift+Enter for a new line.'
    );
  } else if (state.waiting === 'approval') {
    hint = trans.__(
      'A request waits for your answer: a message you send instead cancels it and starts a new request. Enter to send, Shift+Enter for a new line.'
    );
  }
  if (state.disabled && state.connecting) {
    // Heard when the panel opens with the focus here, before its first connection: a lost
    // connection would be the wrong news and twice as long.
    hint = trans.__('Connecting to the agent.');
  } else if (state.disabled) {
    hint = trans.__('Not connected to the agent. You can send your message once the connection is back.');
  } else if (state.running && !state.acceptsGuidance) {
    hint = trans.__(
      'The agent is working and cannot take guidance yet. Send your next message when it finishes, or stop it.'
    );
  }
  return hint;
}
