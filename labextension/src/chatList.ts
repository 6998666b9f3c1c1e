/**
 * Which chats a notebook has: one page of them for the chat list, the one
 * to open when the panel follows a notebook (its newest, or a new one), and
 * the description of a chosen one. Calls the chat client's endpoints only.
 */
import { TranslationBundle } from '@jupyterlab/translation';

import { isRecord } from './aaep';
import { AAEPRequestError, IChatInfo, createChat, getChat, listChats } from './chatClient';

/** One of the notebook's chats, as the chat list shows it. */
export interface IChatSummary {
  chatId: string;
  title: string;
  /** Epoch ms of the last change (or creation), NaN when unknown. */
  updated: number;
  status: 'idle' | 'running' | 'paused';
  canContinue: boolean;
}

/** A page of the notebook's chats, newest first. */
export interface IChatPage {
  chats: IChatSummary[];
  /** Cursor of the next (older) page, or `null` at the end. */
  next: string | null;
}

/** How many chats one page of the list asks for. */
export const CHAT_PAGE_SIZE = 20;

/** The list's line of a chat, or `null` for an entry without an id. */
export function summarise(info: IChatInfo): IChatSummary | null {
  if (!info.chat_id) {
    return null;
  }
  const when = Date.parse(info.updated ?? info.created ?? '');
  return {
    chatId: info.chat_id,
    title: typeof info.title === 'string' ? info.title : '',
    updated: when,
    status: info.paused ? 'paused' : info.status === 'running' ? 'running' : 'idle',
    canContinue: info.can_continue === true
  };
}

/**
 * One page of the notebook's chats, newest first (`before` is the cursor of
 * the previous page). A server without pages answers all at once.
 *
 * @throws AAEPRequestError when the server cannot list them.
 */
export async function chatPage(path: string, before: string | null): Promise<IChatPage> {
  const query: Record<string, string> = { notebook_path: path, limit: String(CHAT_PAGE_SIZE) };
  if (before) {
    query.before = before;
  }
  const answer = await listChats(query);
  const chats = (answer?.chats ?? [])
    .filter(c => !c.notebook_path || c.notebook_path === path)
    .map(summarise)
    .filter((c): c is IChatSummary => c !== null);
  return { chats, next: typeof answer?.next === 'string' && answer.next ? answer.next : null };
}

/** What a new chat starts with: its notebook, and the approval mode of the settings. */
export interface INewChat {
  notebook_path: string;
  approval_mode: string;
}

/** The notebook's newest chat, or a new one, described (`GET chats/{id}`). */
export async function findOrCreateChat(newChat: INewChat, trans: TranslationBundle): Promise<IChatInfo> {
  const path = newChat.notebook_path;
  const list = await listChats({ notebook_path: path });
  let chat = (list?.chats ?? []).find(c => c.notebook_path === path && c.chat_id);
  if (!chat) {
    chat = await createChat(newChat);
  }
  if (!chat?.chat_id) {
    throw new AAEPRequestError(500, trans.__('The server did not return a chat id.'), false);
  }
  const details = await getChat(chat.chat_id);
  return { ...chat, ...(isRecord(details) ? details : {}) };
}

/** A chosen chat, described. */
export async function chatDetails(chatId: string, trans: TranslationBundle): Promise<IChatInfo> {
  const details = await getChat(chatId);
  if (!isRecord(details)) {
    throw new AAEPRequestError(500, trans.__('The server did not describe the chat.'), false);
  }
  return { chat_id: chatId, ...details };
}
