/**
 * A clarification question with the answer controls its accepted kinds allow:
 * choice buttons, Yes / No, a number field or a text field.
 */
import { TranslationBundle } from '@jupyterlab/translation';
import React, { useRef, useState } from 'react';

import { readChoices, readResponseKinds, str } from '../aaep';
import { IRequestItem } from '../model';
import { outcomeText } from './ConfirmationCard';
import { Countdown } from './Countdown';
import { RequestCardFrame } from './RequestCardFrame';
import { useId, useNow } from './hooks';

type ClarificationItem = IRequestItem;

/** Props of {@link ClarificationCard}. */
export interface IClarificationCardProps {
  item: ClarificationItem;
  trans: TranslationBundle;
  onAnswer: (item: ClarificationItem, response: string | boolean | number) => void;
}

/**
 * Renders one `awaiting.clarification` event.
 */
export function ClarificationCard(props: IClarificationCardProps): JSX.Element {
  const { item, trans } = props;
  const event = item.event;
  const pressed = useRef(false);
  const onAnswer = (answered: ClarificationItem, response: string | boolean | number) => {
    // The answer controls go away once answered: the focus goes to the short outcome
    // (useFocusOutcome), never back to the card, which would be read again.
    pressed.current = true;
    props.onAnswer(answered, response);
  };
  const titleId = useId('jp-AAEPCard-title');
  const inputId = useId('jp-AAEPCard-input');
  const [text, setText] = useState(str(event, 'default_response') ?? '');
  const kinds = readResponseKinds(event);
  const choices = readChoices(event);
  const pending = item.state === 'pending';
  const now = useNow(pending && item.deadline !== null);
  const expired = pending && item.deadline !== null && item.deadline <= now;
  const open = pending && !expired;
  const numeric = kinds.includes('numeric') && !kinds.includes('freetext');

  const submitText = (e: React.FormEvent) => {
    e.preventDefault();
    const value = text.trim();
    if (!value) {
      return;
    }
    if (numeric) {
      const n = Number(value);
      if (Number.isFinite(n)) {
        onAnswer(item, n);
      }
    } else {
      onAnswer(item, value);
    }
  };

  return (
    <RequestCardFrame
      item={item}
      titleId={titleId}
      className="jp-AAEPCard-clarification"
      open={open}
      pressed={pressed}
      outcome={expired ? trans.__('Expired without an answer.') : outcomeText(item, trans)}
      actions={
        <>
          {kinds.includes('multiple_choice') && choices.length > 0 && (
            <div className="jp-AAEPCard-actions" role="group" aria-label={trans.__('Choices')}>
              {choices.map(choice => (
                <button
                  key={choice.value}
                  type="button"
                  className="jp-Button jp-mod-styled jp-AAEPCard-choice"
                  onClick={() => onAnswer(item, choice.value)}
                >
                  {choice.label}
                </button>
              ))}
            </div>
          )}
          {kinds.includes('yes_no') && (
            <div className="jp-AAEPCard-actions">
              <button
                type="button"
                className="jp-Button jp-mod-styled jp-mod-accept"
                onClick={() => onAnswer(item, true)}
              >
                {trans.__('Yes')}
              </button>
              <button type="button" className="jp-Button jp-mod-styled" onClick={() => onAnswer(item, false)}>
                {trans.__('No')}
              </button>
            </div>
          )}
          {(kinds.includes('freetext') || kinds.includes('numeric')) && (
            <form className="jp-AAEPCard-answer" onSubmit={submitText}>
              <label htmlFor={inputId}>{numeric ? trans.__('Your answer (a number)') : trans.__('Your answer')}</label>
              <input
                id={inputId}
                className="jp-mod-styled"
                type={numeric ? 'number' : 'text'}
                value={text}
                onChange={e => setText(e.target.value)}
              />
              <button type="submit" className="jp-Button jp-mod-styled jp-mod-accept">
                {trans.__('Send answer')}
              </button>
            </form>
          )}
        </>
      }
    >
      <h4 id={titleId} className="jp-AAEPCard-title">
        {trans.__('Question: %1', str(event, 'question') ?? '')}
      </h4>
      {str(event, 'context') && <p className="jp-AAEPCard-summary">{str(event, 'context')}</p>}
      {/* As on confirmation cards, the clock goes once the question is answered, resolved or expired. */}
      {item.deadline !== null && open && (
        <p className="jp-AAEPCard-deadline">
          {trans.__('Time to answer:')} <Countdown deadline={item.deadline} active={open} trans={trans} />
        </p>
      )}
    </RequestCardFrame>
  );
}
