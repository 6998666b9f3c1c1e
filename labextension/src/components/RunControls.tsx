/**
 * Stop, Pause / Resume, Undo agent changes and the approval mode of the chat.
 *
 * Pause and Resume appear only when the server supports them. Stop stays in
 * the tab order when there is nothing to stop (`aria-disabled`), so pressing
 * it never drops the keyboard focus when the run ends.
 */
import { TranslationBundle } from '@jupyterlab/translation';
import React from 'react';

import { APPROVAL_MODES, ApprovalMode, ChatStatus, ISupports, isApprovalMode } from '../model';
import { useId } from './hooks';

/** Props of {@link RunControls}. */
export interface IRunControlsProps {
  trans: TranslationBundle;
  status: ChatStatus;
  approvalMode: ApprovalMode;
  supports: ISupports;
  /** Whether the connection is down. */
  disabled: boolean;
  /** `aria-keyshortcuts` of the Stop command, if it has a key. */
  stopShortcut?: string;
  /** Whether Undo can be pressed now (see `ChatModel.canRevert`). */
  canUndo: boolean;
  /** Whether an undo request is on its way. */
  undoing: boolean;
  /** Why the last undo failed, shown under the button, or `null`. */
  undoError: string | null;
  /** `aria-keyshortcuts` of the Undo command, if it has a key. */
  undoShortcut?: string;
  /** `aria-keyshortcuts` of the Pause/Resume command, if it has a key. */
  pauseShortcut?: string;
  /** Whether an interrupted request can be continued now. */
  canContinue?: boolean;
  /** `aria-keyshortcuts` of the Continue command, if it has a key. */
  continueShortcut?: string;
  onContinue?: () => void;
  onControl: (action: 'stop' | 'pause' | 'resume') => void;
  onUndo: () => void;
  onApprovalMode: (mode: ApprovalMode) => void;
  /** The approval modes the administrator allows (all when absent). */
  allowedModes?: ReadonlyArray<ApprovalMode>;
  /** Why some settings are fixed (the administrator's sentence), shown under the select when the mode is locked. */
  policyMessage?: string | null;
}

/** What the approval mode select shows for `mode`. */
export function approvalModeLabel(mode: ApprovalMode, trans: TranslationBundle): string {
  switch (mode) {
    case 'ask_all':
      return trans.__('Ask before every change');
    case 'auto':
      return trans.__('Auto');
    default:
      return trans.__('Ask before running code');
  }
}

/**
 * What `mode` does, in a few sentences: the select's description. Every mode
 * also says what auto does not protect against, so the choice is informed.
 */
export function approvalModeDescription(mode: ApprovalMode, trans: TranslationBundle): string {
  const caveat = trans.__(
    'Auto runs code without asking unless a quick check flags it as risky. The check is not a sandbox: it cannot catch everything harmful.'
  );
  switch (mode) {
    case 'ask_all':
      return `${trans.__(
        'The agent asks before every change: creating, editing, moving or deleting a cell, clearing outputs, and running code. An edit shows what changes, line by line.'
      )} ${caveat}`;
    case 'auto':
      return trans.__(
        'Auto is on for this chat: code runs without asking unless a quick check flags it as risky. The check is not a sandbox: it cannot catch everything harmful.'
      );
    default:
      return `${trans.__(
        'The agent asks before running code. It creates, edits, moves and deletes cells without asking; Undo agent changes puts them back.'
      )} ${caveat}`;
  }
}

/**
 * Run controls. The approval mode is a labelled select whose description says
 * what the chosen mode does, and what auto does not protect against.
 */
