/**
 * The rules files the agent follows in this notebook, in the panel's
 * settings: the server's sentence (how many apply, or that none do, and each
 * file that could not be read), then each rule that applies with where it is
 * and where it applies, then the ones left out and why. Read from
 * `GET aaep/v1/rules` when the settings open. A plain list: nothing here is
 * announced by itself (*Which rules apply here?* says it on demand).
 */
import { TranslationBundle } from '@jupyterlab/translation';
import React, { useEffect, useState } from 'react';

import { IRulesReport, readRules, ruleLeftOut, ruleWhere } from '../rules';
import { useId } from './hooks';

type Reading = { state: 'loading' } | { state: 'failed'; message: string } | { state: 'ready'; report: IRulesReport };

/** Props of {@link RulesList}. */
export interface IRulesListProps {
  trans: TranslationBundle;
  /** The notebook the agent works on, or null when none is open. */
  notebookPath: string | null;
}

export function RulesList(props: IRulesListProps): JSX.Element {
  const { trans, notebookPath } = props;
  const headingId = useId('jp-AAEPRules-heading');
  const leftOutId = useId('jp-AAEPRules-leftOut');
  const [reading, setReading] = useState<Reading>({ state: 'loading' });
  useEffect(() => {
    let alive = true;
    if (!notebookPath) {
      return;
    }
    setReading({ state: 'loading' });
    readRules(notebookPath).then(
      report => alive && setReading({ state: 'ready', report }),
      error => alive && setReading({ state: 'failed', message: error instanceof Error ? error.message : String(error) })
    );
    return () => {
      alive = false;
    };
  }, [notebookPath]);
  const report = reading.state === 'ready' ? reading.report : null;
  return (
    <section className="jp-AAEPRules" aria-labelledby={headingId}>
      <h3 id={headingId} className="jp-AAEPMCP-heading">
        {trans.__('Rules the agent follows here')}
      </h3>
      {!notebookPath && (
        <p className="jp-AAEPMCP-note">
          {trans.__('Open a notebook first: rules are read for the notebook the agent works on.')}
        </p>
      )}
      {notebookPath && reading.state === 'loading' && (
        <p className="jp-AAEPMCP-note">{trans.__('Reading the rules…')}</p>
      )}
      {notebookPath && reading.state === 'failed' && (
        <p className="jp-AAEPMCP-problem">{trans.__('The rules could not be read: %1', reading.message)}</p>
      )}
      {notebookPath && report && (
        <>
          <p className="jp-AAEPMCP-note jp-AAEPRules-sentence">{report.sentence}</p>
          {report.applies.length > 0 && (
            <ul className="jp-AAEPMCP-servers" aria-labelledby={headingId}>
              {report.applies.map(rule => (
                <li key={rule.path} className="jp-AAEPMCP-server">
                  <span className="jp-AAEPMCP-name">{rule.label}</span>
                  {': '}
                  <span className="jp-AAEPRules-where">{ruleWhere(rule, trans)}</span>
                </li>
              ))}
            </ul>
          )}
          {report.skipped.length > 0 && (
            <>
              <p id={leftOutId} className="jp-AAEPMCP-note">
                {trans._n('Left out here (1 file):', 'Left out here (%1 files):', report.skipped.length)}
              </p>
              <ul className="jp-AAEPMCP-servers" aria-labelledby={leftOutId}>
                {report.skipped.map(rule => (
                  <li key={rule.path} className="jp-AAEPMCP-server">
                    <span className="jp-AAEPMCP-name">{rule.label}</span>
                    {': '}
                    <span className="jp-AAEPRules-where">{ruleLeftOut(rule, trans)}</span>
                  </li>
                ))}
              </ul>
            </>
          )}
        </>
      )}
    </section>
  );
}
