/**
 * The notebook side of "Describe this figure": the commands (palette and
 * the cell context menu), finding the figure of the active cell (or the
 * output right-clicked), and the `alt` attribute of the open notebook's
 * figures, set from their stored alt text (JupyterLab's image renderer does
 * not read it).
 */
import { JupyterFrontEnd } from '@jupyterlab/application';
import type { Cell, CodeCell } from '@jupyterlab/cells';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { TranslationBundle } from '@jupyterlab/translation';

import { Announcer } from './announcer';
import { FigureDescriber, IFigureTarget, altOf, findFigure } from './figures';

export const DESCRIBE_FIGURE = 'jupyter-aaep:describe-figure';
export const SAVE_FIGURE_ALT = 'jupyter-aaep:save-figure-alt';

/** Whether a cell widget is a code cell (duck-typed: the cells package is the application's). */
function isCodeCell(cell: Cell | null | undefined): cell is CodeCell {
  return !!cell && cell.model.type === 'code' && 'outputArea' in cell;
}

/** The outputs of a code cell as plain objects. */
function outputsOf(cell: CodeCell): { data: Record<string, unknown>; metadata: Record<string, unknown> }[] {
  // A cell a collaborator's or the agent's move re-created is disposed: its outputs are gone.
  const outputs = cell.isDisposed ? null : cell.model?.outputs;
  const list: { data: Record<string, unknown>; metadata: Record<string, unknown> }[] = [];
  if (!outputs) {
    return list;
  }
  for (let i = 0; i < outputs.length; i++) {
    const output = outputs.get(i);
    list.push({
      data: (output.data ?? {}) as Record<string, unknown>,
      metadata: (output.metadata ?? {}) as Record<string, unknown>
    });
  }
  return list;
}

/** Give every rendered figure of `panel` that has stored alt text its `alt` attribute. */
export function applyAltText(panel: NotebookPanel | null): number {
  let applied = 0;
  for (const widget of panel?.content.widgets ?? []) {
    if (!isCodeCell(widget)) {
      continue;
    }
    const outputs = outputsOf(widget);
    outputs.forEach((output, index) => {
      const alt = altOf(output);
      const img = alt ? widget.outputArea.widgets[index]?.node.querySelector('img') : null;
      if (img && alt && img.alt !== alt) {
        img.alt = alt;
        applied++;
      }
    });
  }
  return applied;
}

/**
 * Register the commands; `showPanel` opens the agent panel on the active
 * notebook's chat and resolves once it is loaded.
 */
export function registerFigureCommands(options: {
  app: JupyterFrontEnd;
  tracker: INotebookTracker;
  describer: FigureDescriber;
  announcer: Announcer;
  trans: TranslationBundle;
  showPanel: () => Promise<void>;
  focusInPanel: (selector: string) => void;
}): void {
  const { app, tracker, describer, announcer, trans } = options;

  /** The output index right-clicked, if the context menu was opened on an output. */
  const clickedOutput = (): number | null => {
    const node = app.contextMenuHitTest(n => n.classList?.contains('jp-OutputArea-child'));
    if (!node?.parentElement) {
      return null;
    }
    const siblings = Array.from(node.parentElement.children).filter(c => c.classList.contains('jp-OutputArea-child'));
    const index = siblings.indexOf(node);
    return index >= 0 ? index : null;
  };

  const target = (preferred: number | null): IFigureTarget | string => {
    const panel = tracker.currentWidget;
    const cell = panel?.content.activeCell;
    if (!panel || !cell) {
      return trans.__('Open a notebook and go to a cell that shows a figure first.');
    }
    const number = panel.content.activeCellIndex + 1;
    if (!isCodeCell(cell)) {
      return trans.__('Cell %1 is not a code cell, so it shows no figure. Go to the cell that draws the plot.', number);
    }
    const found = findFigure(outputsOf(cell), preferred);
    if (!found) {
      return trans.__('Cell %1 shows no figure. Run the cell that draws the plot, then try again.', number);
    }
    return {
      notebookPath: panel.context.path,
      cellId: cell.model.id,
      cellNumber: number,
      outputIndex: found.index,
      existingAlt: found.alt
    };
  };

  app.commands.addCommand(DESCRIBE_FIGURE, {
    label: trans.__('Describe This Figure'),
    caption: trans.__(
      "Ask the agent to describe the active cell's figure for a screen-reader user (what is plotted, axes, trend, extremes, outliers); you can then save it as the figure's alt text"
    ),
    execute: async () => {
      const found = target(clickedOutput());
      if (typeof found === 'string') {
        announcer.announce(found);
        return;
      }
      await options.showPanel();
      if (await describer.describe(found)) {
        announcer.announce(trans.__('Asked the agent to describe the figure in cell %1.', found.cellNumber));
      }
    }
  });

  app.commands.addCommand(SAVE_FIGURE_ALT, {
    label: trans.__('Save the Figure Description as Alt Text'),
    caption: trans.__("Store the agent's description of the figure as its alt text in the notebook"),
    execute: async () => {
      const current = describer.current;
      if (!current || current.status !== 'ready') {
        announcer.announce(
          current?.status === 'asking'
            ? trans.__('The description is not ready yet.')
            : trans.__('There is no figure description to save. Use Describe This Figure first.')
        );
        return;
      }
      await describer.save();
    }
  });

  // Whether the active cell shows a figure, kept current as cells change and run.
  let watched: CodeCell | null = null;
  const updateAvailable = () => {
    describer.figureAvailable = typeof target(null) !== 'string';
  };
  const watchActiveCell = () => {
    watched?.model.outputs.changed.disconnect(updateAvailable);
    const cell = tracker.currentWidget?.content.activeCell;
    watched = isCodeCell(cell) ? cell : null;
    watched?.model.outputs.changed.connect(updateAvailable);
    updateAvailable();
  };
  tracker.activeCellChanged.connect(watchActiveCell);
  tracker.currentChanged.connect(watchActiveCell);

  app.contextMenu.addItem({ command: DESCRIBE_FIGURE, selector: '.jp-Notebook .jp-CodeCell', rank: 30 });

  // The open notebook's figures get their alt attribute: now, when a notebook
  // or cell becomes active, and after a save (the output is re-rendered).
  const apply = () => applyAltText(tracker.currentWidget);
  tracker.currentChanged.connect(() => window.setTimeout(apply, 300));
  tracker.activeCellChanged.connect(apply);
  describer.savedAlt.connect(() => {
    for (const delay of [0, 150, 600, 1500]) {
      window.setTimeout(apply, delay);
    }
  });
}
