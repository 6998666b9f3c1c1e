/**
 * Stop, Pause / Resume and the approval mode of the chat.
 */
import { TranslationBundle } from '@jupyterlab/translation';
import React from 'react';

import { ApprovalMode, ChatStatus } from '../model';
import { useId } from './hooks';

/** Props of {@link RunControls}. */
export interface IRunControlsProps {
  trans: TranslationBundle;
  status: ChatStatus;
  approvalMode: ApprovalMode;
  disabled: boolean;
  onControl: (action: 'stop' | 'pause' | 'resume') => void;
  onApprovalMode: (mode: ApprovalMode) => void;
}

/**
 * Run controls. The approval mode is a labelled select whose description explains
 * that auto-approve still asks for risky code.
 */
export function RunControls(props: IRunControlsProps): JSX.Element {
  const { trans, status, approvalMode, disabled } = props;
  const warningId = useId('jp-AAEPControls-warning');
  const selectId = useId('jp-AAEPControls-mode');
  const running = status !== 'idle';
  return (
    <div className="jp-AAEPPanel-controls">
      <div className="jp-AAEPPanel-runButtons" role="group" aria-label={trans.__('Run controls')}>
        <button
          type="button"
          className="jp-Button jp-mod-styled jp-mod-warn jp-AAEPPanel-stop"
          disabled={disabled || !running}
          onClick={() => props.onControl('stop')}
        >
          {trans.__('Stop')}
        </button>
        {status === 'paused' ? (
          <button
            type="button"
            className="jp-Button jp-mod-styled jp-AAEPPanel-resume"
            disabled={disabled}
            onClick={() => props.onControl('resume')}
          >
            {trans.__('Resume')}
          </button>
        ) : (
          <button
            type="button"
            className="jp-Button jp-mod-styled jp-AAEPPanel-pause"
            disabled={disabled || !running}
            onClick={() => props.onControl('pause')}
          >
            {trans.__('Pause')}
          </button>
        )}
      </div>
      <div className="jp-AAEPPanel-approval">
        <label htmlFor={selectId}>{trans.__('Approval mode')}</label>
        <select
          id={selectId}
          value={approvalMode}
          disabled={disabled}
          aria-describedby={warningId}
          onChange={e => props.onApprovalMode(e.target.value === 'auto' ? 'auto' : 'ask')}
        >
          <option value="ask">{trans.__('Ask every time')}</option>
          <option value="auto">{trans.__('Auto-approve in this chat')}</option>
        </select>
      </div>
      <p id={warningId} className={`jp-AAEPPanel-approvalWarning${approvalMode === 'auto' ? ' jp-mod-active' : ''}`}>
        {approvalMode === 'auto'
          ? trans.__(
              'Auto-approve is on for this chat: code runs without asking, except risky code (shell commands, deleting files, installing packages, network writes), which still asks.'
            )
          : trans.__(
              'Auto-approve would still ask before risky code: shell commands, deleting files, installing packages, network writes.'
            )}
      </p>
    </div>
  );
}
