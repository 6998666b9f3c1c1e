/**
 * The simple transcript entries: user messages, tool steps, progress,
 * handoffs and notices. Requests have their own card components.
 */
import { TranslationBundle } from '@jupyterlab/translation';
import React from 'react';

import { isRecord, str } from '../aaep';
import { TranscriptItem } from '../model';
import { saysReason } from '../speech';

type Of<K extends TranscriptItem['kind']> = Extract<TranscriptItem, { kind: K }>;

/** Format a duration in ms for people ("850 ms", "12.3 s", "2 min 5 s"). */
export function formatDuration(ms: number): string {
  if (ms < 1000) {
    return `${Math.round(ms)} ms`;
  }
  if (ms < 60000) {
    return `${(ms / 1000).toFixed(1)} s`;
  }
  const m = Math.floor(ms / 60000);
  const s = Math.round((ms % 60000) / 1000);
  return `${m} min ${s} s`;
}

/**
 * A message the user sent. A request starts a turn: it is a heading (level 3),
 * so a screen reader user jumps from turn to turn with the heading key.
 * Guidance sent while the agent works belongs to the turn: not a heading.
 */
export function UserMessage(props: { item: Of<'user'>; trans: TranslationBundle }): JSX.Element {
  const { item, trans } = props;
  const author = (
    <span className="jp-AAEPMessage-author">
      {item.steering ? trans.__('You (steering):') : trans.__('You')}
      {item.unsent && ` ${trans.__('(not sent)')}`}
    </span>
  );
  return (
    <div
      className={`jp-AAEPMessage jp-AAEPMessage-user${item.steering ? ' jp-mod-steering' : ''}`}
      data-session-id={item.sessionId}
    >
      {item.steering ? (
        <div className="jp-AAEPMessage-turn">
          {author} <span className="jp-AAEPMessage-text">{item.text}</span>
        </div>
      ) : (
        <h3 className="jp-AAEPMessage-turn">
          {author} <span className="jp-AAEPMessage-text">{item.text}</span>
        </h3>
      )}
    </div>
  );
}

/**
 * One tool step, read as one line: what it did (or does), and whether it
 * failed. No tool names, no durations (the duration is in the tooltip).
 */
export function ToolStep(props: { item: Of<'tool'>; trans: TranslationBundle }): JSX.Element {
  const { item, trans } = props;
  const failed = item.status === 'error' || item.status === 'timeout';
  // A word for the state where the summary does not say it; a mark beside
  // it so the state does not rest on colour alone.
  const status = {
    running: trans.__('Running:'),
    success: '',
    error: trans.__('Failed:'),
    timeout: trans.__('Timed out:')
  }[item.status];
  const icon = { running: null, success: '✓', error: '✕', timeout: '✕' }[item.status];
  const summary = item.summary || trans.__('A step of the agent.');
  // The reason is shown unless the summary already says it.
  const reason = failed && item.errorMessage && !saysReason(summary, item.errorMessage) ? item.errorMessage : '';
  return (
    <div
      className={`jp-AAEPToolStep jp-mod-${item.status}`}
      title={item.durationMs !== undefined ? trans.__('Took %1', formatDuration(item.durationMs)) : undefined}
    >
      {item.status === 'running' && <span className="jp-AAEPSpinner" aria-hidden="true" />}
      {icon && (
        <span className="jp-AAEPToolStep-icon" aria-hidden="true">
          {icon}
        </span>
      )}
      {status && <span className="jp-AAEPToolStep-status">{status} </span>}
      <span className="jp-AAEPToolStep-summary">{summary}</span>
      {reason && <span className="jp-AAEPToolStep-error"> {reason}</span>}
    </div>
  );
}

