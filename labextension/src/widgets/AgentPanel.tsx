/**
 * The side panel: a labelled region holding the chat of the active notebook.
 */
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { ITranslator, TranslationBundle } from '@jupyterlab/translation';
import { LabIcon, ReactWidget, SidePanel } from '@jupyterlab/ui-components';
import { CommandRegistry } from '@lumino/commands';
import { Message } from '@lumino/messaging';
import { ISignal, Signal } from '@lumino/signaling';
import { Panel } from '@lumino/widgets';
import React, { useRef, useState } from 'react';

import { ChatList } from '../components/ChatList';
import { focusSoon, useSignals } from '../components/hooks';
import { AccessibilityChecker } from '../accessibilityCheck';
import { IAccessibilityProblem } from '../chatClient';
import { AccessibilityReport } from '../components/AccessibilityReport';
import { PanelFooter } from '../components/PanelFooter';
import { useScrollRegions } from '../components/scrollRegions';
import { ICitationNavigator } from '../citationNavigator';
import { Transcript } from '../components/Transcript';
import { CommandIDs } from '../commands';
import { ChatController } from '../controller';
import { FigureDescriber } from '../figures';
import { IMentionSource } from '../mentions';
import { AgentChooser } from '../agentChoice';
import { ModelChooser } from '../modelChoice';
import { ChatModel, TranscriptItem } from '../model';
import { usageMeterText } from '../usage';
import { planEditorPath } from '../planDrive';
import { ariaShortcut, shortcutLabel } from '../shortcuts';

/** The panel's icon: a speech bubble with a sound wave. */
export const agentIcon = new LabIcon({
  name: 'jupyter-aaep:agent',
  svgstr: `<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 24 24">
  <path class="jp-icon3" fill="#616161" d="M4 3h16a2 2 0 0 1 2 2v10a2 2 0 0 1-2 2H9l-5 4v-4a2 2 0 0 1-2-2V5a2 2 0 0 1 2-2zm0 2v10h2v2l2.5-2H20V5H4z"/>
  <path class="jp-icon3" fill="#616161" d="M7 9h2v2H7zm3-2h2v6h-2zm3 1h2v4h-2zm3 1h2v2h-2z"/>
</svg>`
});

/** Props of {@link AgentView}: the panel's parts, with the panel's words. */
type IAgentViewProps = Omit<AgentPanel.IOptions, 'translator'> & { trans: TranslationBundle };

/** "Check this notebook's accessibility": its report, and going to a problem's cell. */
export interface IAccessibilityParts {
  checker: AccessibilityChecker;
  goTo: (notebookPath: string, problem: IAccessibilityProblem) => void;
}

/**
 * What the agent is doing, in a few words for the status line: the run
 * status, refined by the agent's own state when it has a known name.
 */
export function stateLabel(model: ChatModel, trans: TranslationBundle): string {
  if (model.status === 'idle') {
    return trans.__('Idle');
  }
  if (model.status === 'paused') {
    return trans.__('Paused');
  }
  const named = activityLabel(model);
  if (named) {
    return named;
  }
  const known: Record<string, string> = {
    thinking: trans.__('Thinking'),
    calling_tool: trans.__('Running a tool'),
    writing_output: trans.__('Writing'),
    awaiting_input: trans.__('Waiting for you'),
    deciding: trans.__('Deciding'),
    compacting_context: trans.__('Summarising earlier context'),
    paused: trans.__('Paused')
  };
  return known[model.agentState] ?? trans.__('Working');
}

/**
 * Whose step runs, in the server's words ("Claude Code is reading the
 * notebook"), or '' when the status line names a state instead.
 */
function activityLabel(model: ChatModel): string {
  return model.status === 'running' && model.activity ? model.activity.replace(/[.\s]+$/u, '') : '';
}

/** The compact usage meter ("12.3k tokens · ≈ $0.04"), or '' without figures. */
export function usageMeter(model: ChatModel, trans: TranslationBundle): string {
  return usageMeterText(model.usage, trans);
}

/** Base name of a path, for display. */
function baseName(path: string): string {
  const parts = path.split('/');
  return parts[parts.length - 1] || path;
}

/**
 * Everything inside the panel; re-renders from the controller's and the
 * model's signals.
 */
