/**
 * The panel's toolbar: Stop, Pause / Resume, Continue, Undo agent changes as
 * labelled icon buttons, then whatever the panel adds (Describe this figure,
 * the settings toggle). The approval mode itself is chosen in the settings
 * (`PanelSettings.tsx`); its words live here, next to the buttons they explain.
 *
 * Pause and Resume appear only when the server supports them. Stop stays in
 * the tab order when there is nothing to stop (`aria-disabled`), so pressing
 * it never drops the keyboard focus when the run ends.
 */
import { TranslationBundle } from '@jupyterlab/translation';
import { fastForwardIcon, pauseIcon, runIcon, stopIcon, undoIcon } from '@jupyterlab/ui-components';
import React from 'react';

import { ApprovalMode, ChatStatus, ISupports } from '../model';
import { useId } from './hooks';
import { ToolbarIconButton } from './ToolbarIconButton';

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
  /** More toolbar items after the run buttons (Describe this figure, the settings toggle). */
  children?: React.ReactNode;
}

// The approval modes' words live in a module of their own (no JupyterLab imports: unit-tested in Node).
export { approvalModeDescription, approvalModeLabel } from './approvalWords';

/**
 * The run buttons. While auto-approve is on, the toolbar says so in two words
 * (the settings say what it means), so it is never on unseen.
 */
export function RunControls(props: IRunControlsProps): JSX.Element {
  const { trans, status, approvalMode, disabled, supports } = props;
  const stopHintId = useId('jp-AAEPControls-stopHint');
  const undoHintId = useId('jp-AAEPControls-undoHint');
  const undoErrorId = useId('jp-AAEPControls-undoError');
  const pauseHintId = useId('jp-AAEPControls-pauseHint');
  const continueHintId = useId('jp-AAEPControls-continueHint');
  const running = status !== 'idle';
  const canStop = supports.stop && running && !disabled;
  const canUndo = supports.revert && props.canUndo && !disabled;
  const paused = status === 'paused';
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
  const pauseHint = disabled
    ? trans.__('Not connected.')
    : paused
      ? supports.resume
        ? trans.__('The agent is paused; Resume continues exactly where it stopped.')
        : trans.__('This server cannot resume a paused session; stop it instead.')
      : running
        ? trans.__('Pauses the agent at its next safe point; you can still send guidance.')
        : trans.__('Nothing is running.');
  const undoHint = trans.__(
    'Undoes the changes the agent made to the notebook in its latest request in this chat; cells someone else changed since are kept as they are.'
  );
  return (
    <div className="jp-AAEPPanel-controls">
      <div className="jp-AAEPToolbar jp-AAEPPanel-runButtons" role="group" aria-label={trans.__('Run controls')}>
        {supports.stop && (
          <ToolbarIconButton
            icon={stopIcon}
            label={trans.__('Stop')}
            tooltip={canStop ? trans.__('Stop the agent') : trans.__('Stop (nothing is running)')}
            className="jp-AAEPPanel-stop jp-mod-warn"
            unavailable={!canStop}
            describedBy={canStop ? undefined : stopHintId}
            keyShortcuts={props.stopShortcut}
            onClick={() => canStop && props.onControl('stop')}
          />
        )}
        {/* One button that turns from Pause into Resume: the same element, so the
            focus stays on it when the state changes. */}
        {supports.pause && (
          <ToolbarIconButton
            icon={paused ? runIcon : pauseIcon}
            label={paused ? trans.__('Resume') : trans.__('Pause')}
            tooltip={pauseHint}
            className={paused ? 'jp-AAEPPanel-resume jp-mod-accept' : 'jp-AAEPPanel-pause'}
            unavailable={paused ? disabled || !supports.resume : disabled || !running}
            describedBy={pauseHintId}
            keyShortcuts={props.pauseShortcut}
            onClick={() => {
              if (paused) {
                if (!disabled && supports.resume) {
                  props.onControl('resume');
                }
              } else if (!disabled && running) {
                props.onControl('pause');
              }
            }}
          />
        )}
        {supports.continue && props.canContinue && (
          <ToolbarIconButton
            icon={fastForwardIcon}
            label={trans.__('Continue')}
            className="jp-AAEPPanel-continue jp-mod-accept"
            unavailable={disabled}
            describedBy={continueHintId}
            keyShortcuts={props.continueShortcut}
            onClick={() => !disabled && props.onContinue?.()}
          />
        )}
        {supports.revert && (
          <ToolbarIconButton
            icon={undoIcon}
            label={trans.__('Undo agent changes')}
            tooltip={undoReason ? `${undoHint} ${undoReason}` : undoHint}
            className="jp-AAEPPanel-undo"
            unavailable={!canUndo}
            describedBy={props.undoError ? `${undoHintId} ${undoErrorId}` : undoHintId}
            keyShortcuts={props.undoShortcut}
            // Also when unavailable: the controller then says why (nothing to undo, working…).
            onClick={() => props.onUndo()}
          />
        )}
        {supports.approval_mode && approvalMode === 'auto' && (
          <span className="jp-AAEPToolbar-badge">{trans.__('Auto-approve on')}</span>
        )}
        <span className="jp-AAEPToolbar-spacer" />
        {props.children}
        {supports.pause && (
          <span id={pauseHintId} className="jp-sr-only">
            {pauseHint}
          </span>
        )}
        {supports.continue && props.canContinue && (
          <span id={continueHintId} className="jp-sr-only">
            {trans.__('The last request was interrupted; Continue asks the agent to pick up where it stopped.')}
          </span>
        )}
        {supports.stop && !canStop && (
          <span id={stopHintId} className="jp-sr-only">
            {disabled ? trans.__('Not connected.') : trans.__('Nothing is running.')}
          </span>
        )}
        {supports.revert && (
          <span id={undoHintId} className="jp-sr-only">
            {undoHint}
            {undoReason && ` ${undoReason}`}
          </span>
        )}
      </div>
      {supports.revert && props.undoError && (
        <p id={undoErrorId} className="jp-AAEPPanel-undoError">
          {props.undoError}
        </p>
      )}
    </div>
  );
}
