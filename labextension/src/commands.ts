/**
 * The panel's commands, with their ids exported as {@link CommandIDs}: what
 * every shortcut, menu item, palette entry and panel button runs.
 */
import { JupyterFrontEnd } from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import { INotebookTracker } from '@jupyterlab/notebook';
import { TranslationBundle } from '@jupyterlab/translation';
import { Widget } from '@lumino/widgets';

import { Verbosity } from './aaep';
import { AccessibilityChecker } from './accessibilityCheck';
import { CHECK_ACCESSIBILITY, registerAccessibilityCommand } from './accessibilityCommands';
import { Announcer } from './announcer';
import { ChatController } from './controller';
import { CODE_LINE_CLASS } from './components/CodeLines';
import { CONNECT_OUTSIDE_AGENT, registerConnectAgent } from './connectAgentCommand';
import { DESCRIBE_FIGURE, SAVE_FIGURE_ALT, registerFigureCommands } from './figureCommands';
import { FigureDescriber } from './figures';
import { WHAT_MAY_THE_AGENT_DO, registerPermissionsCommand } from './permissionsCommand';
import { panelFocusOf, soon } from './panelFocus';
import { shortcutLabel } from './shortcuts';
import { whichRules } from './rules';

/** Command ids (`jupyter-aaep:verb-noun`). */
export namespace CommandIDs {
  export const openPanel = 'jupyter-aaep:open-panel';
  export const focusInput = 'jupyter-aaep:focus-input';
  export const jumpToConfirmation = 'jupyter-aaep:jump-to-confirmation';
  export const readPendingCode = 'jupyter-aaep:read-pending-code';
  export const approve = 'jupyter-aaep:approve';
  export const reject = 'jupyter-aaep:reject';
  export const stop = 'jupyter-aaep:stop';
  export const undoChanges = 'jupyter-aaep:undo-changes';
  export const togglePause = 'jupyter-aaep:toggle-pause';
  export const continueChat = 'jupyter-aaep:continue';
  export const showChats = 'jupyter-aaep:show-chats';
  export const newChat = 'jupyter-aaep:new-chat';
  export const sayUsage = 'jupyter-aaep:say-usage';
  export const hearLastOutput = 'jupyter-aaep:hear-last-output';
  export const howFarAlong = 'jupyter-aaep:how-far-along';
  export const setVerbosity = 'jupyter-aaep:set-verbosity';
  export const whichRules = 'jupyter-aaep:which-rules';
  export const connectOutsideAgent = CONNECT_OUTSIDE_AGENT;
  export const whatMayTheAgentDo = WHAT_MAY_THE_AGENT_DO;
}

const VERBOSITIES: Verbosity[] = ['terse', 'normal', 'detailed'];

/** What the commands act on. */
export interface ICommandsOptions {
  app: JupyterFrontEnd;
  tracker: INotebookTracker;
  panel: Widget;
  controller: ChatController;
  describer: FigureDescriber;
  /** "Check this notebook's accessibility" (optional: tests register the commands without). */
  checker?: AccessibilityChecker;
  announcer: Announcer;
  trans: TranslationBundle;
  palette: ICommandPalette | null;
  /** Follow the active notebook (when the panel is shown). */
  follow: () => void;
  /** The announcement verbosity setting. */
  verbosity: { get: () => Verbosity; set: (verbosity: Verbosity) => Promise<void> };
}

