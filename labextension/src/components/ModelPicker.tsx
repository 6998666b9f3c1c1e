/**
 * The model picker of the panel's settings: the models the server can use,
 * the chat's current one selected. A change applies from the next request
 * (said at once, and again when that session starts). While a coding agent
 * over ACP answers the chat, the picker is replaced by a sentence saying that
 * the setting does not apply to it (that agent runs its own model).
 */
import { TranslationBundle } from '@jupyterlab/translation';
import { HTMLSelect } from '@jupyterlab/ui-components';
import React from 'react';

import { AgentChooser, modelNotApplicable, outsideAgent } from '../agentChoice';
import { ModelChooser } from '../modelChoice';
import { useId, useSignals } from './hooks';

export interface IModelPickerProps {
  chooser: ModelChooser;
  trans: TranslationBundle;
  disabled: boolean;
  /** The chat's agent: with an ACP agent chosen, the model does not apply. */
  agentChooser?: AgentChooser;
}

export function ModelPicker(props: IModelPickerProps): JSX.Element | null {
  const { chooser, trans, disabled, agentChooser } = props;
  useSignals(chooser.changed, agentChooser?.changed);
  const selectId = useId('jp-AAEPModel-select');
  const hintId = useId('jp-AAEPModel-hint');
  const other = agentChooser ? outsideAgent(agentChooser.agents, agentChooser.current) : null;
  if (other !== null) {
    // Said where the picker was, so a person looking for it learns why it is not there.
    return (
      <p className="jp-AAEPSettings-field jp-AAEPModel jp-mod-notApplicable">{modelNotApplicable(other, trans)}</p>
    );
  }
  const current = chooser.current;
  const options = [...chooser.models];
  if (current && !options.some(m => m.id === current)) {
    options.unshift({ id: current, label: chooser.label(current) });
  }
  if (options.length === 0) {
    return null;
  }
  const hint =
    chooser.source === 'api'
      ? trans.__('Applies from your next request. The list comes from the model service.')
      : trans.__('Applies from your next request. The list is the one configured on the server.');
  return (
    <div className="jp-AAEPSettings-field jp-AAEPModel">
      <label htmlFor={selectId}>{trans.__('Model')}</label>
      <HTMLSelect
        id={selectId}
        className="jp-AAEPModel-select"
        value={current ?? ''}
        disabled={disabled}
        aria-describedby={hintId}
        onChange={e => void chooser.choose(e.target.value)}
        options={options.map(option => ({
          value: option.id,
          label: option.id === chooser.defaultModel ? trans.__('%1 (default)', option.label) : option.label
        }))}
      />
      <span id={hintId} className="jp-sr-only">
        {hint}
      </span>
    </div>
  );
}
