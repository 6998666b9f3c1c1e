/**
 * jupyter-aaep frontend: plugins and wiring only.
 */
import {
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import { INotebookTracker } from '@jupyterlab/notebook';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { ITranslator, nullTranslator } from '@jupyterlab/translation';

import { Announcer } from './announcer';
import { ChatController } from './controller';
import { Verbosity } from './aaep';
import { readSettings } from './settings';
import { shortcutLabel } from './shortcuts';
import { DEFAULT_SETTINGS, IAAEPPanel, IAAEPSettings, PLUGIN_ID } from './tokens';
import { AgentPanel } from './widgets/AgentPanel';

/** Command ids (`jupyter-aaep:verb-noun`). */
namespace CommandIDs {
  export const openPanel = 'jupyter-aaep:open-panel';
  export const focusInput = 'jupyter-aaep:focus-input';
  export const jumpToConfirmation = 'jupyter-aaep:jump-to-confirmation';
  export const approve = 'jupyter-aaep:approve';
  export const reject = 'jupyter-aaep:reject';
  export const stop = 'jupyter-aaep:stop';
  export const undoChanges = 'jupyter-aaep:undo-changes';
  export const togglePause = 'jupyter-aaep:toggle-pause';
  export const continueChat = 'jupyter-aaep:continue';
  export const showChats = 'jupyter-aaep:show-chats';
  export const newChat = 'jupyter-aaep:new-chat';
  export const sayUsage = 'jupyter-aaep:say-usage';
  export const setVerbosity = 'jupyter-aaep:set-verbosity';
}

const VERBOSITIES: Verbosity[] = ['terse', 'normal', 'detailed'];

/**
 * Activate the agent panel: announcer, controller, side panel, commands and
 * settings.
 */
async function activate(
  app: JupyterFrontEnd,
  tracker: INotebookTracker,
  rendermime: IRenderMimeRegistry,
  translator: ITranslator | null,
  restorer: ILayoutRestorer | null,
  settingRegistry: ISettingRegistry | null,
  palette: ICommandPalette | null
): Promise<IAAEPPanel> {
  const trans = (translator ?? nullTranslator).load('jupyter_aaep');
  const debugFromUrl = new URLSearchParams(window.location.search).has('aaepDebug');
  let settings: IAAEPSettings = { ...DEFAULT_SETTINGS, debugAnnouncements: debugFromUrl };

  const announcer = new Announcer(trans, {
    verbosity: settings.verbosity,
    maxPerSecond: settings.maxAnnouncementsPerSecond,
    debugLog: settings.debugAnnouncements
  });
  // The live regions live on <body>, so announcements continue while the
  // panel is collapsed (hidden live regions are not read).
  document.body.appendChild(announcer.node);

  const controller = new ChatController({ announcer, trans, settings: () => settings });
  const panel = new AgentPanel({
    controller,
    rendermime,
    commands: app.commands,
    translator: translator ?? nullTranslator
  });
  app.shell.add(panel, settings.panelArea, { rank: 900 });
  restorer?.add(panel, 'jupyter-aaep-panel');

  // Follow the active notebook while the panel is visible; a hidden panel
  // keeps its chat (and its announcements) until it is shown again.
  const follow = () => {
    if (panel.isVisible) {
      void controller.openNotebook(tracker.currentWidget?.context.path ?? null);
    }
  };
  tracker.currentChanged.connect(follow);
  tracker.widgetUpdated.connect(follow);
  panel.visibilityChanged.connect(follow);
  void app.restored.then(follow);

  const pendingConfirmation = () =>
    controller.model?.pending.find(item => item.kind === 'confirmation') ?? null;
  const showPanel = () => {
    app.shell.activateById(panel.id);
  };
  const afterRender = (fn: () => void) => requestAnimationFrame(() => requestAnimationFrame(fn));
  /**
   * Focus `selector` in the panel once it is rendered. Activating the panel
   * may move the focus a moment later, so it is checked again for a while.
   */
  const focusWhenReady = (selector: string, tries = 20) => {
    const target = panel.node.querySelector<HTMLElement>(selector);
    if (target && document.activeElement !== target) {
      target.focus();
    }
    if (tries > 0) {
      window.setTimeout(() => focusWhenReady(selector, target ? Math.min(tries - 1, 4) : tries - 1), 50);
    }
  };

  app.commands.addCommand(CommandIDs.openPanel, {
    label: trans.__('Open the AI Agent Panel'),
    caption: trans.__('Show the AI agent side panel'),
    execute: showPanel
  });
  app.commands.addCommand(CommandIDs.focusInput, {
    label: trans.__('Focus the AI Agent Message Box'),
    execute: () => {
      showPanel();
      afterRender(() =>
        panel.node.querySelector<HTMLTextAreaElement>('.jp-AAEPComposer-input')?.focus()
      );
    }
  });
  app.commands.addCommand(CommandIDs.jumpToConfirmation, {
    label: trans.__('Go to the Pending Agent Request'),
    caption: trans.__('Move focus to the oldest approval or question waiting for you'),
    isEnabled: () => (controller.model?.pending.length ?? 0) > 0,
    execute: () => {
      const first = controller.model?.pending[0];
      if (!first) {
        announcer.announce(trans.__('Nothing is waiting for your answer.'));
        return;
      }
      showPanel();
      afterRender(() => {
        const card = panel.node.querySelector<HTMLElement>(
          `[data-request-id="${CSS.escape(first.id)}"]`
        );
        card?.scrollIntoView({ block: 'nearest' });
        card?.focus();
      });
    }
  });
  // Answering removes the card's buttons: focus inside the card stays on it.
  const keepFocusInCard = (id: string) => {
    const card = panel.node.querySelector<HTMLElement>(`[data-request-id="${CSS.escape(id)}"]`);
    if (card && card !== document.activeElement && card.contains(document.activeElement)) {
      card.focus();
    }
  };
  app.commands.addCommand(CommandIDs.approve, {
    label: trans.__('Approve the Pending Agent Action'),
    isEnabled: () => pendingConfirmation() !== null,
    execute: () => {
      const item = pendingConfirmation();
      if (item) {
        keepFocusInCard(item.id);
        return controller.reply(item, 'accept');
      }
    }
  });
  app.commands.addCommand(CommandIDs.reject, {
    label: trans.__('Reject the Pending Agent Action'),
    isEnabled: () => pendingConfirmation() !== null,
    execute: () => {
      const item = pendingConfirmation();
      if (item) {
        keepFocusInCard(item.id);
        return controller.reply(item, 'reject');
      }
    }
  });
  app.commands.addCommand(CommandIDs.stop, {
    label: trans.__('Stop the AI Agent'),
    isEnabled: () => (controller.model?.isRunning ?? false) && (controller.model?.supports.stop ?? false),
    execute: () => controller.control('stop')
  });
  app.commands.addCommand(CommandIDs.undoChanges, {
    label: trans.__("Undo the AI Agent's Last Changes"),
    caption: trans.__(
      "Put the notebook's cells back as they were before the agent's latest request"
    ),
    isEnabled: () =>
      (controller.model?.canRevert ?? false) && controller.model?.connection === 'open',
    isVisible: () => controller.model?.supports.revert ?? true,
    // The focus stays where it is: the outcome is announced and shown in the panel.
    execute: () => controller.revert()
  });
  app.commands.addCommand(CommandIDs.togglePause, {
    label: () =>
      controller.model?.status === 'paused'
        ? trans.__('Resume the AI Agent')
        : trans.__('Pause the AI Agent'),
    caption: trans.__(
      'Pause the agent at its next safe point, or resume it where it stopped. Guidance can still be sent while it is paused.'
    ),
    isEnabled: () => (controller.model?.isRunning ?? false) && (controller.model?.supports.pause ?? false),
    isVisible: () => controller.model?.supports.pause ?? true,
    // The focus stays where it is; the change is announced.
    execute: () => controller.togglePause()
  });
  app.commands.addCommand(CommandIDs.continueChat, {
    label: trans.__('Continue the Interrupted Agent Request'),
    caption: trans.__('Start a new session that picks up where the agent stopped (after a restart or an error)'),
    isEnabled: () => controller.model?.canContinue ?? false,
    isVisible: () => controller.model?.supports.continue ?? true,
    execute: () => controller.continueChat()
  });
  app.commands.addCommand(CommandIDs.showChats, {
    label: trans.__("Show the Notebook's Agent Chats"),
    caption: trans.__('List the earlier chats of this notebook, to switch to one'),
    isEnabled: () => controller.model !== null,
    execute: () => {
      showPanel();
      controller.requestChatList();
      // Focus the chat shown now in the list, or the first one, once it has loaded.
      let tries = 0;
      const focusList = () => {
        const list = panel.node.querySelector('.jp-AAEPChats-list');
        const target =
          list?.querySelector<HTMLElement>('.jp-AAEPChats-item[aria-current="true"]') ??
          list?.querySelector<HTMLElement>('.jp-AAEPChats-item');
        if (target) {
          target.focus();
        } else if (++tries < 60) {
          window.setTimeout(focusList, 50);
        } else {
          panel.node.querySelector<HTMLElement>('.jp-AAEPChats-toggle')?.focus();
        }
      };
      afterRender(focusList);
    }
  });
  app.commands.addCommand(CommandIDs.newChat, {
    label: trans.__('Start a New Agent Chat'),
    caption: trans.__('Start an empty chat for this notebook; earlier chats stay in the chat list'),
    isEnabled: () => controller.notebookPath !== null && controller.model !== null,
    execute: async () => {
      showPanel();
      await controller.newChat();
      afterRender(() => focusWhenReady('.jp-AAEPComposer-input'));
    }
  });
  app.commands.addCommand(CommandIDs.sayUsage, {
    label: trans.__('Say the Token Usage'),
    caption: trans.__("Announce this chat's token usage and estimated cost"),
    execute: () => controller.speakUsage()
  });
  // Verbosity: a setting, and commands to change it quickly from the keyboard.
  let loaded: ISettingRegistry.ISettings | null = null;
  const verbosityLabels: Record<Verbosity, string> = {
    terse: trans.__('Agent Announcements: Terse'),
    normal: trans.__('Agent Announcements: Normal'),
    detailed: trans.__('Agent Announcements: Detailed')
  };
  const applySettings = (next: IAAEPSettings) => {
    const previous = settings;
    settings = next;
    announcer.configure({
      verbosity: next.verbosity,
      maxPerSecond: next.maxAnnouncementsPerSecond,
      debugLog: next.debugAnnouncements
    });
    if (next.panelArea !== previous.panelArea) {
      app.shell.add(panel, next.panelArea, { rank: 900 });
    }
    if (next.verbosity !== previous.verbosity) {
      // The producer shapes summaries per subscription: ask for the new level.
      void controller.renegotiate({ preferred_verbosity: next.verbosity });
    }
    app.commands.notifyCommandChanged(CommandIDs.setVerbosity);
  };
  app.commands.addCommand(CommandIDs.setVerbosity, {
    label: args =>
      verbosityLabels[args.verbosity as Verbosity] ?? trans.__('Set the Agent Announcement Verbosity'),
    caption: trans.__(
      'How much the screen reader announcements say: terse, normal or detailed.'
    ),
    isToggled: args => settings.verbosity === args.verbosity,
    execute: async args => {
      const verbosity = args.verbosity as Verbosity;
      if (!VERBOSITIES.includes(verbosity)) {
        return;
      }
      if (loaded) {
        await loaded.set('verbosity', verbosity);
      } else {
        applySettings({ ...settings, verbosity });
      }
      announcer.announce(verbosityLabels[verbosity]);
    }
  });

  if (palette) {
    const category = trans.__('AI Agent');
    for (const command of Object.values(CommandIDs)) {
      if (command === CommandIDs.setVerbosity) {
        for (const verbosity of VERBOSITIES) {
          palette.addItem({ command, category, args: { verbosity } });
        }
      } else {
        palette.addItem({ command, category });
      }
    }
  }
  // Keep enabled states in step with the chat.
  controller.changed.connect(() => app.commands.notifyCommandChanged());
  controller.modelChanged.connect((_, model) => {
    model?.changed.connect(() => app.commands.notifyCommandChanged());
  });
  // Requests say which key jumps to them (users may rebind it).
  const updateShortcut = () =>
    announcer.setRequestShortcut(shortcutLabel(app.commands, CommandIDs.jumpToConfirmation));
  updateShortcut();
  app.commands.keyBindingChanged.connect(updateShortcut);

  if (settingRegistry) {
    try {
      loaded = await settingRegistry.load(PLUGIN_ID);
      const source = loaded;
      applySettings(readSettings(source.composite, debugFromUrl));
      source.changed.connect(() => applySettings(readSettings(source.composite, debugFromUrl)));
    } catch (error) {
      console.warn(`jupyter-aaep: could not load settings for ${PLUGIN_ID}`, error);
    }
  }

  return {
    announcer,
    get model() {
      return controller.model;
    },
    modelChanged: controller.modelChanged
  };
}

/** The agent side panel plugin. */
const plugin: JupyterFrontEndPlugin<IAAEPPanel> = {
  id: PLUGIN_ID,
  description:
    'An accessible side panel for the jupyter-aaep agent: chat, live announcements, approvals.',
  autoStart: true,
  requires: [INotebookTracker, IRenderMimeRegistry],
  optional: [ITranslator, ILayoutRestorer, ISettingRegistry, ICommandPalette],
  provides: IAAEPPanel,
  activate
};

export default [plugin];
export * from './tokens';