function AgentView(props: IAgentViewProps): JSX.Element {
  const { controller, rendermime, commands, trans } = props;
  // The person's actions go to the open chat's session; its model is what is shown.
  const session = controller.session;
  const model = session?.model ?? null;
  useSignals(controller.changed, model?.changed, commands.keyBindingChanged);
  const error = controller.error;
  const shortcuts = {
    approve: shortcutLabel(commands, CommandIDs.approve),
    reject: shortcutLabel(commands, CommandIDs.reject),
    approveAria: ariaShortcut(commands, CommandIDs.approve),
    rejectAria: ariaShortcut(commands, CommandIDs.reject)
  };
  const jumpKey = shortcutLabel(commands, CommandIDs.jumpToConfirmation);
  const [chatsOpen, setChatsOpen] = useState(false);
  const body = useRef<HTMLDivElement>(null);
  useScrollRegions(body, trans);
  // The "show chats" command opens the list through the controller.
  useSignals(controller.chatListRequested);
  if (controller.takeChatListRequest() && !chatsOpen) {
    setChatsOpen(true);
  }

  const statusText = model ? stateLabel(model, trans) : '';
  const meter = model ? usageMeter(model, trans) : '';
  const connectionText = model
    ? {
        connecting: trans.__('connecting…'),
        open: trans.__('connected'),
        reconnecting: trans.__('reconnecting…'),
        failed: trans.__('connection lost, retrying'),
        closed: trans.__('not connected')
      }[model.connection]
    : '';
  const pending = model ? model.pending : [];
  const connected = !!model && model.connection === 'open';

  const jumpToRequest = () => {
    const first = pending[0];
    if (!first) {
      return;
    }
    const card = document.querySelector<HTMLElement>(`.jp-AAEPPanel [data-request-id="${CSS.escape(first.id)}"]`);
    if (!card) {
      return;
    }
    // As the command does: the card's start, then enough for its answer buttons.
    card.focus({ preventScroll: true });
    card.scrollIntoView({ block: 'start' });
    card.querySelector<HTMLElement>('.jp-AAEPCard-actions')?.scrollIntoView({ block: 'nearest' });
  };

  return (
    <div className={`jp-AAEPPanel-body${pending.length > 0 ? ' jp-mod-waiting' : ''}`} ref={body}>
      <div className="jp-AAEPPanel-header">
        <h2 className="jp-AAEPPanel-title">{trans.__('AI agent')}</h2>
        <div className="jp-AAEPPanel-status">
          {/* Read as one phrase; the styled pieces below are for the eye. */}
          <span className="jp-sr-only">
            {[
              controller.notebookPath
                ? trans.__('Notebook %1', baseName(controller.notebookPath))
                : trans.__('No notebook selected'),
              // A state word joins the phrase in lower case; a named agent keeps its name.
              model ? activityLabel(model) || statusText.toLowerCase() : '',
              connectionText
            ]
              .filter(Boolean)
              .join(', ')}
          </span>
          <span aria-hidden="true">
            {controller.notebookPath
              ? trans.__('Notebook: %1', baseName(controller.notebookPath))
              : trans.__('No notebook selected')}
            {model && (
              <>
                {' · '}
                <span className={`jp-AAEPPanel-runState jp-mod-${model.status}`}>{statusText}</span>
                {' · '}
                <span className={`jp-AAEPPanel-connection jp-mod-${model.connection}`}>{connectionText}</span>
              </>
            )}
          </span>
        </div>
        {model && meter && (
          <div
            className="jp-AAEPPanel-usage"
            title={trans.__('Estimated token usage and cost of this chat, updated when a request ends.')}
          >
            {meter}
          </div>
        )}
        {model && controller.notebookPath && (
          <ChatList
            trans={trans}
            currentChatId={model.chatId}
            currentState={{ status: model.status, canContinue: model.canContinue }}
            open={chatsOpen}
            onOpenChange={setChatsOpen}
            listChats={before => controller.listChats(before)}
            onSwitch={chatId => {
              void controller.switchChat(chatId).then(() => focusSoon('.jp-AAEPComposer-input'));
            }}
            onNewChat={() => {
              setChatsOpen(false);
              void controller.newChat().then(() => focusSoon('.jp-AAEPComposer-input'));
            }}
            announce={text => controller.announcer.announce(text)}
            listShortcut={ariaShortcut(commands, CommandIDs.showChats)}
            newShortcut={ariaShortcut(commands, CommandIDs.newChat)}
            disabled={!connected}
          />
        )}
      </div>
      {controller.notebookPath === null && (
        <p className="jp-AAEPPanel-placeholder">
          {trans.__('Open or select a notebook to chat with the agent about it. Each notebook has its own chat.')}
        </p>
      )}
      {controller.loading && <p className="jp-AAEPPanel-placeholder">{trans.__('Loading the chat…')}</p>}
      {error && (
        <div className="jp-AAEPPanel-error">
          <h3 className="jp-AAEPPanel-errorTitle">{trans.__('The agent is unavailable')}</h3>
          <p>{error.message}</p>
          <button
            type="button"
            className="jp-Button jp-mod-styled"
            onClick={() => void controller.openNotebook(controller.notebookPath, true)}
          >
            {trans.__('Try again')}
          </button>
        </div>
      )}
      {model && (
        <>
          {pending.length > 0 && (
            <button
              type="button"
              className="jp-Button jp-mod-styled jp-AAEPPanel-pendingBanner"
              aria-keyshortcuts={ariaShortcut(commands, CommandIDs.jumpToConfirmation)}
              onClick={jumpToRequest}
            >
              {trans._n(
                '1 request is waiting for your answer: go to it',
                '%1 requests are waiting for your answer: go to the first',
                pending.length
              )}
              {jumpKey && ` (${jumpKey})`}
            </button>
          )}
          <Transcript
            model={model}
            rendermime={rendermime}
            trans={trans}
            shortcuts={shortcuts}
            onReply={(item: TranscriptItem, decision, details) => void session?.reply(item, decision, details)}
            onOpenPlan={path =>
              void commands.execute('docmanager:open', { path: planEditorPath(path), factory: 'Editor' })
            }
            onAnswer={(item: TranscriptItem, response) => void session?.answer(item, response)}
            citations={props.citations}
          />
          {props.accessibility && (
            <AccessibilityReport
              checker={props.accessibility.checker}
              trans={trans}
              notebookPath={controller.notebookPath}
              onGoTo={problem => {
                const path = controller.notebookPath;
                if (path) {
                  props.accessibility?.goTo(path, problem);
                }
              }}
            />
          )}
          <PanelFooter
            controller={controller}
            model={model}
            commands={commands}
            trans={trans}
            describer={props.describer}
            chooser={props.chooser}
            agentChooser={props.agentChooser}
            mentions={props.mentions}
            connected={connected}
          />
        </>
      )}
    </div>
  );
}

