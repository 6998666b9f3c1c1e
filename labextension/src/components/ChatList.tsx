/**
 * The notebook's chats: a disclosure button that shows the earlier chats
 * (newest first, a page at a time) to switch to, and New chat.
 *
 * Escape closes the list and puts the focus back on its button; choosing a
 * chat closes it too and moves the focus to the message box.
 */
import { TranslationBundle } from '@jupyterlab/translation';
import React, { useEffect, useRef, useState } from 'react';

import { IChatPage, IChatSummary } from '../controller';
import { useId } from './hooks';

/** Props of {@link ChatList}. */
export interface IChatListProps {
  trans: TranslationBundle;
  /** The chat shown now (marked `aria-current`). */
  currentChatId: string | null;
  /**
   * What the panel knows of the chat shown now; it is newer than the list
   * (which may be read while the session is still winding down).
   */
  currentState?: Pick<IChatSummary, 'status' | 'canContinue'>;
  /** Whether the list is open (the panel owns it, so a command can open it). */
  open: boolean;
  onOpenChange: (open: boolean) => void;
  listChats: (before: string | null) => Promise<IChatPage>;
  onSwitch: (chatId: string) => void;
  onNewChat: () => void;
  /** Says something politely (how many chats were found, a failure). */
  announce: (text: string) => void;
  /** `aria-keyshortcuts` of the list and New chat commands. */
  listShortcut?: string;
  newShortcut?: string;
  /** Whether the connection is down. */
  disabled: boolean;
}

/** The status of a chat in words. */
function statusLabel(chat: IChatSummary, trans: TranslationBundle): string {
  if (chat.canContinue) {
    return trans.__('interrupted, can continue');
  }
  return { idle: trans.__('finished'), running: trans.__('working'), paused: trans.__('paused') }[chat.status];
}

/** A date for people, in their locale ("23 Nov 2026, 06:40"). */
function when(ms: number): string {
  if (!Number.isFinite(ms)) {
    return '';
  }
  return new Date(ms).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });
}

/**
 * Chats of the notebook and New chat.
 */
export function ChatList(props: IChatListProps): JSX.Element {
  const { trans, open, currentChatId } = props;
  const listId = useId('jp-AAEPChats-list');
  const toggle = useRef<HTMLButtonElement>(null);
  const [chats, setChats] = useState<IChatSummary[]>([]);
  const [next, setNext] = useState<string | null>(null);
  const [loading, setLoading] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const latest = useRef(props);
  latest.current = props;

  const load = async (before: string | null) => {
    setLoading(true);
    setError(null);
    try {
      const page = await latest.current.listChats(before);
      setChats(previous => (before ? [...previous, ...page.chats] : page.chats));
      setNext(page.next);
      const first = page.chats[0];
      if (before && first) {
        // The focus moves to the first older chat (the button may go away).
        requestAnimationFrame(() =>
          document.querySelector<HTMLElement>(`.jp-AAEPChats-item[data-chat-id="${CSS.escape(first.chatId)}"]`)?.focus()
        );
      }
      latest.current.announce(
        before
          ? trans._n('1 older chat shown.', '%1 older chats shown.', page.chats.length)
          : trans._n('1 chat in this notebook.', '%1 chats in this notebook.', page.chats.length)
      );
    } catch (e) {
      const text = trans.__('Could not list the chats: %1', String((e as Error)?.message ?? e));
      setError(text);
      latest.current.announce(text);
    } finally {
      setLoading(false);
    }
  };

  // Read the first page each time the list opens (chats change between openings).
  useEffect(() => {
    if (open) {
      void load(null);
    }
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [open]);

  const close = () => {
    props.onOpenChange(false);
    toggle.current?.focus();
  };

  return (
    <div className="jp-AAEPChats">
      <div className="jp-AAEPChats-buttons">
        <button
          ref={toggle}
          type="button"
          className="jp-Button jp-mod-styled jp-AAEPChats-toggle"
          aria-expanded={open}
          aria-controls={open ? listId : undefined}
          aria-keyshortcuts={props.listShortcut}
          onClick={() => props.onOpenChange(!open)}
        >
          {trans.__('Chats')}
        </button>
        <button
          type="button"
          className="jp-Button jp-mod-styled jp-AAEPChats-new"
          aria-disabled={props.disabled}
          aria-keyshortcuts={props.newShortcut}
          onClick={() => !props.disabled && props.onNewChat()}
        >
          {trans.__('New chat')}
        </button>
      </div>
      {open && (
        <section
          id={listId}
          className="jp-AAEPChats-list"
          aria-label={trans.__('Chats of this notebook')}
          aria-busy={loading}
          onKeyDown={e => {
            if (e.key === 'Escape') {
              e.preventDefault();
              e.stopPropagation();
              close();
            }
          }}
        >
          {error && <p className="jp-AAEPChats-error">{error}</p>}
          {!loading && !error && chats.length === 0 && (
            <p className="jp-AAEPChats-empty">{trans.__('No chats yet.')}</p>
          )}
          {chats.length > 0 && (
            <ul className="jp-AAEPChats-items">
              {chats.map(chat => {
                const current = chat.chatId === currentChatId;
                const shown = current && props.currentState ? { ...chat, ...props.currentState } : chat;
                const date = when(chat.updated);
                return (
                  <li key={chat.chatId}>
                    <button
                      type="button"
                      className={`jp-AAEPChats-item${current ? ' jp-mod-current' : ''}`}
                      aria-current={current ? 'true' : undefined}
                      data-chat-id={chat.chatId}
                      onClick={() => {
                        props.onOpenChange(false);
                        if (!current) {
                          props.onSwitch(chat.chatId);
                        }
                      }}
                    >
                      <span className="jp-AAEPChats-title">{chat.title || trans.__('Untitled chat')}</span>
                      <span className="jp-AAEPChats-meta">
                        {[date, statusLabel(shown, trans), current ? trans.__('shown now') : '']
                          .filter(Boolean)
                          .join(' · ')}
                      </span>
                    </button>
                  </li>
                );
              })}
            </ul>
          )}
          {loading && <p className="jp-AAEPChats-loading">{trans.__('Loading chats…')}</p>}
          {next && (
            <button
              type="button"
              className="jp-Button jp-mod-styled jp-AAEPChats-more"
              aria-disabled={loading}
              onClick={() => !loading && void load(next)}
            >
              {trans.__('Show older chats')}
            </button>
          )}
        </section>
      )}
    </div>
  );
}
