/**
 * A confirmation request: what the agent wants to do, its consequence and
 * risk, the exact code, a countdown, and Approve / Reject.
 */
import { TranslationBundle } from '@jupyterlab/translation';
import React, { useRef } from 'react';

import { isRecord, str } from '../aaep';
import { IRequestItem } from '../model';
import { IPermissionWish, grantedWords, readOffers } from '../permissions';
import { CodeLines, codeLines } from './CodeLines';
import { Countdown } from './Countdown';
import { DiffView, diffDescriptionIds, readChange } from './DiffView';
import { useId, useNow } from './hooks';
import { RequestCardFrame } from './RequestCardFrame';

type RequestItem = IRequestItem;

/** Keys bound to the approve and reject commands, for display and `aria-keyshortcuts`. */
export interface IRequestShortcuts {
  approve: string | null;
  reject: string | null;
  approveAria?: string;
  rejectAria?: string;
}

/** Props of {@link ConfirmationCard}. */
export interface IConfirmationCardProps {
  item: RequestItem;
  trans: TranslationBundle;
  shortcuts?: IRequestShortcuts;
  onReply: (item: RequestItem, decision: 'accept' | 'reject', grant?: IPermissionWish) => void;
}

/** One cell of a multi-cell confirmation (`extra_context.cells`). */
export interface ICellToRun {
  /** Position of the cell in the notebook, counted from 1. */
  number: number | null;
  code: string;
}

/**
 * The cells a confirmation would run, in order (`extra_context.cells` of
 * `run_all_cells`), skipping entries without code.
 */
export function readCells(extra: Record<string, unknown>): ICellToRun[] {
  if (!Array.isArray(extra.cells)) {
    return [];
  }
  return extra.cells.flatMap(cell => {
    if (!isRecord(cell) || typeof cell.code !== 'string') {
      return [];
    }
    const n = cell.cell_number;
    return [{ number: typeof n === 'number' && Number.isFinite(n) ? n : null, code: cell.code }];
  });
}

/** Human wording of a request's final state. */
export function outcomeText(item: IRequestItem, trans: TranslationBundle): string {
  switch (item.state) {
    case 'accepted':
      return trans.__('You approved this.');
    case 'rejected':
      return trans.__('You rejected this.');
    case 'answered':
      return trans.__('You answered: %1', item.outcome ?? '');
    case 'cancelled':
      return trans.__('Cancelled: the run ended before an answer.');
    case 'resolved':
      return item.outcome ?? trans.__('Resolved.');
    case 'sending':
      return trans.__('Sending your answer…');
    default:
      return '';
  }
}

/**
 * Renders one `awaiting.confirmation` event.
 */