/** Add every command of the panel (and its palette entries). */
export function registerCommands(options: ICommandsOptions): void {
  const { app, tracker, panel, controller, describer, announcer, trans, palette, follow } = options;
  const pendingConfirmation = () => controller.model?.pending.find(item => item.kind === 'confirmation') ?? null;
  const showPanel = () => {
    app.shell.activateById(panel.id);
  };
  const afterRender = (fn: () => void) => requestAnimationFrame(() => requestAnimationFrame(fn));
  // Only the latest command guards the focus (panelFocus.ts): Ctrl+Shift+Y then Ctrl+Shift+A
  // at once leave the person on the request, not back in the message box.
  const focus = panelFocusOf(panel.node);
  /** Focus `selector` in the panel once it is rendered (and keep it there for a moment); with
   * `start`, the first look waits for it (the turn is taken at once: a later command wins). */
  const focusWhenReady = (selector: string, start?: (look: () => void) => void) =>
    focus.place(() => panel.node.querySelector<HTMLElement>(selector), { start });

  /** The card of the request `id` in the panel, once rendered. */
  const cardOf = (id: string) => panel.node.querySelector<HTMLElement>(`[data-request-id="${CSS.escape(id)}"]`);

  /** Resolve once the chat of the followed notebook is loaded (or failed), within a few seconds. */
  const chatSettled = async (): Promise<void> => {
    await soon(
      () => !(controller.loading || (controller.notebookPath !== null && !controller.model && !controller.error)),
      100
    );
  };
  const requestKey = () => shortcutLabel(app.commands, CommandIDs.jumpToConfirmation);
  /**
   * The request `find` picks in the followed notebook's chat. A key pressed as the page
   * loads (the panel closed, its chat not read yet) first opens the panel and waits for the
   * chat; one pressed as the alert is heard looks again for a second (the chat lists the
   * request a moment after the alert). Only then is the answer "nothing" (the focus then
   * goes to the message box of the panel it opened).
   */
  const pendingRequest = async <T>(find: () => T | null | undefined): Promise<T | null> => {
    const opening = !panel.isVisible || controller.model === null || controller.loading;
    if (opening) {
      showPanel();
      follow();
      await chatSettled();
    }
    const found = await soon(find);
    if (!found && opening) {
      void focusWhenReady('.jp-AAEPComposer-input');
    }
    return found;
  };
  /** Why the focus did not reach request `id`'s card: it was answered meanwhile, or is not drawn yet. */
  const notShown = (id: string) =>
    controller.model?.pending.some(item => item.id === id)
      ? trans.__(
          'The waiting request is not shown in the agent panel yet; try %1 again in a moment.',
          requestKey() ?? trans.__('Go to the Pending Agent Request')
        )
      : trans.__('Nothing is waiting for you any more: the request was answered.');
  app.commands.addCommand(CommandIDs.openPanel, {
    label: trans.__('Open the AI Agent Panel'),
    caption: trans.__('Show the AI agent side panel, put the focus in its message box and say where you are'),
    execute: async () => {
      showPanel();
      follow();
      // Opening the panel takes you there: the focus goes to the message box
      // and you hear which notebook's chat it is and what is in it.
      void focusWhenReady('.jp-AAEPComposer-input', afterRender);
      await chatSettled();
      announcer.announce(controller.whereYouAre(requestKey()));
    }
  });
  app.commands.addCommand(CommandIDs.focusInput, {
    label: trans.__('Focus the AI Agent Message Box'),
    execute: () => {
      showPanel();
      if (controller.notebookPath === null) {
        announcer.announce(trans.__('Open a notebook first: the agent chats about the active notebook.'));
        return;
      }
      void focusWhenReady('.jp-AAEPComposer-input', afterRender);
    }
  });
  app.commands.addCommand(CommandIDs.jumpToConfirmation, {
    label: trans.__('Go to the Pending Agent Request'),
    caption: trans.__('Move focus to the oldest approval or question waiting for you'),
    // Always enabled: with nothing pending it says so instead of doing nothing.
    execute: async () => {
      const request = await pendingRequest(() => controller.model?.pending[0]);
      if (!request) {
        announcer.announce(trans.__('Nothing is waiting for you.'));
        return;
      }
      showPanel();
      const card = await focus.place(() => cardOf(request.id));
      if (card === 'placed') {
        // The answer buttons must be in view, not only the card's top: a tall card (long
        // code, a narrow sidebar) is scrolled to its start, then just enough for its buttons.
        const node = cardOf(request.id);
        node?.scrollIntoView({ block: 'start' });
        node?.querySelector<HTMLElement>('.jp-AAEPCard-actions')?.scrollIntoView({ block: 'nearest' });
      } else if (card === 'missing') {
        announcer.announce(notShown(request.id));
      }
    }
  });
  app.commands.addCommand(CommandIDs.readPendingCode, {
    label: trans.__("Read the Pending Request's Code"),
    caption: trans.__(
      'Move the focus to the first line of the code waiting for your approval; the arrow keys read it line by line and Tab goes on to Approve'
    ),
    execute: async () => {
      const item = await pendingRequest(pendingConfirmation); // pressed as the alert is heard, as above
      if (!item) {
        announcer.announce(trans.__('Nothing is waiting for your approval, so there is no code to read.'));
        return;
      }
      showPanel();
      const line = () => cardOf(item.id)?.querySelector<HTMLElement>(`.${CODE_LINE_CLASS}`) ?? null;
      // The focused line is read alone; the card's summary is not read again.
      const placed = await focus.place(line, { area: () => cardOf(item.id) });
      if (placed === 'placed') {
        line()?.scrollIntoView({ block: 'nearest' });
      } else if (placed === 'missing') {
        announcer.announce(
          cardOf(item.id) ? trans.__('The request waiting for your approval has no code to read.') : notShown(item.id)
        );
      }
    }
  });
  // Answering removes the card's buttons: focus inside the card stays on it (a line of
  // its code stays, and keeps the focus until the outcome takes it).
  const keepFocusInCard = (id: string) => {
    const card = cardOf(id);
    const active = document.activeElement;
    if (card && active && card !== active && card.contains(active) && !active.closest(`.${CODE_LINE_CLASS}`)) {
      card.focus();
    }
  };
  app.commands.addCommand(CommandIDs.approve, {
    label: trans.__('Approve the Pending Agent Action'),
    execute: () => {
      const item = pendingConfirmation();
      if (!item) {
        announcer.announce(trans.__('Nothing is waiting for your approval.'));
        return;
      }
      keepFocusInCard(item.id);
      return controller.session?.reply(item, 'accept');
    }
  });
  app.commands.addCommand(CommandIDs.reject, {
    label: trans.__('Reject the Pending Agent Action'),
    execute: () => {
      const item = pendingConfirmation();
      if (!item) {
        announcer.announce(trans.__('Nothing is waiting for your approval, so there is nothing to reject.'));
        return;
      }
      keepFocusInCard(item.id);
      return controller.session?.reply(item, 'reject');
    }
  });
  app.commands.addCommand(CommandIDs.stop, {
    label: trans.__('Stop the AI Agent'),
    // Says "Nothing is running…" when there is nothing to stop.
    execute: () => controller.control('stop')
  });
  app.commands.addCommand(CommandIDs.undoChanges, {
    label: trans.__("Undo the AI Agent's Last Changes"),
    caption: trans.__(
      'Undo the changes the agent made to the notebook in its latest request; cells others changed since are kept'
    ),
    isVisible: () => controller.model?.supports.revert ?? true,
    // The focus stays where it is: the outcome is announced and shown in the panel.
    execute: () => controller.revert()
  });
  app.commands.addCommand(CommandIDs.togglePause, {
    label: () =>
      controller.model?.status === 'paused' ? trans.__('Resume the AI Agent') : trans.__('Pause the AI Agent'),
    caption: trans.__(
      'Pause the agent at its next safe point, or resume it where it stopped. Guidance can still be sent while it is paused.'
    ),
    isVisible: () => controller.model?.supports.pause ?? true,
    // The focus stays where it is; the change is announced.
    execute: () => controller.session?.togglePause()
  });
  app.commands.addCommand(CommandIDs.continueChat, {
    label: trans.__('Continue the Interrupted Agent Request'),
    caption: trans.__('Start a new session that picks up where the agent stopped (after a restart or an error)'),
    isVisible: () => controller.model?.supports.continue ?? true,
    execute: () => controller.session?.continueChat()
  });
  app.commands.addCommand(CommandIDs.showChats, {
    label: trans.__("Show the Notebook's Agent Chats"),
    caption: trans.__('List the earlier chats of this notebook, to switch to one'),
    execute: () => {
      showPanel();
      if (controller.model === null) {
        announcer.announce(trans.__('Open a notebook first: each notebook has its own chats.'));
        return;
      }
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
    execute: async () => {
      showPanel();
      if (controller.notebookPath === null || controller.model === null) {
        announcer.announce(
          controller.notebookPath === null
            ? trans.__('Open a notebook first: each notebook has its own chats.')
            : trans.__('The chat is still loading; try again in a moment.')
        );
        return;
      }
      await controller.newChat();
      void focusWhenReady('.jp-AAEPComposer-input', afterRender);
    }
  });
  app.commands.addCommand(CommandIDs.hearLastOutput, {
    label: trans.__('Hear the Last Output'),
    caption: trans.__('Say the whole output of the last cell the agent ran in this chat'),
    execute: () => controller.speakLastOutput()
  });
  app.commands.addCommand(CommandIDs.howFarAlong, {
    label: trans.__('How Far Along?'),
    caption: trans.__("Say the running cells' progress, elapsed time and time left"),
    execute: () => controller.speakProgress()
  });
  app.commands.addCommand(CommandIDs.sayUsage, {
    label: trans.__('Say the Token Usage'),
    caption: trans.__("Announce this chat's token usage and estimated cost"),
    execute: () => controller.speakUsage()
  });
  app.commands.addCommand(CommandIDs.whichRules, {
    label: trans.__('Which Rules Apply Here?'),
    caption: trans.__('Say which rules files the agent follows in this notebook, where they are and where they apply'),
    execute: async () => announcer.announce(await whichRules(controller.notebookPath, trans))
  });
  registerFigureCommands({
    app,
    tracker,
    describer,
    announcer,
    trans,
    showPanel: async () => {
      showPanel();
      follow();
      await chatSettled();
    },
    focusInPanel: selector => void focusWhenReady(selector, afterRender)
  });
  if (options.checker) {
    registerAccessibilityCommand({
      app,
      checker: options.checker,
      controller,
      trans,
      showPanel: async () => {
        showPanel();
        follow();
        await chatSettled();
      }
    });
    palette?.addItem({ command: CHECK_ACCESSIBILITY, category: trans.__('AI Agent') });
  }
  registerConnectAgent({ app, announcer, trans });
  registerPermissionsCommand({ app, announcer, trans });
  const verbosityLabels: Record<Verbosity, string> = {
    terse: trans.__('Agent Announcements: Terse'),
    normal: trans.__('Agent Announcements: Normal'),
    detailed: trans.__('Agent Announcements: Detailed')
  };
  app.commands.addCommand(CommandIDs.setVerbosity, {
    label: args => verbosityLabels[args.verbosity as Verbosity] ?? trans.__('Set the Agent Announcement Verbosity'),
    caption: trans.__('How much the screen reader announcements say: terse, normal or detailed.'),
    isToggled: args => options.verbosity.get() === args.verbosity,
    execute: async args => {
      const verbosity = args.verbosity as Verbosity;
      if (!VERBOSITIES.includes(verbosity)) {
        return;
      }
      await options.verbosity.set(verbosity);
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
  palette?.addItem({ command: DESCRIBE_FIGURE, category: trans.__('AI Agent') });
  palette?.addItem({ command: SAVE_FIGURE_ALT, category: trans.__('AI Agent') });
  // Keep enabled states in step with the chat.
  controller.changed.connect(() => app.commands.notifyCommandChanged());
  controller.modelChanged.connect((_, model) => {
    model?.changed.connect(() => app.commands.notifyCommandChanged());
  });
  // Requests say which key jumps to them (users may rebind it).
  const updateShortcut = () => announcer.setRequestShortcut(shortcutLabel(app.commands, CommandIDs.jumpToConfirmation));
  updateShortcut();
  app.commands.keyBindingChanged.connect(updateShortcut);
}
