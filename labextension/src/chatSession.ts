/**
 * The open chat as the person acts on it: what they type, their answers to
 * waiting requests, Stop/Pause/Resume, Continue, Undo and the approval mode.
 * Each action sends one message with the chat client and awaits that
 * message's own answer; what the person should hear is a signal
 * ({@link SessionLife.said}), never speech. The chat's life (replay, stream,
 * resync, timers) is the base class, `sessionLife.ts`.
 */
import { JSONRecord, nowTimestamp } from './aaep';
import { ChatMessage, IAnswers } from './chatClient';
import { ApprovalMode, TranscriptItem } from './model';
import { SessionLife, waitingFor } from './sessionLife';
import { ControlAction, describeError } from './sessionWords';
import { IReplyDetails } from './components/planWords';

export { waitingFor };

/**
 * One open chat: its life and the person's actions on it.
 */
export class ChatSession extends SessionLife {
  /**
   * Send what the person typed: a new request, or guidance while the agent
   * works (only when the server accepts guidance; the composer says so
   * otherwise).
   */
  async sendText(text: string, context?: JSONRecord[]): Promise<void> {
    const model = this.model;
    const trimmed = text.trim();
    if (!trimmed || this.isDisposed) {
      return;
    }
    // While the agent waits for the person, a message is not guidance (which would only be
    // read after the answer): it answers a waiting question, or replaces a waiting approval
    // with a new request, as over the API. The composer says which (`waitingFor`).
    const waiting = waitingFor(model);
    if (waiting?.answersIt) {
      await this.answer(waiting.item, trimmed);
      return;
    }
    const steering = model.isRunning && waiting === null;
    if (steering && !model.supports.guidance) {
      this.say({ kind: 'no-guidance' });
      return;
    }
    const itemId = model.addUserMessage(trimmed, steering);
    const paused = model.status === 'paused';
    // Context picked with @ goes on user_input (the server makes it guidance while the agent works).
    if (steering && !context?.length) {
      const answer = await this.request({ kind: 'guidance', text: trimmed });
      if (answer) {
        model.attachGuidance(itemId, answer.guidance_id, answer.session_id ?? undefined);
        this.say({ kind: 'guidance-sent', paused });
      } else if (!this.isDisposed) {
        model.markUnsent(itemId);
      }
      return;
    }
    let answer: IAnswers['user_input'];
    try {
      answer = await this.client.request({
        kind: 'user_input',
        text: trimmed,
        ...(context?.length ? { context } : {})
      });
    } catch (error) {
      const mine = model.item(itemId);
      if (!this.isDisposed && !(mine?.kind === 'user' && mine.sessionId)) {
        // Refused (e.g. the agent is still busy): it never started. (An answer lost on the
        // way while its session started, seen by session.started, is no failure.)
        model.markUnsent(itemId);
        this.failed(error);
      }
      return;
    }
    if (answer.as_guidance) {
      // The agent was already working: the server took the message as guidance.
      model.attachGuidance(itemId, answer.guidance_id, answer.session_id);
      this.say({ kind: 'sent-as-guidance' });
    } else {
      model.attachSession(itemId, answer.session_id);
    }
  }

  /**
   * Change the terms of the live subscription (AAEP §5.7), e.g. the
   * verbosity after the person changed it. Without a subscription yet there
   * is nothing to do: the next handshake carries the current settings.
   *
   * @param capabilities The changed capabilities only.
   */
  async renegotiate(capabilities: JSONRecord): Promise<void> {
    const id = this.model.subscriptionId;
    if (!this.subscriptionGranted || !id) {
      return;
    }
    try {
      await this.stream.sendSubscription({ type: 'subscription.renegotiate', subscription_id: id, capabilities });
    } catch (error) {
      this.failed(error);
    }
  }

  /** Answer a confirmation card; `details` carry a plan's choice or the standing permission
   * the card offered (the server gives that only for the panel's own approving answer). */
  async reply(item: TranscriptItem, decision: 'accept' | 'reject', details?: IReplyDetails): Promise<void> {
    if (item.kind !== 'confirmation' || item.state !== 'pending') {
      return;
    }
    const decidedAt = nowTimestamp();
    this.model.setRequestState(item.id, 'sending');
    const ok = await this._replied({
      type: 'confirmation.reply',
      reply_token: item.event.reply_token,
      decision,
      subscription_id: this.subscriptionId(),
      timestamp: decidedAt,
      decided_by: 'user:jupyterlab',
      ...details // a plan's choice, or a grant (components/planWords.ts)
    });
    // Nothing is said here: the producer confirms the outcome to every
    // subscriber (a state change out of awaiting_input), and that is announced.
    this.model.setRequestState(item.id, ok ? (decision === 'accept' ? 'accepted' : 'rejected') : 'pending');
  }

