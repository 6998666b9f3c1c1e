/**
 * The frame every request card shares (a confirmation, a plan, a question):
 * a group named by its title and described by its summary, focusable
 * (Ctrl+Shift+A reads the summary); while the request is open its actions and
 * the keys that answer it; once answered the short outcome, which takes the
 * focus when the answer came from the card (never the card itself, which
 * would be read again).
 */
import React, { useRef } from 'react';

import { IRequestItem } from '../model';
import { useFocusOutcome, useId } from './hooks';

/** Props of {@link RequestCardFrame}. */
export interface IRequestCardFrameProps {
  item: IRequestItem;
  /** The card's own classes, after `jp-AAEPCard`. */
  className: string;
  titleId: string;
  /** What the focused card reads after its title (ids in the card). */
  describedBy?: string[];
  /** Whether the request still takes an answer (pending and not expired). */
  open: boolean;
  /** Set by the card as one of its buttons answers: the outcome then takes the focus. */
  pressed: React.MutableRefObject<boolean>;
  /** The keys that answer the card ("Keys: … approves, … rejects."), if any. */
  keys?: string | null;
  /** The outcome once it is no longer open. */
  outcome: string;
  /** Shown while open, before the keys. */
  actions: React.ReactNode;
  /** Shown always: the title and what the request is about. */
  children: React.ReactNode;
}

export function RequestCardFrame(props: IRequestCardFrameProps): JSX.Element {
  const { item, open, keys } = props;
  const card = useRef<HTMLDivElement>(null);
  const outcome = useFocusOutcome(card, item.state === 'pending', props.pressed);
  const keysId = useId('jp-AAEPCard-keys');
  const describedBy = [...(props.describedBy ?? []), ...(keys && open ? [keysId] : [])];
  return (
    <div
      ref={card}
      role="group"
      aria-labelledby={props.titleId}
      aria-describedby={describedBy.length ? describedBy.join(' ') : undefined}
      tabIndex={-1}
      className={`jp-AAEPCard ${props.className}${item.state === 'pending' ? ' jp-mod-pending' : ''}`}
      data-request-id={item.id}
    >
      {props.children}
      {open ? (
        <>
          {props.actions}
          {keys && (
            <div id={keysId} className="jp-AAEPCard-keys">
              {keys}
            </div>
          )}
        </>
      ) : (
        <p className="jp-AAEPCard-outcome" tabIndex={-1} ref={outcome}>
          {props.outcome}
        </p>
      )}
    </div>
  );
}
