/**
 * Small React hooks shared by the panel components.
 */
import { ISignal } from '@lumino/signaling';
import React, { useEffect, useReducer, useRef, useState } from 'react';

/**
 * Re-render the calling component whenever one of `signals` fires.
 *
 * @param signals Lumino signals to follow (nulls are skipped).
 */
export function useSignals(...signals: (ISignal<unknown, unknown> | null | undefined)[]): void {
  const [, bump] = useReducer((n: number) => n + 1, 0);
  useEffect(() => {
    const slot = () => bump();
    const live = signals.filter((s): s is ISignal<unknown, unknown> => !!s);
    live.forEach(s => s.connect(slot));
    // A signal may have fired between the render and this effect (a new
    // model connecting at once): render again so nothing is missed.
    bump();
    return () => live.forEach(s => s.disconnect(slot));
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, signals);
}

/**
 * The current time in milliseconds, refreshed every `intervalMs` while
 * `active` is true (for countdowns).
 */
export function useNow(active: boolean, intervalMs = 1000): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    if (!active) {
      return;
    }
    const timer = window.setInterval(() => setNow(Date.now()), intervalMs);
    return () => window.clearInterval(timer);
  }, [active, intervalMs]);
  return now;
}

let idCounter = 0;

/** A stable unique id for `aria-labelledby` / `htmlFor`. */
export function useId(prefix: string): string {
  const [id] = useState(() => `${prefix}-${++idCounter}`);
  return id;
}

/**
 * After a request is answered, move the focus from its card to the short outcome
 * ("You approved this."), never back to the card: the card is not read again. Only when the
 * focus was in the card or `pressed` says one of its buttons was pressed (a person answering
 * it); otherwise the focus is left alone.
 *
 * @returns The ref for the outcome element (give it `tabIndex={-1}`).
 */
export function useFocusOutcome(
  card: React.RefObject<HTMLElement>,
  open: boolean,
  pressed?: React.MutableRefObject<boolean>
): React.RefObject<HTMLParagraphElement> {
  const outcome = useRef<HTMLParagraphElement>(null);
  const wasOpen = useRef(open);
  useEffect(() => {
    const answeredNow = wasOpen.current && !open;
    wasOpen.current = open;
    const active = document.activeElement;
    // A button of the card was pressed: it is gone now, so the focus fell to the page.
    const fromCard = !!pressed?.current || (!!active && !!card.current && card.current.contains(active));
    if (answeredNow && outcome.current && fromCard) {
      if (pressed) {
        pressed.current = false;
      }
      outcome.current.focus();
    }
  });
  return outcome;
}

/**
 * Focus an element of the panel once React has rendered it. A re-render can
 * replace the element just after (switching chats mounts a new message box),
 * which drops the focus to the page's body: for a second and a half, a focus
 * lost that way goes to the element's successor. A focus the person moved
 * elsewhere is never taken back.
 */
export function focusSoon(selector: string): void {
  const find = () => document.querySelector<HTMLElement>(`.jp-AAEPPanel ${selector}`);
  const focus = () => {
    const target = find();
    if (target && document.activeElement !== target) {
      target.focus();
    }
  };
  const until = Date.now() + 1500;
  const watch = () => {
    const active = document.activeElement;
    if (active === null || active === document.body) {
      focus();
    }
    if (Date.now() < until) {
      window.setTimeout(watch, 100);
    }
  };
  requestAnimationFrame(() =>
    requestAnimationFrame(() => {
      focus();
      window.setTimeout(watch, 100);
    })
  );
}
