/**
 * The chat transcript: a named region holding everything that happened.
 *
 * It is not a live region of any kind, not even `role="log"` with
 * `aria-live="off"`: what is spoken, and how often, is decided by the
 * announcer (verbosity, sentence buffering, rate limit). Orca counts every
 * container with an `aria-live` value (even "off") as a live region, and skips
 * a live-region line whose text equals the last one it queued: an answer's
 * sentence shown here a moment before the announcer wrote it was never heard.
 */
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { TranslationBundle } from '@jupyterlab/translation';
import React, { useEffect, useLayoutEffect, useMemo, useRef, useState } from 'react';

import { ICitationNavigator } from '../citationNavigator';
import { ChatModel, TranscriptItem, collapsePoint } from '../model';
import { ClarificationCard } from './ClarificationCard';
import { ConfirmationCard, IRequestShortcuts } from './ConfirmationCard';
import { Markdown } from './Markdown';
import { PlanCard } from './PlanCard';
import { IReplyDetails, readPlan } from './planWords';
import { HandoffCard, Notice, ProgressStep, ToolStep, UserMessage } from './TranscriptItems';

/** Props of {@link Transcript}. */
export interface ITranscriptProps {
  model: ChatModel;
  rendermime: IRenderMimeRegistry;
  trans: TranslationBundle;
  /** Keys of the approve and reject commands, shown on confirmation cards. */
  shortcuts?: IRequestShortcuts;
  onReply: (item: TranscriptItem, decision: 'accept' | 'reject', details?: IReplyDetails) => void;
  /** Opens a plan's Markdown file in the editor (plan mode's "Edit the plan"). */
  onOpenPlan?: (path: string) => void;
  onAnswer: (item: TranscriptItem, response: string | boolean | number) => void;
  /** Names and follows the answers' cell citations (none: they stay words). */
  citations?: ICitationNavigator | null;
}

/** What every entry needs beside its item; stable across renders. */
interface IEntryContext {
  rendermime: IRenderMimeRegistry;
  trans: TranslationBundle;
  shortcuts?: IRequestShortcuts;
  /** The latest props, so callbacks can change without re-rendering entries. */
  latest: { current: ITranscriptProps };
  /** Names and follows the answers' cell citations. */
  citations?: ICitationNavigator | null;
}

/**
 * One transcript entry. Memoised on the item and its version: when an event
 * arrives, only the entries it changed render again.
 */
const Entry = React.memo(
  function Entry(props: { item: TranscriptItem; version: number; context: IEntryContext }): JSX.Element {
    const { item, context } = props;
    return <div className="jp-AAEPPanel-entry">{renderItem(item, context)}</div>;
  },
  (a, b) => a.item === b.item && a.version === b.version && a.context === b.context
);

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
  const [showAll, setShowAll] = useState(false);
  const latest = useRef(props);
  latest.current = props;
  const shortcuts = props.shortcuts;
  const context = useMemo<IEntryContext>(
    () => ({ rendermime, trans, shortcuts, latest, citations: props.citations }),
    // The shortcuts object is rebuilt by the parent on every render: compare its keys.
    // eslint-disable-next-line react-hooks/exhaustive-deps
    [
      rendermime,
      trans,
      shortcuts?.approve,
      shortcuts?.reject,
      shortcuts?.approveAria,
      shortcuts?.rejectAria,
      props.citations
    ]
  );
  // A new chat starts collapsed again.
  useEffect(() => setShowAll(false), [model]);
  const { start, hiddenTurns } = showAll ? { start: 0, hiddenTurns: 0 } : collapsePoint(items);
  const shown = start > 0 ? items.slice(start) : items;

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
      role="region"
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
        {hiddenTurns > 0 && (
          <button
            type="button"
            className="jp-Button jp-mod-styled jp-AAEPPanel-showEarlier"
            onClick={() => {
              pinned.current = false;
              setShowAll(true);
              // The button goes away: keep the focus in the transcript, at its top.
              node.current?.focus();
              if (node.current) {
                node.current.scrollTop = 0;
              }
            }}
          >
            {trans._n('Show 1 earlier turn', 'Show %1 earlier turns', hiddenTurns)}
          </button>
        )}
        {shown.map(item => (
          <Entry key={item.id} item={item} version={model.version(item.id)} context={context} />
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

function renderItem(item: TranscriptItem, context: IEntryContext): JSX.Element | null {
  const { rendermime, trans } = context;
  switch (item.kind) {
    case 'user':
      return <UserMessage item={item} trans={trans} />;
    case 'answer':
      return (
        <div className={`jp-AAEPMessage jp-AAEPMessage-agent${item.complete ? '' : ' jp-mod-streaming'}`}>
          <div className="jp-AAEPMessage-author">
            {trans.__('Agent')}
            {!item.complete && <span className="jp-AAEPMessage-typing"> {trans.__('(writing…)')}</span>}
          </div>
          <Markdown
            rendermime={rendermime}
            source={item.text}
            mimeType={item.contentType}
            citations={item.citations}
            navigator={context.citations}
            trans={trans}
          />
          {item.cutOff && (
            <div className="jp-AAEPMessage-cutOff">{trans.__('(cut off: the agent was stopped here)')}</div>
          )}
        </div>
      );
    case 'tool':
      return <ToolStep item={item} trans={trans} />;
    case 'progress':
      // Progress is transient: once its step is over the tool step says how it went.
      return item.done ? null : <ProgressStep item={item} trans={trans} />;
    case 'confirmation':
      if (readPlan(item.event.extra_context) !== null) {
        return (
          <PlanCard
            item={item}
            trans={trans}
            shortcuts={context.shortcuts}
            onReply={(i, decision, details) => context.latest.current.onReply(i, decision, details)}
            onOpenPlan={path => context.latest.current.onOpenPlan?.(path)}
          />
        );
      }
      return (
        <ConfirmationCard
          item={item}
          trans={trans}
          shortcuts={context.shortcuts}
          onReply={(i, decision, grant) =>
            context.latest.current.onReply(
              i,
              decision,
              grant && decision === 'accept' ? { grant: { rule: grant.rule, scope: grant.scope } } : undefined
            )
          }
        />
      );
    case 'clarification':
      return (
        <ClarificationCard
          item={item}
          trans={trans}
          onAnswer={(i, response) => context.latest.current.onAnswer(i, response)}
        />
      );
    case 'handoff':
      return <HandoffCard item={item} trans={trans} />;
    case 'notice':
      return <Notice item={item} trans={trans} />;
    default:
      return null;
  }
}
