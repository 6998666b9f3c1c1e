/**
 * The panel's settings, opened from the toolbar's Settings button: the chat's
 * approval mode, the model, how much the announcements say, the rules files
 * that apply to the notebook, and the user's MCP tool servers. JupyterLab's styled selects (`HTMLSelect`), each labelled
 * and described; Escape closes the settings and returns to the button.
 */
import { TranslationBundle } from '@jupyterlab/translation';
import { HTMLSelect } from '@jupyterlab/ui-components';
import React from 'react';

import { Verbosity } from '../aaep';
import { APPROVAL_MODES, ApprovalMode, isApprovalMode } from '../model';
import { AgentChooser } from '../agentChoice';
import { ModelChooser } from '../modelChoice';
import { AgentPicker } from './AgentPicker';
import { useId } from './hooks';
import { MCPServerList } from './MCPServerList';
import { ModelPicker } from './ModelPicker';
import { RulesList } from './RulesList';
import { approvalModeDescription, approvalModeLabel } from './approvalWords';

/** Props of {@link PanelSettings}. */
export interface IPanelSettingsProps {
  trans: TranslationBundle;
  /** The region's id (the Settings button's `aria-controls`). */
  id: string;
  /** Whether the connection is down. */
  disabled: boolean;
  /** Whether the server lets this chat's approval mode be chosen. */
  approvalModeSupported: boolean;
  approvalMode: ApprovalMode;
  /** The approval modes the administrator allows (all when absent). */
  allowedModes?: ReadonlyArray<ApprovalMode>;
  /** Why some settings are fixed (the administrator's sentence), when the mode is locked. */
  policyMessage?: string | null;
  onApprovalMode: (mode: ApprovalMode) => void;
  chooser?: ModelChooser;
  /** The agent picker's data (ours, or a coding agent over ACP). */
  agentChooser?: AgentChooser;
  verbosity: Verbosity;
  onVerbosity: (verbosity: Verbosity) => void;
  /** Close the settings (Escape); the caller returns the focus to the button. */
  onClose: () => void;
  /** Say something to the person (the panel's announcer): what a setting's button did. */
  announce: (text: string, politeness?: 'polite' | 'assertive') => void;
  /** The notebook the agent works on (its rules are listed), or null. */
  notebookPath: string | null;
}

const VERBOSITIES: Verbosity[] = ['terse', 'normal', 'detailed'];

export function PanelSettings(props: IPanelSettingsProps): JSX.Element {
  const { trans, approvalMode, disabled } = props;
  const selectId = useId('jp-AAEPControls-mode');
  const warningId = useId('jp-AAEPControls-warning');
  const policyId = useId('jp-AAEPControls-policy');
  const verbosityId = useId('jp-AAEPSettings-verbosity');
  const verbosityHintId = useId('jp-AAEPSettings-verbosityHint');
  // The modes the administrator allows (and the one in force, so the select never lies).
  const modes = APPROVAL_MODES.filter(
    mode => mode === approvalMode || (props.allowedModes ?? APPROVAL_MODES).includes(mode)
  );
  const verbosityLabels: Record<Verbosity, string> = {
    terse: trans.__('Terse'),
    normal: trans.__('Normal'),
    detailed: trans.__('Detailed')
  };
  return (
    <div
      id={props.id}
      className="jp-AAEPSettings"
      role="group"
      aria-label={trans.__('Agent settings')}
      onKeyDown={e => {
        if (e.key === 'Escape') {
          e.preventDefault();
          e.stopPropagation();
          props.onClose();
        }
      }}
    >
      {props.approvalModeSupported && (
        <div className="jp-AAEPSettings-field">
          <label htmlFor={selectId}>{trans.__('Approval mode')}</label>
          <HTMLSelect
            id={selectId}
            className="jp-AAEPPanel-approvalMode"
            value={approvalMode}
            disabled={disabled}
            aria-describedby={props.policyMessage ? `${warningId} ${policyId}` : warningId}
            onChange={e => {
              const mode = e.target.value;
              if (isApprovalMode(mode)) {
                props.onApprovalMode(mode);
              }
            }}
            options={modes.map(mode => ({ value: mode, label: approvalModeLabel(mode, trans) }))}
          />
          {/* Always the select's description; shown only while auto is on. */}
          <p
            id={warningId}
            className={approvalMode === 'auto' ? 'jp-AAEPPanel-approvalWarning jp-mod-active' : 'jp-sr-only'}
          >
            {approvalModeDescription(approvalMode, trans)}
          </p>
          {props.policyMessage && (
            <p id={policyId} className="jp-AAEPPanel-policy">
              {props.policyMessage}
            </p>
          )}
        </div>
      )}
      {props.agentChooser && <AgentPicker chooser={props.agentChooser} trans={trans} disabled={disabled} />}
      {props.chooser && (
        <ModelPicker chooser={props.chooser} trans={trans} disabled={disabled} agentChooser={props.agentChooser} />
      )}
      <div className="jp-AAEPSettings-field">
        <label htmlFor={verbosityId}>{trans.__('Announcements')}</label>
        <HTMLSelect
          id={verbosityId}
          className="jp-AAEPSettings-verbosity"
          value={props.verbosity}
          aria-describedby={verbosityHintId}
          onChange={e => {
            const value = e.target.value as Verbosity;
            if (VERBOSITIES.includes(value)) {
              props.onVerbosity(value);
            }
          }}
          options={VERBOSITIES.map(v => ({ value: v, label: verbosityLabels[v] }))}
        />
        <span id={verbosityHintId} className="jp-sr-only">
          {trans.__('How much the screen reader announcements of the agent say.')}
        </span>
      </div>
      <RulesList trans={trans} notebookPath={props.notebookPath} />
      <MCPServerList trans={trans} announce={props.announce} />
    </div>
  );
}
