/**
 * The agent picker, next to the model picker in the panel's settings: our
 * own agent or a coding agent over ACP (Claude Code, Codex, …). An agent that
 * cannot start is listed as not installed, and the description says what to
 * install. Hidden when the server offers only its own agent.
 */
import { TranslationBundle } from '@jupyterlab/translation';
import { HTMLSelect } from '@jupyterlab/ui-components';
import React from 'react';

import { AgentChooser } from '../agentChoice';
import { agentHint, agentOptions } from '../agentWords';
import { useId, useSignals } from './hooks';

export interface IAgentPickerProps {
  chooser: AgentChooser;
  trans: TranslationBundle;
  disabled: boolean;
}

export function AgentPicker(props: IAgentPickerProps): JSX.Element | null {
  const { chooser, trans, disabled } = props;
  useSignals(chooser.changed);
  const selectId = useId('jp-AAEPAgent-select');
  const hintId = useId('jp-AAEPAgent-hint');
  const agents = chooser.agents;
  if (agents.length < 2) {
    return null;
  }
  const options = agentOptions(agents, chooser.current, trans);
  return (
    <div className="jp-AAEPSettings-field jp-AAEPAgent">
      <label htmlFor={selectId}>{trans.__('Agent')}</label>
      <HTMLSelect
        id={selectId}
        className="jp-AAEPAgent-select"
        value={chooser.current ?? ''}
        disabled={disabled}
        aria-describedby={hintId}
        onChange={e => void chooser.choose(e.target.value)}
        options={options}
      />
      <span id={hintId} className="jp-sr-only">
        {agentHint(agents, trans)}
      </span>
    </div>
  );
}
