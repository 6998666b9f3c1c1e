/**
 * The notebook side of "Check this notebook's accessibility": the palette
 * command, and moving to a problem's cell from the panel's list.
 */
import { JupyterFrontEnd } from '@jupyterlab/application';
import { INotebookTracker } from '@jupyterlab/notebook';
import { TranslationBundle } from '@jupyterlab/translation';

import { AccessibilityChecker } from './accessibilityCheck';
import { Announcer } from './announcer';
import { IAccessibilityProblem } from './chatClient';
import { ChatController } from './controller';

export const CHECK_ACCESSIBILITY = 'jupyter-aaep:check-accessibility';

/**
 * Go to the cell of `problem` in its open notebook: the notebook becomes the
 * current tab and the cell the active one, in command mode (the screen reader
 * reads the cell; Enter edits it).
 */
export function goToProblemCell(
  options: { app: JupyterFrontEnd; tracker: INotebookTracker; announcer: Announcer; trans: TranslationBundle },
  notebookPath: string,
  problem: IAccessibilityProblem
): void {
  const { app, tracker, announcer, trans } = options;
  const panel = tracker.find(widget => widget.context.path === notebookPath);
  if (!panel) {
    announcer.announce(trans.__('Open %1 first: the cell is in it.', notebookPath));
    return;
  }
  const notebook = panel.content;
  const index = notebook.widgets.findIndex(cell => cell.model.id === problem.cell_id);
  if (index < 0) {
    announcer.announce(trans.__('That cell no longer exists; check the notebook again.'));
    return;
  }
  app.shell.activateById(panel.id);
  notebook.deselectAll();
  notebook.mode = 'command';
  notebook.activeCellIndex = index;
  void notebook.scrollToCell(notebook.widgets[index], 'center');
  notebook.widgets[index].node.focus();
}

/** Register the command; `showPanel` opens the panel on the active notebook's chat. */
export function registerAccessibilityCommand(options: {
  app: JupyterFrontEnd;
  checker: AccessibilityChecker;
  controller: ChatController;
  trans: TranslationBundle;
  showPanel: () => Promise<void>;
}): void {
  const { app, checker, controller, trans } = options;
  app.commands.addCommand(CHECK_ACCESSIBILITY, {
    label: trans.__("Check This Notebook's Accessibility"),
    caption: trans.__(
      'List what makes this notebook hard to read with a screen reader, by cell: images without alt text, figures without a description, a missing title, skipped headings, tables without headers, links that say nothing'
    ),
    execute: async () => {
      await options.showPanel();
      await checker.check(controller.model?.chatId ?? null, controller.notebookPath);
    }
  });
}
