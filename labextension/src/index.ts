/**
 * jupyter-aaep frontend: plugins and wiring only.
 */
import { ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import { INotebookTracker } from '@jupyterlab/notebook';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { ITranslator, nullTranslator } from '@jupyterlab/translation';

import { AccessibilityChecker } from './accessibilityCheck';
import { goToProblemCell } from './accessibilityCommands';
import { Announcer } from './announcer';
import { CitationNavigator, followViewCitations } from './citationNavigator';
import { CommandIDs, registerCommands } from './commands';
import { explorableFigureFactory } from './explorableFigure';
import { FigureDescriber } from './figures';
import { AgentChooser } from './agentChoice';
import { ModelChooser } from './modelChoice';
import { NotebookMentions } from './mentions';
import { ChatController } from './controller';
import { PlanDrive } from './planDrive';
import { readSettings } from './settings';
import {
  DEFAULT_SETTINGS,
  IAAEPPanel,
  IAAEPSettings,
  NOTEBOOK_WIDGET_MODULE,
  NOTEBOOK_WIDGET_VERSION,
  PLUGIN_ID
} from './tokens';
import { AgentPanel } from './widgets/AgentPanel';

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
  // Plan mode's plans (a hidden folder the contents API does not serve), for "Edit the plan".
  app.serviceManager.contents.addDrive(new PlanDrive());
  const describer = new FigureDescriber({ controller, announcer, trans });
  const chooser = new ModelChooser({ controller, announcer, trans });
  const citations = new CitationNavigator({
    tracker,
    shell: app.shell,
    announcer,
    trans,
    notebookPath: () => controller.notebookPath
  });
  followViewCitations(tracker, citations); // the %aaep view's links, for as long as the page lives
  const checker = new AccessibilityChecker({ announcer, trans });
  const agentChooser = new AgentChooser({ controller, announcer, trans });
  const panel = new AgentPanel({
    controller,
    describer,
    chooser,
    agentChooser,
    mentions: new NotebookMentions({
      tracker,
      contents: app.serviceManager.contents,
      controller,
      trans,
      announcer
    }),
    rendermime,
    commands: app.commands,
    translator: translator ?? nullTranslator,
    citations,
    accessibility: {
      checker,
      goTo: (path, problem) => goToProblemCell({ app, tracker, announcer, trans }, path, problem)
    }
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

  let loaded: ISettingRegistry.ISettings | null = null;
  registerCommands({
    app,
    tracker,
    panel,
    controller,
    describer,
    checker,
    announcer,
    trans,
    palette,
    follow,
    verbosity: {
      get: () => settings.verbosity,
      set: async verbosity => {
        if (loaded) {
          await loaded.set('verbosity', verbosity);
        } else {
          applySettings({ ...settings, verbosity });
        }
      }
    }
  });
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
      void controller.session?.renegotiate({ preferred_verbosity: next.verbosity });
    }
    app.commands.notifyCommandChanged(CommandIDs.setVerbosity);
  };
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
  description: 'An accessible side panel for the jupyter-aaep agent: chat, live announcements, approvals.',
  autoStart: true,
  requires: [INotebookTracker, IRenderMimeRegistry],
  optional: [ITranslator, ILayoutRestorer, ISettingRegistry, ICommandPalette],
  provides: IAAEPPanel,
  activate
};

/**
 * Register the `%aaep` view's Approve and Reject with JupyterLab's widget
 * manager. `@jupyter-widgets/base` is loaded on demand (it is shared by the
 * widget manager, not bundled here): where it is missing the panel still
 * works, and the view says to approve in the side panel.
 */
async function activateNotebookApproval(app: JupyterFrontEnd, translator: ITranslator | null): Promise<void> {
  const trans = (translator ?? nullTranslator).load('jupyter_aaep');
  try {
    const base = await import('@jupyter-widgets/base');
    const registry = await app.resolveOptionalService(base.IJupyterWidgetRegistry);
    if (!registry) {
      return;
    }
    registry.registerWidget({
      name: NOTEBOOK_WIDGET_MODULE,
      version: NOTEBOOK_WIDGET_VERSION,
      exports: async () => (await import('./widgets/NotebookApprovalView')).notebookApprovalExports(trans)
    });
  } catch (error) {
    console.info('jupyter-aaep: no widget manager; approve in the side panel.', error);
  }
}

/** The notebook's own Approve and Reject (the `%aaep` view). */
const notebookApproval: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-aaep:notebook-approval',
  description: 'Draws Approve and Reject in the %aaep view and answers from the browser, never from the kernel.',
  autoStart: true,
  optional: [ITranslator],
  activate: activateNotebookApproval
};

/** Figures explorable by keyboard (maidr), in every notebook and console. */
const explorableFigures: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-aaep:explorable-figures',
  description:
    "Shows a figure that carries its data as its image, explorable by keyboard with maidr's script from this server.",
  autoStart: true,
  requires: [IRenderMimeRegistry],
  optional: [ITranslator],
  activate: (_app: JupyterFrontEnd, rendermime: IRenderMimeRegistry, translator: ITranslator | null) => {
    // Synchronously, before notebooks are restored: each notebook copies the registry when it opens.
    rendermime.addFactory(explorableFigureFactory((translator ?? nullTranslator).load('jupyter_aaep')));
  }
};

export default [plugin, notebookApproval, explorableFigures];
export * from './tokens';