export function ConfirmationCard(props: IConfirmationCardProps): JSX.Element {
  const { item, trans, shortcuts } = props;
  const event = item.event;
  const pressed = useRef(false);
  const titleId = useId('jp-AAEPCard-title');
  const extra = isRecord(event.extra_context) ? event.extra_context : {};
  const code = typeof extra.code === 'string' ? extra.code : undefined;
  const cells = readCells(extra);
  const change = readChange(extra);
  const diffId = useId('jp-AAEPCard-diff');
  const cellsId = useId('jp-AAEPCard-cells');
  const cellListId = useId('jp-AAEPCard-cellList');
  const riskLabelId = useId('jp-AAEPCard-riskLabel');
  const riskId = useId('jp-AAEPCard-risk');
  const codeCaptionId = useId('jp-AAEPCard-codeCaption');
  const deadlineId = useId('jp-AAEPCard-deadline');
  const automatic = extra.auto_approved === true;
  const lineCount = code !== undefined ? codeLines(code).length : 0;
  const warnings = Array.isArray(extra.risk_flags)
    ? extra.risk_flags.filter((f): f is string => typeof f === 'string' && f.length > 0)
    : [];
  const offers = readOffers(extra);
  const granted = grantedWords(extra);
  const reply = (decision: 'accept' | 'reject', grant?: IPermissionWish) => {
    // The buttons go away once answered: the focus goes to the short outcome
    // (useFocusOutcome), never back to the card, which would be read again.
    pressed.current = true;
    props.onReply(item, decision, grant);
  };
  const keys =
    shortcuts?.approve && shortcuts.reject
      ? trans.__('Keys: %1 approves, %2 rejects.', shortcuts.approve, shortcuts.reject)
      : null;
  const language = str(extra, 'language') ?? str(extra, 'code_language');
  const risk = str(event, 'risk_level') ?? 'low';
  const irreversible = event.irreversible === true || str(event, 'reversibility') === 'irreversible';
  const fallback = str(event, 'default_decision') ?? 'reject';
  const pending = item.state === 'pending';
  const now = useNow(pending && item.deadline !== null);
  const expired = pending && item.deadline !== null && item.deadline <= now;
  const riskText =
    {
      low: trans.__('Low'),
      medium: trans.__('Medium'),
      high: trans.__('High')
    }[risk] ?? risk;

  // Approve and Reject stay in view while the code is read (the bar sticks to the
  // transcript's bottom); the longer "don't ask again" choices follow below it, so the bar
  // keeps its one row and never covers the code of a card on a laptop screen.
  const actions = (
    <>
      <div className="jp-AAEPCard-actions">
        <button
          type="button"
          className="jp-Button jp-mod-styled jp-mod-accept jp-AAEPCard-approve"
          aria-keyshortcuts={shortcuts?.approveAria}
          onClick={() => reply('accept')}
        >
          {trans.__('Approve')}
        </button>
        <button
          type="button"
          className="jp-Button jp-mod-styled jp-mod-reject jp-AAEPCard-reject"
          aria-keyshortcuts={shortcuts?.rejectAria}
          onClick={() => reply('reject')}
        >
          {trans.__('Reject')}
        </button>
      </div>
      {offers.length > 0 && (
        <div className="jp-AAEPCard-grants">
          {offers.map(offer => (
            // Their words say exactly what each allows and where (this chat, then this
            // notebook); they are the last choices, after Reject.
            <button
              key={`${offer.rule} ${offer.scope}`}
              type="button"
              className="jp-Button jp-mod-styled jp-AAEPCard-approveAndGrant"
              data-scope={offer.scope}
              onClick={() => reply('accept', { rule: offer.rule, scope: offer.scope })}
            >
              {offer.label}
            </button>
          ))}
        </div>
      )}
    </>
  );

  return (
    <RequestCardFrame
      item={item}
      titleId={titleId}
      // Focused (Ctrl+Shift+A), the card reads a summary: the action (its
      // name), the risk, how much code ("Code to run, 18 lines"), the time
      // left and the keys. The code itself is not in it: it is the figure
      // below, read line by line on demand. Approve and Reject are the next
      // two Tab stops.
      describedBy={[
        riskLabelId,
        riskId,
        ...(code !== undefined ? [codeCaptionId] : []),
        // A short change (up to three lines in words) is the decision itself and is read
        // with the summary; a longer one only by its caption, its lines on demand.
        ...(change ? diffDescriptionIds(diffId, change).slice(0, change.sentences.length <= 3 ? undefined : 1) : []),
        ...(cells.length > 0 ? [cellsId] : []),
        ...(item.deadline !== null && pending && !expired ? [`${deadlineId}-label`, deadlineId] : [])
      ]}
      className={`jp-AAEPCard-confirmation jp-AAEPCard-risk-${risk}`}
      open={pending && !expired}
      pressed={pressed}
      keys={keys}
      outcome={
        granted
          ? trans.__('Allowed by %1.', granted)
          : automatic
            ? trans.__("Approved automatically by this chat's setting.")
            : expired
              ? trans.__('Expired without an answer.')
              : outcomeText(item, trans)
      }
      actions={actions}
    >
      <h4 id={titleId} className="jp-AAEPCard-title">
        {granted
          ? trans.__('Allowed by %1: %2', granted, str(event, 'action') ?? trans.__('an action'))
          : automatic
            ? trans.__('Approved automatically: %1', str(event, 'action') ?? trans.__('an action'))
            : trans.__('Approval needed: %1', str(event, 'action') ?? trans.__('an action'))}
      </h4>
      <dl className="jp-AAEPCard-facts">
        <dt id={riskLabelId}>{trans.__('Risk')}</dt>
        <dd id={riskId}>
          <span className="jp-AAEPCard-riskBadge">{riskText}</span>
          {irreversible ? ` ${trans.__('(cannot be undone)')}` : ''}
        </dd>
        <dt>{trans.__('Consequence')}</dt>
        <dd>{str(event, 'consequence') ?? trans.__('Not described')}</dd>
        {warnings.length > 0 && (
          <>
            <dt>{trans.__('Warnings')}</dt>
            <dd>
              <ul className="jp-AAEPCard-warnings">
                {warnings.map(w => (
                  <li key={w}>{w}</li>
                ))}
              </ul>
            </dd>
          </>
        )}
        {item.deadline !== null && pending && (
          <>
            <dt id={`${deadlineId}-label`}>{trans.__('If you do not answer')}</dt>
            <dd id={deadlineId}>
              {fallback === 'accept' ? trans.__('it will be approved;') : trans.__('it will be rejected;')}{' '}
              <Countdown deadline={item.deadline} active={pending} trans={trans} />
            </dd>
          </>
        )}
      </dl>
      {change && <DiffView change={change} trans={trans} idPrefix={diffId} />}
      {code !== undefined && (
        <figure className="jp-AAEPCard-code">
          <figcaption id={codeCaptionId}>
            {language
              ? trans._n('Code to run, %1 line (%2):', 'Code to run, %1 lines (%2):', lineCount, language)
              : trans._n('Code to run, %1 line:', 'Code to run, %1 lines:', lineCount)}
          </figcaption>
          {/* Not a Tab stop of its own (Approve comes next): the figure, named by
              its caption, is entered in browse mode or with Alt+R and read one
              line at a time. */}
          <CodeLines code={code} />
        </figure>
      )}
      {cells.length > 0 && (
        <div className="jp-AAEPCard-cells">
          <p id={cellsId} className="jp-AAEPCard-cellsCaption">
            {language
              ? trans._n(
                  'Code to run (%2): %1 cell',
                  'Code to run (%2): %1 cells, in this order',
                  cells.length,
                  language
                )
              : trans._n('Code to run: %1 cell', 'Code to run: %1 cells, in this order', cells.length)}
          </p>
          {/* Every cell is in the list, in full, none is left out. */}
          <ol id={cellListId} className="jp-AAEPCard-cellList" aria-labelledby={cellsId}>
            {cells.map((cell, index) => {
              const number = cell.number ?? index + 1;
              return (
                <li key={index} id={`${cellListId}-${index}`} className="jp-AAEPCard-code">
                  <p className="jp-AAEPCard-cellLabel">
                    {cell.number !== null ? trans.__('Cell %1', number) : trans.__('Cell')}
                  </p>
                  <CodeLines code={cell.code} />
                </li>
              );
            })}
          </ol>
        </div>
      )}
    </RequestCardFrame>
  );
}