  /** Answer a clarification card. */
  async answer(item: TranscriptItem, response: string | boolean | number): Promise<void> {
    if (item.kind !== 'clarification' || item.state !== 'pending') {
      return;
    }
    const decidedAt = nowTimestamp();
    this.model.setRequestState(item.id, 'sending');
    const ok = await this._replied({
      type: 'clarification.reply',
      reply_token: item.event.reply_token,
      response,
      subscription_id: this.subscriptionId(),
      timestamp: decidedAt,
      decided_by: 'user:jupyterlab'
    });
    // As for confirmations, the producer's follow-up state change is announced.
    this.model.setRequestState(item.id, ok ? 'answered' : 'pending', ok ? String(response) : undefined);
  }

  /** Stop, pause or resume the running session. */
  async control(action: ControlAction): Promise<void> {
    const model = this.model;
    if (!model.isRunning) {
      this.say({ kind: 'nothing-to-control', action });
      return;
    }
    const supported = { stop: model.supports.stop, pause: model.supports.pause, resume: model.supports.resume };
    if (!supported[action]) {
      this.say({ kind: 'cannot-control', action });
      return;
    }
    const answer = await this.request({ kind: 'control', action });
    if (answer && (answer.stopped === false || answer.paused === false || answer.resumed === false)) {
      // Nothing was running (or paused) any more: it changed while the request travelled.
      void this.resync();
    }
    if (answer && action === 'pause') {
      // What the agent did is said when its state changes ("Paused…", "Resumed.", "You
      // stopped the agent."), right away for a stop or a resume; a pause waits for a safe
      // point, so it is confirmed now.
      this.say({ kind: 'pausing' });
    }
  }

  /** Pause a running session, or resume a paused one. */
  async togglePause(): Promise<void> {
    const model = this.model;
    if (!model.supports.pause) {
      this.say({ kind: 'cannot-control', action: 'pause' });
    } else if (!model.isRunning) {
      this.say({ kind: 'nothing-to-control', action: 'pause' });
    } else {
      await this.control(model.status === 'paused' ? 'resume' : 'pause');
    }
  }

  /**
   * Continue the chat's interrupted request (after a server restart or a
   * recoverable error): the server starts a new session from the history.
   */
  async continueChat(): Promise<void> {
    const model = this.model;
    if (!model.canContinue) {
      this.say({ kind: 'nothing-to-continue' });
      return;
    }
    model.clearContinue();
    const answer = await this.request({ kind: 'control', action: 'continue' });
    if (answer) {
      this.say({ kind: 'continuing' });
    } else if (!this.isDisposed) {
      // Refused (409 with its reason, already shown): the server says whether it still can.
      void this.refresh();
    }
  }

  /**
   * Undo the agent's own changes of its latest request in this chat (cells
   * someone else changed since are kept as they are). Its answer says what
   * was undone and what was kept; a refusal is shown next to the Undo button
   * and said at once.
   */
  async revert(): Promise<void> {
    const model = this.model;
    if (!model.canRevert) {
      this.say({
        kind: 'cannot-revert',
        why: model.isRunning
          ? 'running'
          : model.reverting
            ? 'reverting'
            : !model.supports.revert
              ? 'unsupported'
              : 'nothing'
      });
      return;
    }
    model.revertError = null;
    model.reverting = true;
    try {
      const answer = await this.client.request({ kind: 'control', action: 'revert' });
      if (!this.isDisposed && answer.summary && answer.session_id) {
        if (model.applyRevert({ sessionId: answer.session_id, summary: answer.summary })) {
          this.say({ kind: 'reverted', summary: answer.summary });
        }
      }
    } catch (error) {
      if (!this.isDisposed) {
        const message = describeError(error, this.trans).message;
        model.reverting = false;
        model.revertError = message;
        this.say({ kind: 'revert-failed', message });
      }
    } finally {
      model.reverting = false;
    }
  }

  /** Change the approval mode of this chat. */
  async setApprovalMode(mode: ApprovalMode): Promise<void> {
    const model = this.model;
    if (!model.supports.approval_mode) {
      return;
    }
    if (!model.policy.approvalModes.includes(mode)) {
      // Locked by the administrator: say what is allowed instead of asking the server.
      this.say({ kind: 'mode-locked', policy: model.policy.message });
      return;
    }
    const previous = model.approvalMode;
    model.approvalMode = mode;
    const answer = await this.request({ kind: 'approval_mode', mode });
    if (!answer) {
      model.approvalMode = previous;
    }
  }

  /** Send a reply; whether it was delivered (the protocol says nothing more). */
  private async _replied(
    message: ChatMessage<'confirmation.reply'> | ChatMessage<'clarification.reply'>
  ): Promise<boolean> {
    try {
      await this.client.request(message);
      return true;
    } catch (error) {
      this.failed(error);
      return false;
    }
  }
}
