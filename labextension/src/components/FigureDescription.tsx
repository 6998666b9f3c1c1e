/**
 * The description of a figure asked for with "Describe this figure": shown
 * while the agent works on it, then as an editable text with "Save as alt
 * text", and the save's confirmation. A labelled region with a heading, so a
 * screen-reader user can jump to it.
 */
import { TranslationBundle } from '@jupyterlab/translation';
import React from 'react';

import { FigureDescriber } from '../figures';
import { useId, useSignals } from './hooks';

export interface IFigureDescriptionProps {
  describer: FigureDescriber;
  trans: TranslationBundle;
  /** Runs "Describe this figure" on the active cell (the button shown when there is no description). */
  onDescribe?: () => void;
  disabled?: boolean;
}

export function FigureDescription(props: IFigureDescriptionProps): JSX.Element | null {
  const { describer, trans } = props;
  useSignals(describer.changed);
  const headingId = useId('jp-AAEPFigure-heading');
  const textId = useId('jp-AAEPFigure-text');
  const hintId = useId('jp-AAEPFigure-hint');
  const describeHintId = useId('jp-AAEPFigure-describeHint');
  const current = describer.current;
  if (!current) {
    return props.onDescribe && describer.figureAvailable ? (
      <div className="jp-AAEPFigure-start">
        <button
          type="button"
          className="jp-Button jp-mod-styled jp-AAEPFigure-describe"
          aria-disabled={props.disabled}
          aria-describedby={describeHintId}
          onClick={() => !props.disabled && props.onDescribe?.()}
        >
          {trans.__('Describe this figure')}
        </button>
        <span id={describeHintId} className="jp-sr-only">
          {trans.__(
            "The agent describes the figure of the notebook's active cell for a screen reader; you can then save it as the figure's alt text."
          )}
        </span>
      </div>
    ) : null;
  }
  const { target, status } = current;
  const replacing = target.existingAlt !== null && status !== 'saved';
  return (
    <section className={`jp-AAEPFigure jp-mod-${status}`} aria-labelledby={headingId}>
      <h3 id={headingId} className="jp-AAEPFigure-heading">
        {trans.__('Description of the figure in cell %1', target.cellNumber)}
      </h3>
      {status === 'asking' && <p className="jp-AAEPFigure-status">{trans.__('The agent is looking at the figure…')}</p>}
      {status === 'failed' && <p className="jp-AAEPFigure-status jp-mod-error">{current.message}</p>}
      {(status === 'ready' || status === 'saving' || status === 'saved') && (
        <>
          <label htmlFor={textId} className="jp-AAEPFigure-label">
            {trans.__('Alt text (you can edit it before saving)')}
          </label>
          <textarea
            id={textId}
            className="jp-AAEPFigure-text jp-mod-styled"
            rows={5}
            value={current.text}
            readOnly={status === 'saving'}
            aria-describedby={hintId}
            onChange={e => describer.edit(e.target.value)}
          />
          <p id={hintId} className="jp-AAEPFigure-hint">
            {replacing
              ? trans.__('The figure already has alt text; saving replaces it: %1', target.existingAlt ?? '')
              : trans.__('Saving stores it in the notebook as the alt text of this figure.')}
          </p>
        </>
      )}
      {/* The confirmation, or why saving failed: shown here and announced. */}
      {current.message && status !== 'failed' && (
        <p className={`jp-AAEPFigure-status${status === 'saved' ? ' jp-mod-saved' : ' jp-mod-error'}`}>
          {current.message}
        </p>
      )}
      <div className="jp-AAEPFigure-actions">
        {(status === 'ready' || status === 'saving') && (
          <button
            type="button"
            className="jp-Button jp-mod-styled jp-mod-accept jp-AAEPFigure-save"
            aria-disabled={status === 'saving'}
            onClick={() => void describer.save()}
          >
            {replacing ? trans.__('Replace the alt text') : trans.__('Save as alt text')}
          </button>
        )}
        <button
          type="button"
          className="jp-Button jp-mod-styled jp-AAEPFigure-dismiss"
          onClick={() => describer.dismiss()}
        >
          {status === 'saved' ? trans.__('Close') : trans.__('Dismiss')}
        </button>
      </div>
    </section>
  );
}
