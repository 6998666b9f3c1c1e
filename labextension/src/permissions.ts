/**
 * Standing permissions ("don't ask again"): the server calls
 * (`aaep/v1/permissions`), what an approval card offers, and the words the
 * list is spoken and shown with. No DOM here; the list is
 * components/PermissionList.tsx, the command permissionsCommand.tsx.
 */
import { TranslationBundle } from '@jupyterlab/translation';

import { isRecord } from './aaep';
import { requestAPI } from './handler';

/** One standing permission as `GET /aaep/v1/permissions` lists it. */
export interface IPermission {
  id: string;
  rule: string;
  scope: 'chat' | 'notebook' | 'always';
  effect: 'allow' | 'deny';
  notebook_path: string | null;
  chat_id: string | null;
  /** ISO 8601 UTC. */
  granted_at: string;
  /** The notebook the person was in when they gave it. */
  granted_in: string | null;
  /** The server's sentence: what it allows, where, when and where it was given. */
  sentence: string;
  /** False when the administrator has since forbidden it (it no longer applies). */
  applies?: boolean;
}

/** One permission in words: the server's sentence, and whether it still applies. */
export function permissionWords(permission: IPermission, trans: TranslationBundle): string {
  return permission.applies === false
    ? trans.__('%1 Turned off by the administrator: it does not apply.', permission.sentence)
    : permission.sentence;
}

/** A grant an approval card offers with its approval (`extra_context.permission_offers`). */
export interface IPermissionOffer {
  rule: string;
  scope: string;
  /** The button's words: exactly what it allows, and where. */
  label: string;
}

/** What a reply carries to ask for the offered grant (`grant`, beside `stream_key`). */
export interface IPermissionWish {
  rule: string;
  scope: string;
}

/** The card's offers as the server gave them, narrowest first ("in this chat", then "in
 * this notebook"); none for flagged code, and malformed ones are skipped. */
export function readOffers(extra: Record<string, unknown>): IPermissionOffer[] {
  const offers = extra.permission_offers;
  if (!Array.isArray(offers)) {
    return [];
  }
  return offers
    .filter(
      (offer): offer is IPermissionOffer =>
        isRecord(offer) &&
        typeof offer.rule === 'string' &&
        typeof offer.scope === 'string' &&
        typeof offer.label === 'string' &&
        offer.label.length > 0
    )
    .map(({ rule, scope, label }) => ({ rule, scope, label }));
}

/** The words of the permission that approved a step ("your permission for unflagged code
 * in this notebook"), or null when none did (`extra_context.granted_by`). */
export function grantedWords(extra: Record<string, unknown>): string | null {
  const granted = extra.granted_by;
  return isRecord(granted) && typeof granted.words === 'string' && granted.words ? granted.words : null;
}

/** Every permission, in the order given. */
export async function listPermissions(): Promise<IPermission[]> {
  const answer = await requestAPI<{ permissions?: IPermission[] }>(['permissions']);
  return answer.permissions ?? [];
}

/** Take a permission back: the next such step asks again. */
export async function revokePermission(id: string): Promise<void> {
  await requestAPI<unknown>(['permissions', id], { method: 'DELETE' });
}

/** The list as one announcement: how many, then each numbered, then how to take one back. */
export function permissionListWords(list: IPermission[], trans: TranslationBundle): string {
  if (list.length === 0) {
    return trans.__(
      'The agent may do nothing without asking: you have given no standing permissions. Choose "don\'t ask again" on an approval card to give one.'
    );
  }
  const items = list.map((p, i) => `${i + 1}. ${permissionWords(p, trans)}`).join(' ');
  return trans._n(
    'The agent may do %1 thing without asking: %2 To take it back, press its Take back button.',
    'The agent may do %1 things without asking: %2 To take one back, Tab to its Take back button.',
    list.length,
    items
  );
}

/** The name of one item's Take back button ("Take back 2: Without asking: …"). */
export function revokeLabel(permission: IPermission, index: number, trans: TranslationBundle): string {
  return trans.__('Take back %1: %2', index + 1, permissionWords(permission, trans));
}

/** What is said once a permission is taken back. */
export function revokedWords(permission: IPermission, left: number, trans: TranslationBundle): string {
  const rest =
    left === 0
      ? trans.__('No standing permissions are left: the agent asks again.')
      : trans._n('%1 permission is left.', '%1 permissions are left.', left);
  return trans.__('Taken back: %1 %2', permission.sentence, rest);
}

/**
 * Where the focus goes after item `index` of `count` was taken back: the item
 * that took its place, else the one before, else nothing (null: the list's
 * heading, since the list is empty).
 */
export function focusAfterRevoke(count: number, index: number): number | null {
  const left = count - 1;
  if (left <= 0) {
    return null;
  }
  return Math.min(index, left - 1);
}
