/**
 * The message box: a new request when idle, guidance ("steer") while the
 * agent runs, when the server accepts guidance.
 *
 * While nothing can be sent (the agent works and takes no guidance, or the
 * connection is down) the box stays focusable and readable but read-only,
 * marked `aria-disabled` with the reason in its description: a natively
 * disabled control would drop the focus of someone typing in it when an
 * event arrives.
 */
import { TranslationBundle } from '@jupyterlab/translation';
import { infoIcon } from '@jupyterlab/ui-components';
import React, { useEffect, useLayoutEffect, useRef, useState } from 'react';

import { JSONRecord } from '../aaep';
import { IMentionSource } from '../mentions';
import { composerHint } from './composerHint';
import { useId } from './hooks';
import { useMentions } from './MentionPicker';
import { ToolbarIconButton } from './ToolbarIconButton';

/** Props of {@link Composer}. */
export interface IComposerProps {
  trans: TranslationBundle;
  /** Whether a run is in progress. */
  running: boolean;
  /** Whether the server takes guidance while a run is in progress. */
  acceptsGuidance: boolean;
  /** Whether the run is paused (guidance then applies on resume). */
  paused?: boolean;
  /**
   * What waits for the person: a message then answers the question, or
   * replaces the waiting request (an approval) with a new request, as over
   * the API; never silent guidance.
   */
  waiting?: 'question' | 'approval' | null;
  /** Whether the connection is down (nothing can be sent). */
  disabled: boolean;
  /**
   * Whether the panel's first connection is still being made (with `disabled`): the box
   * then says so in a few words, not that a connection was lost.
   */
  connecting?: boolean;
  /** `context` items picked with `@` travel with the request. */
  onSend: (text: string, context?: JSONRecord[]) => Promise<void>;
  /** What `@` offers (no `@` list without it). */
  mentions?: IMentionSource;
}

/**
 * A one-line labelled textarea that grows, with a Send button. Enter sends,
 * Shift+Enter adds a line. The hint is the box's description (heard once, on
 * focus); on screen it is a short placeholder, and the whole hint shows on
 * demand (the help button) or when nothing can be sent (it says why).
 */
