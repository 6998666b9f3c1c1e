/**
 * Everything under the transcript: the toolbar (run buttons, *Describe this
 * figure* when there is a figure, Settings), the settings when open, and the
 * message box. It keeps its height; only the open settings scroll.
 */
import { TranslationBundle } from '@jupyterlab/translation';
import { settingsIcon } from '@jupyterlab/ui-components';
import { CommandRegistry } from '@lumino/commands';
import React, { useState } from 'react';

import { Verbosity } from '../aaep';
import { CommandIDs } from '../commands';
import { waitingFor } from '../chatSession';
import { ChatController } from '../controller';
import { FigureDescriber } from '../figures';
import { IMentionSource } from '../mentions';
import { ChatModel } from '../model';
import { AgentChooser } from '../agentChoice';
import { ModelChooser } from '../modelChoice';
import { ariaShortcut } from '../shortcuts';
import { Composer } from './Composer';
import { FigureDescription } from './FigureDescription';
import { focusSoon, useId, useSignals } from './hooks';
import { IPanelSettingsProps, PanelSettings } from './PanelSettings';
import { RunControls } from './RunControls';
import { ToolbarIconButton } from './ToolbarIconButton';

/**
 * The settings with the verbosity read from (and set through) its command, so
 * a change from the palette shows here too.
 */
function SettingsRegion(
  props: Omit<IPanelSettingsProps, 'verbosity' | 'onVerbosity'> & { commands: CommandRegistry }
): JSX.Element {
  const { commands, ...rest } = props;
  useSignals(commands.commandChanged);
  const verbosity =
    (['terse', 'normal', 'detailed'] as Verbosity[]).find(v =>
      commands.isToggled(CommandIDs.setVerbosity, { verbosity: v })
    ) ?? 'normal';
  return (
    <PanelSettings
      {...rest}
      verbosity={verbosity}
      onVerbosity={v => void commands.execute(CommandIDs.setVerbosity, { verbosity: v })}
    />
  );
}

/** Props of {@link PanelFooter}. */
export interface IPanelFooterProps {
  controller: ChatController;
  model: ChatModel;
  commands: CommandRegistry;
  trans: TranslationBundle;
  describer?: FigureDescriber;
  chooser?: ModelChooser;
  agentChooser?: AgentChooser;
  mentions?: IMentionSource;
  /** Whether the chat's connection is open. */
  connected: boolean;
}

export function PanelFooter(props: IPanelFooterProps): JSX.Element {
  const { controller, model, commands, trans, connected } = props;
  const session = controller.session; // the person's actions go to the chat drawn here
  const [settingsOpen, setSettingsOpen] = useState(false);
  const settingsId = useId('jp-AAEPSettings');
  return (
    <div className="jp-AAEPPanel-footer">
      <RunControls
        trans={trans}
        status={model.status}
        approvalMode={model.approvalMode}
        supports={model.supports}
        stopShortcut={ariaShortcut(commands, CommandIDs.stop)}
        canUndo={model.canRevert}
        undoing={model.reverting}
        undoError={model.revertError}
        undoShortcut={ariaShortcut(commands, CommandIDs.undoChanges)}
        pauseShortcut={ariaShortcut(commands, CommandIDs.togglePause)}
        canContinue={model.canContinue}
        continueShortcut={ariaShortcut(commands, CommandIDs.continueChat)}
        onContinue={() => {
          // The button goes away: the focus moves to the message box (now the steer box).
          void session?.continueChat();
          focusSoon('.jp-AAEPComposer-input');
        }}
        disabled={!connected}
        onControl={action => void session?.control(action)}
        onUndo={() => void session?.revert()}
      >
        {props.describer && (
          <FigureDescription
            describer={props.describer}
            trans={trans}
            disabled={!connected || model.isRunning}
            onDescribe={() => void commands.execute('jupyter-aaep:describe-figure')}
          />
        )}
        <ToolbarIconButton
          icon={settingsIcon}
          label={trans.__('Settings')}
          tooltip={trans.__('Approval mode, model, announcements and tool servers')}
          className="jp-AAEPPanel-settingsToggle"
          expanded={settingsOpen}
          controls={settingsId}
          onClick={() => setSettingsOpen(!settingsOpen)}
        />
      </RunControls>
      {settingsOpen && (
        <SettingsRegion
          commands={commands}
          trans={trans}
          id={settingsId}
          disabled={!connected}
          approvalModeSupported={model.supports.approval_mode}
          approvalMode={model.approvalMode}
          allowedModes={model.policy.approvalModes}
          policyMessage={model.policy.locked.includes('approval_mode') ? model.policy.message : null}
          onApprovalMode={mode => void session?.setApprovalMode(mode)}
          chooser={props.chooser}
          announce={(text, politeness) => controller.announcer.announce(text, politeness)}
          notebookPath={controller.notebookPath}
          agentChooser={props.agentChooser}
          onClose={() => {
            setSettingsOpen(false);
            focusSoon('.jp-AAEPPanel-settingsToggle');
          }}
        />
      )}
      <Composer
        trans={trans}
        running={model.isRunning}
        acceptsGuidance={model.supports.guidance}
        paused={model.status === 'paused'}
        waiting={(() => {
          const waiting = waitingFor(model);
          return waiting?.answersIt ? 'question' : waiting ? 'approval' : null;
        })()}
        disabled={!connected}
        connecting={model.firstConnecting}
        mentions={props.mentions}
        onSend={async (text, context) => session?.sendText(text, context)}
      />
    </div>
  );
}
