/**
 * The result of "Check this notebook's accessibility": a labelled region with
 * a heading, the count, the problems as a list by cell number (each with a
 * "Go to cell" button), what was not checked, and Close. Plain buttons and a
 * list: every part is reached with Tab and read in order.
 */
import { TranslationBundle } from '@jupyterlab/translation';
import React from 'react';

import { AccessibilityChecker, IAccessibilityView, goToLabel } from '../accessibilityCheck';
import { IAccessibilityProblem } from '../chatClient';
import { useId, useSignals } from './hooks';

export interface IAccessibilityReportProps {
  checker: AccessibilityChecker;
  trans: TranslationBundle;
  /** The notebook the panel shows: a report of another notebook is not shown. */
  notebookPath: string | null;
  onGoTo: (problem: IAccessibilityProblem) => void;
}

/** The report of {@link AccessibilityChecker} (nothing when there is none for this notebook). */
export function AccessibilityReport(props: IAccessibilityReportProps): JSX.Element | null {
  useSignals(props.checker.changed);
  const current = props.checker.current;
  if (!current || current.notebookPath !== props.notebookPath) {
    return null;
  }
  return (
    <AccessibilityReportView
      view={current}
      trans={props.trans}
      onGoTo={props.onGoTo}
      onClose={() => props.checker.dismiss()}
    />
  );
}

/** Props of {@link AccessibilityReportView}. */
export interface IAccessibilityReportViewProps {
  view: IAccessibilityView;
  trans: TranslationBundle;
  onGoTo: (problem: IAccessibilityProblem) => void;
  onClose: () => void;
}

/** The report's markup, from its state alone (rendered by the unit tests too). */
export function AccessibilityReportView(props: IAccessibilityReportViewProps): JSX.Element {
  const { view, trans } = props;
  const headingId = useId('jp-AAEPAccessibility-heading');
  const report = view.report;
  return (
    <section className={`jp-AAEPAccessibility jp-mod-${view.status}`} aria-labelledby={headingId}>
      <h3 id={headingId} className="jp-AAEPAccessibility-heading">
        {trans.__('Accessibility of %1', view.notebookPath)}
      </h3>
      {view.status === 'checking' && <p className="jp-AAEPAccessibility-status">{trans.__('Checking…')}</p>}
      {view.status === 'failed' && <p className="jp-AAEPAccessibility-status jp-mod-error">{view.message}</p>}
      {report && <p className="jp-AAEPAccessibility-status">{report.summary}</p>}
      {report && report.problems.length > 0 && (
        <ul className="jp-AAEPAccessibility-list" aria-labelledby={headingId}>
          {report.problems.map((problem, index) => (
            <li key={`${problem.rule}-${problem.cell_id ?? 'notebook'}-${index}`} className="jp-AAEPAccessibility-item">
              <span className="jp-AAEPAccessibility-text">{problem.text}</span>
              {problem.cell_number !== null && (
                <button
                  type="button"
                  className="jp-Button jp-mod-styled jp-AAEPAccessibility-goTo"
                  onClick={() => props.onGoTo(problem)}
                >
                  {goToLabel(problem.cell_number, trans)}
                </button>
              )}
            </li>
          ))}
        </ul>
      )}
      {report && <p className="jp-AAEPAccessibility-note">{report.not_checked}</p>}
      {report && report.problems.length > 0 && (
        <p className="jp-AAEPAccessibility-note">
          {trans.__(
            'To fix them, ask the agent: "Fix the accessibility problems". Each fix is an edit you can review and undo.'
          )}
        </p>
      )}
      <div className="jp-AAEPAccessibility-actions">
        <button type="button" className="jp-Button jp-mod-styled jp-AAEPAccessibility-close" onClick={props.onClose}>
          {trans.__('Close')}
        </button>
      </div>
    </section>
  );
}