export function Composer(props: IComposerProps): JSX.Element {
  const { trans, running, acceptsGuidance, disabled } = props;
  const [text, setText] = useState('');
  const [busy, setBusy] = useState(false);
  const [helpShown, setHelpShown] = useState(false);
  const inputId = useId('jp-AAEPComposer-input');
  const hintId = useId('jp-AAEPComposer-hint');
  const describedId = useId('jp-AAEPComposer-described');
  const labelId = useId('jp-AAEPComposer-label');
  const waiting = props.waiting ?? null;
  const steering = running && acceptsGuidance && waiting === null;
  const blocked = disabled || (running && !acceptsGuidance && waiting === null);
  const canSend = !blocked && !busy && text.trim().length > 0;
  const inputRef = useRef<HTMLTextAreaElement>(null);
  // Each hint is said once per panel visit: once the box was left for another
  // part of the panel, a hint it had is no longer its description.
  const [heardHints, setHeardHints] = useState<ReadonlySet<string>>(() => new Set());
  // A description is read when the box gets the focus: the hint it had then was heard.
  // While the box has the focus its description stays the one it had then: a screen reader
  // reads a changed description of the focused box at once, and the run's changes ("The agent
  // is working…", "A request waits…") would be queued in front of the approval alert. The
  // announcer says those changes; the new hint is the description at the next focus. Only a
  // change of whether anything can be sent is described at once.
  const [focusHint, setFocusHint] = useState<{ hint: string; blocked: boolean } | null>(null);
  // One line that grows with what is typed (up to the CSS max-height, then it scrolls).
  useLayoutEffect(() => {
    const box = inputRef.current;
    if (box) {
      box.style.height = 'auto';
      // Empty, it is one line whatever the placeholder's length (that is cut short, not wrapped).
      box.style.height = text ? `${box.scrollHeight + 2}px` : '';
    }
  }, [text]);
  const mentions = useMentions({
    source: props.mentions,
    trans,
    text,
    setText,
    input: inputRef,
    announce: said => props.mentions?.announce(said)
  });

  const send = async () => {
    const value = text.trim();
    if (!value || blocked || busy) {
      return;
    }
    setBusy(true);
    try {
      const context = mentions.items();
      await props.onSend(value, context.length ? context : undefined);
      setText('');
      mentions.clear();
    } finally {
      setBusy(false);
    }
  };

  const hint = composerHint(trans, {
    steering,
    paused: !!props.paused,
    waiting,
    disabled,
    connecting: !!props.connecting,
    running,
    acceptsGuidance
  });

  useEffect(() => {
    if (focusHint && focusHint.blocked !== blocked) {
      setFocusHint({ hint, blocked });
    }
  }, [focusHint, blocked, hint]);
  const described = focusHint?.hint ?? hint;

  const label =
    waiting === 'question'
      ? trans.__('Answer the agent')
      : steering
        ? trans.__('Steer the agent')
        : trans.__('Ask the agent');
  return (
    <form
      className={`jp-AAEPComposer${steering ? ' jp-mod-steering' : ''}${blocked ? ' jp-mod-blocked' : ''}`}
      aria-labelledby={labelId}
      onSubmit={e => {
        e.preventDefault();
        void send();
      }}
    >
      <label id={labelId} htmlFor={inputId} className="jp-AAEPComposer-label jp-sr-only">
        {label}
      </label>
      <div className="jp-AAEPComposer-row">
        <textarea
          id={inputId}
          className="jp-AAEPComposer-input jp-mod-styled"
          rows={1}
          value={text}
          placeholder={label}
          readOnly={blocked}
          aria-disabled={blocked}
          aria-describedby={heardHints.has(described) ? undefined : describedId}
          ref={inputRef}
          {...mentions.inputProps}
          onFocus={() => {
            setFocusHint({ hint, blocked });
          }}
          onBlur={e => {
            const to = e.relatedTarget;
            // Going back to the notebook (the main area) ends the visit: the next one hears
            // the hint again. Moving within the panel, or a command moving the focus, does not.
            const left = to instanceof Element && !!to.closest('#jp-main-dock-panel');
            setHeardHints(left ? new Set() : new Set([...heardHints, described]));
            setFocusHint(null);
          }}
          onChange={e => {
            setText(e.target.value);
            mentions.changed(e.target.value, e.target.selectionStart ?? e.target.value.length);
          }}
          onKeyDown={e => {
            if (mentions.keyDown(e)) {
              return;
            }
            if (e.key === 'Enter' && !e.shiftKey && !e.nativeEvent.isComposing) {
              e.preventDefault();
              void send();
            }
          }}
        />
        <button
          type="submit"
          className="jp-Button jp-mod-styled jp-mod-accept"
          aria-disabled={!canSend}
          aria-describedby={blocked ? hintId : undefined}
        >
          {waiting === 'question' ? trans.__('Send answer') : steering ? trans.__('Send guidance') : trans.__('Send')}
        </button>
        <ToolbarIconButton
          icon={infoIcon}
          label={trans.__('Message help')}
          tooltip={
            helpShown ? trans.__('Hide the help of the message box') : trans.__('Show the help of the message box')
          }
          className="jp-AAEPComposer-help"
          expanded={helpShown}
          controls={hintId}
          onClick={() => setHelpShown(!helpShown)}
        />
      </div>
      {mentions.view}
      {/* Heard once, as the message box's description (not again in browse mode
          unless shown on demand, and not on the button unless it says why nothing
          can be sent). On screen only on demand, or while nothing can be sent. */}
      <span id={describedId} hidden>
        {described}
      </span>
      <div
        id={hintId}
        className={`jp-AAEPComposer-hint${helpShown || blocked ? ' jp-mod-shown' : ''}`}
        aria-hidden={helpShown ? undefined : 'true'}
      >
        {hint}
      </div>
    </form>
  );
}
