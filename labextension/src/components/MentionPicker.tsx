/**
 * `@` in the message box: a list of things to attach to the request (the
 * active cell, the selected cells, a kernel variable, a file).
 *
 * The message box stays a plain text box (its implicit role is textbox,
 * which supports `aria-activedescendant`, `aria-autocomplete` and
 * `aria-controls`): while the list is open, the arrow keys move through its
 * options, Enter or Tab attaches the active one, Escape closes it. Opening
 * the list and attaching are announced; the attached items are listed under
 * the box, each with a Remove button.
 */
import { TranslationBundle } from '@jupyterlab/translation';
import React, { useEffect, useRef, useState } from 'react';

import { JSONRecord } from '../aaep';
import { IMention, IMentionSource } from '../mentions';
import { useId } from './hooks';

/** Most `context` items one request carries (the server accepts 10). */
export const MAX_CONTEXT_ITEMS = 10;

/** The `@query` being typed at `caret`, or null. */
export function mentionAt(text: string, caret: number): { start: number; query: string } | null {
  const before = text.slice(0, caret);
  const at = before.lastIndexOf('@');
  if (at < 0 || (at > 0 && !/\s/.test(before[at - 1]))) {
    return null;
  }
  const query = before.slice(at + 1);
  return /\s/.test(query) || query.length > 40 ? null : { start: at, query };
}

/** What the composer wires into its text box. */
export interface IMentionState {
  /** Props for the textarea (ARIA of the popup). */
  inputProps: Record<string, string | undefined>;
  /** Call from the textarea's `onChange` with the new value and caret. */
  changed(value: string, caret: number): void;
  /** Call first from `onKeyDown`; true when the key was used by the list. */
  keyDown(event: React.KeyboardEvent<HTMLTextAreaElement>): boolean;
  /** The `context` items attached so far. */
  items(): JSONRecord[];
  clear(): void;
  /** The list (while open) and the attached items. */
  view: JSX.Element | null;
}

