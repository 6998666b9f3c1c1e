/**
 * The chat transcript: a `role="log"` list of everything that happened.
 *
 * The log is `aria-live="off"` on purpose: what is spoken, and how often,
 * is decided by the announcer (verbosity, sentence buffering, rate limit).
 * A live log would read every streamed token a second time.
 */
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { TranslationBundle } from '@jupyterlab/translation';
import React, { useEffect, useLayoutEffect, useRef } from 'react';

import { ChatModel, TranscriptItem } from '../model';
import { ClarificationCard } from './ClarificationCard';
import { ConfirmationCard, IRequestShortcuts } from './ConfirmationCard';
import { Markdown } from './Markdown';
import { HandoffCard, Notice, ProgressStep, ToolStep, UserMessage } from './TranscriptItems';

/** Props of {@link Transcript}. */
export interface ITranscriptProps {
  model: ChatModel;
  rendermime: IRenderMimeRegistry;
  trans: TranslationBundle;
  /** Keys of the approve and reject commands, shown on confirmation cards. */
  shortcuts?: IRequestShortcuts;
  onReply: (item: TranscriptItem, decision: 'accept' | 'reject') => void;
  onAnswer: (item: TranscriptItem, response: string | boolean | number) => void;
}

/** Distance from the bottom (px) under which new content keeps the view pinned. */
const PIN_THRESHOLD = 48;

/**
 * Renders the transcript and keeps it scrolled to the end while the user is
 * at the end; it never moves focus.
 */
export function Transcript(props: ITranscriptProps): JSX.Element {
  const { model, rendermime, trans } = props;
  const node = useRef<HTMLDivElement>(null);
  const pinned = useRef(true);
  const items = model.items;

  useLayoutEffect(() => {
    const el = node.current;
    if (el && pinned.current) {
      el.scrollTop = el.scrollHeight;
    }
  });

  // Markdown renders asynchronously and grows after layout: stay pinned.
  useEffect(() => {
    const el = node.current;
    const inner = el?.firstElementChild;
    if (!el || !inner || typeof ResizeObserver === 'undefined') {
      return;
    }
    const observer = new ResizeObserver(() => {
      if (pinned.current) {
        el.scrollTop = el.scrollHeight;
      }
    });
    observer.observe(inner);
    return () => observer.disconnect();
  }, []);

  const onScroll = () => {
    const el = node.current;
    if (el) {
      pinned.current = el.scrollHeight - el.scrollTop - el.clientHeight < PIN_THRESHOLD;
    }
  };

  return (
    <div
      ref={node}
      className="jp-AAEPPanel-transcript"
      role="log"
      aria-live="off"
      aria-label={trans.__('Agent transcript')}
      tabIndex={0}
      onScroll={onScroll}
    >
      <div className="jp-AAEPPanel-entries">
      {items.length === 0 && (
        <p className="jp-AAEPPanel-empty">
          {trans.__(
            'No messages yet. Ask the agent to explain, edit or run this notebook; it asks before running code.'
          )}
        </p>
      )}
      {items.map(item => (
        <div key={item.id} className="jp-AAEPPanel-entry">
          {renderItem(item, props, rendermime, trans)}
        </div>
      ))}
      </div>
    </div>
  );
}

function renderItem(
  item: TranscriptItem,
  props: ITranscriptProps,
  rendermime: IRenderMimeRegistry,
  trans: TranslationBundle
): JSX.Element | null {
  switch (item.kind) {
    case 'user':
      return <UserMessage item={item} trans={trans} />;
    case 'answer':
      return (
        <div className={`jp-AAEPMessage jp-AAEPMessage-agent${item.complete ? '' : ' jp-mod-streaming'}`}>
          <p className="jp-AAEPMessage-author">
            {trans.__('Agent')}
            {!item.complete && <span className="jp-AAEPMessage-typing"> {trans.__('(writing…)')}</span>}
          </p>
          <Markdown rendermime={rendermime} source={item.text} mimeType={item.contentType} />
        </div>
      );
    case 'tool':
      return <ToolStep item={item} trans={trans} />;
    case 'progress':
      // Progress is transient: once its step is over the tool step says how it went.
      return item.done ? null : <ProgressStep item={item} trans={trans} />;
    case 'confirmation':
      return (
        <ConfirmationCard item={item} trans={trans} shortcuts={props.shortcuts} onReply={props.onReply} />
      );
    case 'clarification':
      return <ClarificationCard item={item} trans={trans} onAnswer={props.onAnswer} />;
    case 'handoff':
      return <HandoffCard item={item} trans={trans} />;
    case 'notice':
      return <Notice item={item} trans={trans} />;
    default:
      return null;
  }
}