export function RunControls(props: IRunControlsProps): JSX.Element {
  const { trans, status, approvalMode, disabled, supports } = props;
  const warningId = useId('jp-AAEPControls-warning');
  const selectId = useId('jp-AAEPControls-mode');
  const stopHintId = useId('jp-AAEPControls-stopHint');
  const undoHintId = useId('jp-AAEPControls-undoHint');
  const undoErrorId = useId('jp-AAEPControls-undoError');
  const pauseHintId = useId('jp-AAEPControls-pauseHint');
  const continueHintId = useId('jp-AAEPControls-continueHint');
  const policyId = useId('jp-AAEPControls-policy');
  // The modes the administrator allows (and the one in force, so the select never lies).
  const modes = APPROVAL_MODES.filter(
    mode => mode === approvalMode || (props.allowedModes ?? APPROVAL_MODES).includes(mode)
  );
  const running = status !== 'idle';
  const canStop = supports.stop && running && !disabled;
  const canUndo = supports.revert && props.canUndo && !disabled;
  // Why Undo cannot be pressed now, said after what it does.
  const undoReason = canUndo
    ? ''
    : disabled
      ? trans.__('Not connected.')
      : props.undoing
        ? trans.__('Undoing…')
        : running
          ? trans.__('Available when the agent has finished.')
          : trans.__('The agent has made no changes to undo in this chat.');
  return (
    <div className="jp-AAEPPanel-controls">
      <div className="jp-AAEPPanel-runButtons" role="group" aria-label={trans.__('Run controls')}>
        {supports.stop && (
          <button
            type="button"
            className="jp-Button jp-mod-styled jp-mod-warn jp-AAEPPanel-stop"
            aria-disabled={!canStop}
            aria-describedby={canStop ? undefined : stopHintId}
            aria-keyshortcuts={props.stopShortcut}
            onClick={() => canStop && props.onControl('stop')}
          >
            {trans.__('Stop')}
          </button>
        )}
        {/* One button that turns from Pause into Resume: the same element, so the
            focus stays on it when the state changes. */}
        {supports.pause && (
          <button
            type="button"
            className={`jp-Button jp-mod-styled ${
              status === 'paused' ? 'jp-AAEPPanel-resume jp-mod-accept' : 'jp-AAEPPanel-pause'
            }`}
            aria-disabled={status === 'paused' ? disabled || !supports.resume : disabled || !running}
            aria-describedby={pauseHintId}
            aria-keyshortcuts={props.pauseShortcut}
            onClick={() => {
              if (status === 'paused') {
                if (!disabled && supports.resume) {
                  props.onControl('resume');
                }
              } else if (!disabled && running) {
                props.onControl('pause');
              }
            }}
          >
            {status === 'paused' ? trans.__('Resume') : trans.__('Pause')}
          </button>
        )}
        {supports.pause && (
          <span id={pauseHintId} className="jp-sr-only">
            {disabled
              ? trans.__('Not connected.')
              : status === 'paused'
                ? supports.resume
                  ? trans.__('The agent is paused; Resume continues exactly where it stopped.')
                  : trans.__('This server cannot resume a paused session; stop it instead.')
                : running
                  ? trans.__('Pauses the agent at its next safe point; you can still send guidance.')
                  : trans.__('Nothing is running.')}
          </span>
        )}
        {supports.continue && props.canContinue && (
          <button
            type="button"
            className="jp-Button jp-mod-styled jp-mod-accept jp-AAEPPanel-continue"
            aria-disabled={disabled}
            aria-describedby={continueHintId}
            aria-keyshortcuts={props.continueShortcut}
            onClick={() => !disabled && props.onContinue?.()}
          >
            {trans.__('Continue')}
          </button>
        )}
        {supports.continue && props.canContinue && (
          <span id={continueHintId} className="jp-sr-only">
            {trans.__('The last request was interrupted; Continue asks the agent to pick up where it stopped.')}
          </span>
        )}
        {supports.revert && (
          <button
            type="button"
            className="jp-Button jp-mod-styled jp-AAEPPanel-undo"
            aria-disabled={!canUndo}
            aria-describedby={props.undoError ? `${undoHintId} ${undoErrorId}` : undoHintId}
            aria-keyshortcuts={props.undoShortcut}
            onClick={() => {
              // Also when unavailable: the controller then says why (nothing to undo, working…).
              props.onUndo();
            }}
          >
            {trans.__('Undo agent changes')}
          </button>
        )}
        {supports.stop && !canStop && (
          <span id={stopHintId} className="jp-sr-only">
            {disabled ? trans.__('Not connected.') : trans.__('Nothing is running.')}
          </span>
        )}
        {supports.revert && (
          <span id={undoHintId} className="jp-sr-only">
            {trans.__(
              'Undoes the changes the agent made to the notebook in its latest request in this chat; cells someone else changed since are kept as they are.'
            )}
            {undoReason && ` ${undoReason}`}
          </span>
        )}
      </div>
      {supports.revert && props.undoError && (
        <p id={undoErrorId} className="jp-AAEPPanel-undoError">
          {props.undoError}
        </p>
      )}
      {supports.approval_mode && (
        <>
          <div className="jp-AAEPPanel-approval">
            <label htmlFor={selectId}>{trans.__('Approval mode')}</label>
            <select
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
            >
              {modes.map(mode => (
                <option key={mode} value={mode}>
                  {approvalModeLabel(mode, trans)}
                </option>
              ))}
            </select>
          </div>
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
        </>
      )}
    </div>
  );
}
