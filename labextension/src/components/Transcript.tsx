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
  /** Where the panel itself last scrolled to (its own scrolls keep the view pinned). */
  const placed = useRef<number | null>(null);
  const items = model.items;

  useLayoutEffect(() => {
    const el = node.current;
    if (el && pinned.current) {
      placed.current = pinToEnd(el);
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
        placed.current = pinToEnd(el);
      }
    });
    observer.observe(inner);
    return () => observer.disconnect();
  }, []);

  const onScroll = () => {
    const el = node.current;
    if (el) {
      const ours = placed.current !== null && Math.abs(el.scrollTop - placed.current) < 2;
      pinned.current = ours || el.scrollHeight - el.scrollTop - el.clientHeight < PIN_THRESHOLD;
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

/**
 * Scroll to the end, except that a pending request taller than the view is
 * shown from its top: what is asked matters more than the last lines.
 * Scrolling never moves the focus.
 */
function pinToEnd(el: HTMLElement): number {
  const entries = el.querySelectorAll<HTMLElement>('.jp-AAEPPanel-entry');
  const last = entries[entries.length - 1];
  const card = last?.querySelector<HTMLElement>('.jp-AAEPCard.jp-mod-pending');
  if (card && card.offsetHeight > el.clientHeight) {
    el.scrollTop += card.getBoundingClientRect().top - el.getBoundingClientRect().top - 2;
  } else {
    el.scrollTop = el.scrollHeight;
  }
  return el.scrollTop;
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
