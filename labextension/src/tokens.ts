/**
 * Public tokens and shared interfaces of the jupyter-aaep frontend.
 */
import { Token } from '@lumino/coreutils';
import { ISignal } from '@lumino/signaling';

import { Verbosity } from './aaep';
import type { Announcer } from './announcer';
import type { ChatModel, ApprovalMode } from './model';

/** The id of the main plugin, also the settings key. */
export const PLUGIN_ID = 'jupyter-aaep:plugin';

/**
 * The widget module the `%aaep` view's approvals are registered under (the
 * kernel's `ApprovalWidget` names it: `_view_module`, `_view_module_version`).
 */
export const NOTEBOOK_WIDGET_MODULE = 'jupyter-aaep';
/**
 * The version of what the kernel side and this view agree on (the traits
 * `chat_id` and `request_id`), not the package's: a kernel of another
 * jupyter-aaep release still gets its buttons while this stays the same.
 */
export const NOTEBOOK_WIDGET_VERSION = '1.0.0';

/** User preferences from `schema/plugin.json`. */
export interface IAAEPSettings {
  /** How much the announcer says. */
  verbosity: Verbosity;
  /** Polite announcements per second. */
  maxAnnouncementsPerSecond: number;
  /** Approval mode a new chat starts in. */
  approvalMode: ApprovalMode;
  /** Which side the panel opens on. */
  panelArea: 'left' | 'right';
  /** Record every announcement in `window.__aaepAnnouncements`. */
  debugAnnouncements: boolean;
  /** Show and announce long cells the person runs (not only the agent's). */
  announcePersonRuns: boolean;
}

/** Defaults, identical to the schema's. */
export const DEFAULT_SETTINGS: IAAEPSettings = {
  verbosity: 'normal',
  maxAnnouncementsPerSecond: 1,
  approvalMode: 'ask',
  panelArea: 'right',
  debugAnnouncements: false,
  announcePersonRuns: true
};

/**
 * The agent panel: its announcer and the chat of the active notebook.
 */
export interface IAAEPPanel {
  /** The announcer every part of the UI speaks through. */
  readonly announcer: Announcer;
  /** The chat of the active notebook, or `null`. */
  readonly model: ChatModel | null;
  /** Emitted when the active chat changes. */
  readonly modelChanged: ISignal<unknown, ChatModel | null>;
}

/** The token of {@link IAAEPPanel}. */
export const IAAEPPanel = new Token<IAAEPPanel>(
  'jupyter-aaep:IAAEPPanel',
  'The jupyter-aaep agent panel: its announcer and the active chat.'
);