/** Progress of a long step (for example a long-running cell). */
export function ProgressStep(props: { item: Of<'progress'>; trans: TranslationBundle }): JSX.Element {
  const { item, trans } = props;
  const text =
    item.description ??
    (item.step !== undefined && item.totalSteps !== undefined
      ? trans.__('Step %1 of %2', item.step, item.totalSteps)
      : trans.__('Still running.'));
  // The name stays put while the value changes: screen readers then read the value.
  const name = item.cellRun ? trans.__('Progress of the running cell') : trans.__('Progress of the current step');
  const percent = item.percent !== undefined ? Math.max(0, Math.min(100, item.percent)) : undefined;
  // What a screen reader says when the value changes: named, never a bare
  // "40 percent", and its number in steps of 10 so it is heard now and then.
  const step = percent !== undefined ? Math.floor(percent / 10) * 10 : undefined;
  const spoken = item.description ?? (step !== undefined ? trans.__('%1 percent', step) : text);
  return (
    <div className={`jp-AAEPProgress${item.done ? ' jp-mod-done' : ''}`}>
      <div className="jp-AAEPProgress-label">{text}</div>
      <div
        className="jp-AAEPProgress-bar"
        role="progressbar"
        aria-label={name}
        aria-valuemin={0}
        aria-valuemax={100}
        aria-valuenow={step}
        aria-valuetext={`${name}: ${spoken}`}
      >
        <div
          className={`jp-AAEPProgress-fill${percent === undefined ? ' jp-mod-indeterminate' : ''}`}
          style={{ width: `${percent ?? 100}%` }}
        />
      </div>
    </div>
  );
}

/** The agent hands control back to the user. */
export function HandoffCard(props: { item: Of<'handoff'>; trans: TranslationBundle }): JSX.Element {
  const { item, trans } = props;
  const event = item.event;
  const context = isRecord(event.packaged_context) ? event.packaged_context : {};
  const needs = Object.entries(context).filter(
    ([, v]) => typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean'
  );
  return (
    <div className="jp-AAEPCard jp-AAEPCard-handoff" role="group" aria-label={trans.__('Handoff')}>
      <h4 className="jp-AAEPCard-title">{trans.__('The agent needs you')}</h4>
      <p>{str(event, 'summary_normal') ?? str(event, 'reason')}</p>
      {str(event, 'summary_normal') && str(event, 'reason') && (
        <p>
          <strong>{trans.__('Reason:')}</strong> {str(event, 'reason')}
        </p>
      )}
      {needs.length > 0 && (
        <dl className="jp-AAEPCard-facts">
          {needs.map(([key, value]) => (
            <React.Fragment key={key}>
              <dt>{key.replace(/_/g, ' ')}</dt>
              <dd>{String(value)}</dd>
            </React.Fragment>
          ))}
        </dl>
      )}
    </div>
  );
}

/** End of a session, an error, or a local notice. */
export function Notice(props: { item: Of<'notice'>; trans: TranslationBundle }): JSX.Element {
  const { item, trans } = props;
  const failed = item.variant === 'completed' ? (item.failedSteps ?? 0) : 0;
  const prefix = {
    started: trans.__('Started:'),
    // "Done." says it already: no "Finished: Done.".
    completed: failed > 0 ? trans._n('Finished, 1 step failed:', 'Finished, %1 steps failed:', failed) : '',
    errored: trans.__('Error:'),
    cancelled: trans.__('Stopped:'),
    // The server's summary already says "Undid the agent's changes…".
    reverted: '',
    info: '',
    error: trans.__('Error:')
  }[item.variant];
  // Producers often start the summary with the same word ("Finished: …").
  const word = prefix.replace(/:$/, '').toLowerCase();
  const showPrefix = !!prefix && (failed > 0 || !item.text.toLowerCase().startsWith(word));
  return (
    <div className={`jp-AAEPNotice jp-mod-${item.variant}`}>
      <div>
        {showPrefix && <strong>{prefix}</strong>}
        {showPrefix && ' '}
        {item.text}
      </div>
      {item.hint && (
        <div className="jp-AAEPNotice-hint">
          <strong>{trans.__('What you can do:')}</strong> {item.hint}
        </div>
      )}
    </div>
  );
}
