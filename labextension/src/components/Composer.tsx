/**
 * The message box: a new request when idle, guidance ("steer") while the
 * agent runs.
 */
import { TranslationBundle } from '@jupyterlab/translation';
import React, { useState } from 'react';

import { useId } from './hooks';

/** Props of {@link Composer}. */
export interface IComposerProps {
  trans: TranslationBundle;
  /** Whether a run is in progress (the text is then sent as guidance). */
  running: boolean;
  disabled: boolean;
  onSend: (text: string) => Promise<void>;
}

/**
 * A labelled textarea with a Send button. Enter sends, Shift+Enter adds a line.
 */
export function Composer(props: IComposerProps): JSX.Element {
  const { trans, running, disabled } = props;
  const [text, setText] = useState('');
  const [busy, setBusy] = useState(false);
  const inputId = useId('jp-AAEPComposer-input');
  const hintId = useId('jp-AAEPComposer-hint');

  const send = async () => {
    const value = text.trim();
    if (!value || disabled || busy) {
      return;
    }
    setBusy(true);
    try {
      await props.onSend(value);
      setText('');
    } finally {
      setBusy(false);
    }
  };

  return (
    <form
      className={`jp-AAEPComposer${running ? ' jp-mod-steering' : ''}`}
      onSubmit={e => {
        e.preventDefault();
        void send();
      }}
    >
      <label htmlFor={inputId} className="jp-AAEPComposer-label">
        {running ? trans.__('Steer the agent (sent as guidance)') : trans.__('Message to the agent')}
      </label>
      <textarea
        id={inputId}
        className="jp-AAEPComposer-input jp-mod-styled"
        rows={3}
        value={text}
        disabled={disabled}
        aria-describedby={hintId}
        onChange={e => setText(e.target.value)}
        onKeyDown={e => {
          if (e.key === 'Enter' && !e.shiftKey && !e.nativeEvent.isComposing) {
            e.preventDefault();
            void send();
          }
        }}
      />
      <div className="jp-AAEPComposer-row">
        <p id={hintId} className="jp-AAEPComposer-hint">
          {trans.__('Enter to send, Shift+Enter for a new line.')}
        </p>
        <button
          type="submit"
          className="jp-Button jp-mod-styled jp-mod-accept"
          disabled={disabled || busy || text.trim().length === 0}
        >
          {running ? trans.__('Send guidance') : trans.__('Send')}
        </button>
      </div>
    </form>
  );
}
