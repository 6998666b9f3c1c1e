/**
 * Plan mode's one decision: the plan as a numbered list, "Edit the plan", and
 * the four choices as buttons (Tab between them, Enter or Space to choose).
 * The Approve command (one key) is the first choice; Reject the last. "Keep
 * planning" opens a comment box whose text the agent receives.
 */
import { TranslationBundle } from '@jupyterlab/translation';
import React, { useRef, useState } from 'react';

import { str } from '../aaep';
import { IRequestItem } from '../model';
import { IRequestShortcuts, outcomeText } from './ConfirmationCard';
import { Countdown } from './Countdown';
import { RequestCardFrame } from './RequestCardFrame';
import { useId, useNow } from './hooks';
import {
  IReplyDetails,
  PLAN_CHOICES,
  PlanChoice,
  planChoiceLabel,
  planOutcome,
  planReply,
  planTitle,
  readPlan
} from './planWords';

/** Props of {@link PlanCard}. */
export interface IPlanCardProps {
  item: IRequestItem;
  trans: TranslationBundle;
  shortcuts?: IRequestShortcuts;
  onReply: (item: IRequestItem, decision: 'accept' | 'reject', details?: IReplyDetails) => void;
  /** Opens the plan's Markdown file in JupyterLab's editor (none: no Edit button). */
  onOpenPlan?: (path: string) => void;
}

/** Renders an `awaiting.confirmation` whose `extra_context.plan` holds a plan. */
export function PlanCard(props: IPlanCardProps): JSX.Element | null {
  const { item, trans, shortcuts } = props;
  const event = item.event;
  const plan = readPlan(event.extra_context);
  const pressed = useRef(false);
  const [chosen, setChosen] = useState<PlanChoice | null>(null);
  const [commenting, setCommenting] = useState(false);
  const [comment, setComment] = useState('');
  const titleId = useId('jp-AAEPPlan-title');
  const stepsId = useId('jp-AAEPPlan-steps');
  const deadlineId = useId('jp-AAEPPlan-deadline');
  const commentId = useId('jp-AAEPPlan-comment');
  const pending = item.state === 'pending';
  const now = useNow(pending && item.deadline !== null);
  const expired = pending && item.deadline !== null && item.deadline <= now;
  if (plan === null) {
    return null;
  }
  const choose = (choice: PlanChoice) => {
    if (choice === 'keep_planning' && !commenting) {
      setCommenting(true); // the comment box comes first; its Send makes the choice
      return;
    }
    const { decision, details } = planReply(choice, comment);
    pressed.current = true;
    setChosen(choice);
    props.onReply(item, decision, details);
  };
  const keys =
    shortcuts?.approve && shortcuts.reject
      ? trans.__(
          'Keys: %1 runs the plan, asking only for flagged code; %2 rejects it.',
          shortcuts.approve,
          shortcuts.reject
        )
      : null;
  const answered = chosen !== null && (item.state === 'accepted' || item.state === 'rejected');

  return (
    <RequestCardFrame
      item={item}
      titleId={titleId}
      describedBy={[stepsId, ...(item.deadline !== null && pending && !expired ? [deadlineId] : [])]}
      className="jp-AAEPCard-confirmation jp-AAEPPlanCard"
      open={pending && !expired}
      pressed={pressed}
      keys={keys}
      outcome={
        expired
          ? trans.__('Expired without an answer: the plan was rejected.')
          : answered
            ? planOutcome(chosen as PlanChoice, trans)
            : outcomeText(item, trans)
      }
      actions={
        <>
          {plan.file && props.onOpenPlan && (
            <button
              type="button"
              className="jp-Button jp-mod-styled jp-AAEPPlanCard-edit"
              onClick={() => props.onOpenPlan?.(plan.file as string)}
            >
              {trans.__('Edit the plan')}
            </button>
          )}
          <div
            className="jp-AAEPCard-actions jp-AAEPPlanCard-choices"
            role="group"
            aria-label={trans.__('How should the plan run?')}
          >
            {PLAN_CHOICES.map(choice => (
              <button
                key={choice}
                type="button"
                className={`jp-Button jp-mod-styled jp-AAEPPlanCard-choice jp-AAEPPlanCard-${choice}${
                  choice === 'run' ? ' jp-mod-accept jp-AAEPCard-approve' : ''
                }${choice === 'reject' ? ' jp-mod-reject jp-AAEPCard-reject' : ''}`}
                aria-keyshortcuts={
                  choice === 'run' ? shortcuts?.approveAria : choice === 'reject' ? shortcuts?.rejectAria : undefined
                }
                aria-expanded={choice === 'keep_planning' ? commenting : undefined}
                onClick={() => choose(choice)}
              >
                {planChoiceLabel(choice, trans)}
              </button>
            ))}
          </div>
          {commenting && (
            <div className="jp-AAEPPlanCard-commentBox">
              <label htmlFor={commentId}>{trans.__('What should change in the plan?')}</label>
              <textarea
                id={commentId}
                className="jp-AAEPPlanCard-commentInput"
                value={comment}
                autoFocus
                onChange={e => setComment(e.target.value)}
              />
              <button
                type="button"
                className="jp-Button jp-mod-styled jp-AAEPPlanCard-sendComment"
                onClick={() => choose('keep_planning')}
              >
                {trans.__('Send the comment')}
              </button>
            </div>
          )}
        </>
      }
    >
      <h4 id={titleId} className="jp-AAEPCard-title">
        {planTitle(plan, trans)}
      </h4>
      <ol id={stepsId} className="jp-AAEPPlanCard-steps" aria-label={trans.__('Steps of the plan')}>
        {plan.steps.map((step, index) => (
          <li key={index}>{step}</li>
        ))}
      </ol>
      <p className="jp-AAEPPlanCard-consequence">{str(event, 'consequence') ?? ''}</p>
      {item.deadline !== null && pending && !expired && (
        <p id={deadlineId} className="jp-AAEPPlanCard-deadline">
          {trans.__('If you do not answer, the plan is rejected;')}{' '}
          <Countdown deadline={item.deadline} active={pending} trans={trans} />
        </p>
      )}
    </RequestCardFrame>
  );
}