export function useMentions(options: {
  source: IMentionSource | undefined;
  trans: TranslationBundle;
  text: string;
  setText: (value: string) => void;
  input: React.RefObject<HTMLTextAreaElement>;
  announce: (text: string) => void;
}): IMentionState {
  const { source, trans, text, setText, input, announce } = options;
  const listId = useId('jp-AAEPMention-list');
  const [open, setOpen] = useState<{ start: number; query: string } | null>(null);
  const [choices, setChoices] = useState<IMention[]>([]);
  const [active, setActive] = useState(0);
  const [attached, setAttached] = useState<IMention[]>([]);
  const asked = useRef(0);
  const announcedOpen = useRef(false);
  /** The query the shown choices are for (they may lag behind fast typing). */
  const [loadedFor, setLoadedFor] = useState<string | null>(null);
  /** Enter came before the choices of the current query: attach the first when they arrive. */
  const chooseFirst = useRef(false);

  const close = () => {
    setOpen(null);
    setChoices([]);
    setLoadedFor(null);
    chooseFirst.current = false;
    announcedOpen.current = false;
  };

  useEffect(() => {
    if (!open || !source) {
      return;
    }
    const ticket = ++asked.current;
    void source.candidates(open.query).then(found => {
      if (ticket !== asked.current) {
        return;
      }
      setChoices(found);
      setActive(0);
      setLoadedFor(open.query);
      if (chooseFirst.current) {
        chooseFirst.current = false;
        if (found.length) {
          choose(found[0]);
        } else {
          announce(trans.__('Nothing to attach matches.'));
          close();
        }
        return;
      }
      if (!announcedOpen.current) {
        announcedOpen.current = true;
        const note = source.note();
        announce(
          found.length
            ? trans._n(
                '%1 thing to attach. Up and down arrows to choose, Enter to attach, Escape to close.',
                '%1 things to attach. Up and down arrows to choose, Enter to attach, Escape to close.',
                found.length
              ) + (note ? ` ${note}` : '')
            : trans.__('Nothing to attach matches.') + (note ? ` ${note}` : '')
        );
      }
    });
    // Only a new query (or source) starts a search: the callbacks change every render and
    // must not restart it.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [open?.start, open?.query, source]);

  const choose = (mention: IMention) => {
    if (!open) {
      return;
    }
    const end = open.start + 1 + open.query.length;
    const next = `${text.slice(0, open.start)}${mention.inline} ${text.slice(end)}`;
    setText(next);
    const caret = open.start + mention.inline.length + 1;
    requestAnimationFrame(() => input.current?.setSelectionRange(caret, caret));
    const total = attached.reduce((n, m) => n + m.items.length, 0);
    if (attached.some(m => m.key === mention.key)) {
      announce(trans.__('%1 is attached already.', mention.inline));
    } else if (total + mention.items.length > MAX_CONTEXT_ITEMS) {
      announce(trans.__('Not attached: a request carries at most %1 items.', MAX_CONTEXT_ITEMS));
    } else {
      setAttached([...attached, mention]);
      announce(trans.__('Attached %1.', mention.label));
    }
    close();
  };

  const remove = (mention: IMention) => {
    setAttached(attached.filter(m => m.key !== mention.key));
    announce(trans.__('Removed %1.', mention.label));
    input.current?.focus();
  };

  const optionId = (index: number) => `${listId}-${index}`;
  const listOpen = !!open && choices.length > 0;

  return {
    inputProps: {
      'aria-autocomplete': source ? 'list' : undefined,
      'aria-controls': listOpen ? listId : undefined,
      'aria-activedescendant': listOpen ? optionId(active) : undefined
    },
    changed(value: string, caret: number) {
      if (!source) {
        return;
      }
      const found = mentionAt(value, caret);
      if (found) {
        setOpen(found);
      } else if (open) {
        close();
      }
    },
    keyDown(event) {
      if (!open) {
        return false;
      }
      if (event.key === 'Escape') {
        event.preventDefault();
        event.stopPropagation();
        close();
        announce(trans.__('Closed the list of things to attach.'));
        return true;
      }
      if (loadedFor !== open.query && event.key === 'Enter' && !event.shiftKey) {
        event.preventDefault(); // the choices for what was just typed are on their way
        chooseFirst.current = true;
        return true;
      }
      if (!listOpen) {
        return false;
      }
      if (event.key === 'ArrowDown' || event.key === 'ArrowUp') {
        event.preventDefault();
        const step = event.key === 'ArrowDown' ? 1 : -1;
        setActive((active + step + choices.length) % choices.length);
        return true;
      }
      if ((event.key === 'Enter' && !event.shiftKey) || event.key === 'Tab') {
        event.preventDefault();
        choose(choices[active]);
        return true;
      }
      return false;
    },
    items: () => attached.flatMap(m => m.items).slice(0, MAX_CONTEXT_ITEMS),
    clear: () => setAttached([]),
    view: (
      <>
        {listOpen && (
          <ul id={listId} role="listbox" className="jp-AAEPMention-list" aria-label={trans.__('Things to attach')}>
            {choices.map((choice, index) => (
              <li
                key={choice.key}
                id={optionId(index)}
                role="option"
                aria-selected={index === active}
                className={`jp-AAEPMention-option${index === active ? ' jp-mod-active' : ''}`}
                onMouseDown={e => {
                  e.preventDefault(); // keep the focus in the message box
                  choose(choice);
                }}
              >
                <span className="jp-AAEPMention-label">{choice.label}</span>
                {choice.detail && <span className="jp-AAEPMention-detail">{choice.detail}</span>}
              </li>
            ))}
          </ul>
        )}
        {attached.length > 0 && (
          <ul className="jp-AAEPMention-attached" aria-label={trans.__('Attached to your message')}>
            {attached.map(mention => (
              <li key={mention.key} className="jp-AAEPMention-chip">
                <span>{mention.label}</span>
                <button
                  type="button"
                  className="jp-Button jp-mod-styled jp-AAEPMention-remove"
                  aria-label={trans.__('Remove %1', mention.label)}
                  onClick={() => remove(mention)}
                >
                  ×
                </button>
              </li>
            ))}
          </ul>
        )}
      </>
    )
  };
}