/**
 * The agent side panel.
 */
export class AgentPanel extends SidePanel {
  /**
   * @param options.controller The chat controller the panel shows.
   * @param options.rendermime Renders the agent's Markdown answers.
   * @param options.translator The application translator.
   */
  constructor(options: AgentPanel.IOptions) {
    const trans = options.translator.load('jupyter_aaep');
    super({ content: new Panel(), translator: options.translator });
    this.id = 'jupyter-aaep-panel';
    this.addClass('jp-AAEPPanel');
    this.title.icon = agentIcon;
    this.title.caption = trans.__('AI agent');
    // The SidePanel content is already a region; give it our name.
    this.content.node.setAttribute('aria-label', trans.__('AI agent panel'));
    const { translator: _, ...parts } = options;
    const view = ReactWidget.create(<AgentView {...parts} trans={trans} />);
    view.addClass('jp-AAEPPanel-view');
    this.addWidget(view);
  }

  /** Emitted when the panel is shown or hidden. */
  get visibilityChanged(): ISignal<this, boolean> {
    return this._visibilityChanged;
  }

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    this._visibilityChanged.emit(true);
  }

  protected onAfterHide(msg: Message): void {
    super.onAfterHide(msg);
    this._visibilityChanged.emit(false);
  }

  dispose(): void {
    Signal.clearData(this);
    super.dispose();
  }

  private _visibilityChanged = new Signal<this, boolean>(this);
}

/** Options of {@link AgentPanel}. */
export namespace AgentPanel {
  export interface IOptions {
    controller: ChatController;
    /** "Describe this figure" and its alt text (optional: tests build the panel without). */
    describer?: FigureDescriber;
    /** The model picker's data. */
    chooser?: ModelChooser;
    /** The agent picker's data. */
    agentChooser?: AgentChooser;
    /** What `@` in the message box offers. */
    mentions?: IMentionSource;
    rendermime: IRenderMimeRegistry;
    /** The application's commands (their key bindings are shown). */
    commands: CommandRegistry;
    translator: ITranslator;
    /** Names and follows the answers' cell citations (optional: tests build the panel without). */
    citations?: ICitationNavigator;
    /** "Check this notebook's accessibility" (optional: tests build the panel without). */
    accessibility?: IAccessibilityParts;
  }
}
