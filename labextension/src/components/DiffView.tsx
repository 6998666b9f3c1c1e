/**
 * What a change to the notebook will do, in a confirmation card ("ask before
 * every change"): the server's `extra_context.change` (see
 * `jupyter_aaep/notebook/_change_preview.py`).
 *
 * Two views of one diff: marked lines for the eye (a `+` or `−` marker and
 * the line number on every changed line, so colour is never the only sign),
 * hidden from screen readers, and the same changes in words ("Line 3 changed
 * from 'x = 1' to 'x = 2'."), a visible list every reader gets.
 */
import { TranslationBundle } from '@jupyterlab/translation';
import React from 'react';

import { isRecord } from '../aaep';
import { useId } from './hooks';

/** One marked line of the visual diff. */
export interface IDiffLine {
  kind: 'context' | 'added' | 'removed';
  text: string;
  oldLine: number | null;
  newLine: number | null;
}

/** A change read defensively from `extra_context.change`. */
export interface IChange {
  kind: 'edit' | 'create' | 'delete' | 'move' | 'clear_outputs' | string;
  cellNumber: number | null;
  cellType: string | null;
  summary: string | null;
  where: string | null;
  fromPosition: number | null;
  toPosition: number | null;
  lines: IDiffLine[];
  sentences: string[];
  /** Whether the server left lines or sentences out (it says how many in words). */
  truncated: boolean;
  cellsWithOutputs: number[];
  outputs: number | null;
}

const KINDS = new Set(['context', 'added', 'removed']);

function num(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

function text(value: unknown): string | null {
  return typeof value === 'string' && value.length > 0 ? value : null;
}

/**
 * The change a confirmation describes, or `null` when it has none (running
 * code, or an older server).
 */
export function readChange(extra: Record<string, unknown>): IChange | null {
  const change = extra.change;
  if (!isRecord(change) || typeof change.kind !== 'string') {
    return null;
  }
  const diff = isRecord(change.diff) ? change.diff : {};
  const lines = Array.isArray(diff.lines)
    ? diff.lines.flatMap((line): IDiffLine[] =>
        isRecord(line) && typeof line.text === 'string' && KINDS.has(String(line.kind))
          ? [
              {
                kind: line.kind as IDiffLine['kind'],
                text: line.text,
                oldLine: num(line.old_line),
                newLine: num(line.new_line)
              }
            ]
          : []
      )
    : [];
  const sentences = Array.isArray(diff.sentences)
    ? diff.sentences.filter((s): s is string => typeof s === 'string' && s.length > 0)
    : [];
  const numbers = Array.isArray(change.cells_with_outputs)
    ? change.cells_with_outputs.filter((n): n is number => num(n) !== null)
    : [];
  return {
    kind: change.kind,
    cellNumber: num(change.cell_number),
    cellType: text(change.cell_type),
    summary: text(diff.summary),
    where: text(change.where),
    fromPosition: num(change.from_position),
    toPosition: num(change.to_position),
    lines,
    sentences: sentences.length > 0 ? sentences : text(diff.text) ? [diff.text as string] : [],
    truncated: diff.truncated === true,
    cellsWithOutputs: numbers,
    outputs: num(change.outputs)
  };
}

/** The caption of a change, e.g. "Changes to cell 2: 1 line changed, 1 added". */
export function changeCaption(change: IChange, trans: TranslationBundle): string {
  const cell = change.cellNumber;
  const summary = change.summary ?? '';
  switch (change.kind) {
    case 'edit':
      return cell !== null
        ? trans.__('Changes to cell %1: %2', cell, summary)
        : trans.__('Changes to the cell: %1', summary);
    case 'create':
      return change.where
        ? trans.__('The new cell, %1: %2', change.where, summary)
        : trans.__('The new cell: %1', summary);
    case 'delete':
      return cell !== null
        ? trans.__('Cell %1 to delete: %2', cell, summary)
        : trans.__('The cell to delete: %1', summary);
    case 'move':
      return change.fromPosition !== null && change.toPosition !== null
        ? trans.__('Moves cell %1 to position %2, %3.', change.fromPosition, change.toPosition, change.where ?? '')
        : trans.__('Moves a cell.');
    case 'clear_outputs':
      return trans._n('Clears %1 output.', 'Clears %1 outputs.', change.outputs ?? 0);
    default:
      return trans.__('The change');
  }
}

/** Props of {@link DiffView}. */
export interface IDiffViewProps {
  change: IChange;
  trans: TranslationBundle;
  /** Prefix of the ids of the caption and the words (see {@link diffDescriptionIds}). */
  idPrefix?: string;
}

/**
 * The ids a card's `aria-describedby` lists so that, focused, it reads the
 * change: the caption, then every change in words (not the marked lines).
 */
export function diffDescriptionIds(idPrefix: string, change: IChange): string[] {
  const ids = [`${idPrefix}-caption`];
  if (change.sentences.length > 0) {
    ids.push(`${idPrefix}-wordsCaption`, `${idPrefix}-words`);
  }
  return ids;
}

/**
 * The change of one confirmation: caption, marked lines, and the changes in
 * words.
 */
export function DiffView(props: IDiffViewProps): JSX.Element {
  const { change, trans } = props;
  const ownPrefix = useId('jp-AAEPDiff');
  const prefix = props.idPrefix ?? ownPrefix;
  const captionId = `${prefix}-caption`;
  const lineNumber = (line: IDiffLine) => (line.kind === 'added' ? line.newLine : (line.oldLine ?? line.newLine));
  return (
    <div className="jp-AAEPDiff" role="group" aria-labelledby={captionId}>
      <p id={captionId} className="jp-AAEPDiff-caption">
        {changeCaption(change, trans)}
      </p>
      {change.lines.length > 0 && (
        <>
          {/* For the eye; the same changes are in the list below, in words. Long lines
              scroll sideways (the scroller becomes a named Tab stop when it scrolls). */}
          <div className="jp-AAEPDiff-scroll jp-AAEPScrollX">
            <div className="jp-AAEPDiff-lines" aria-hidden="true">
              {change.lines.map((line, index) => (
                <div key={index} className={`jp-AAEPDiff-line jp-mod-${line.kind}`}>
                  <span className="jp-AAEPDiff-marker">
                    {line.kind === 'added' ? '+' : line.kind === 'removed' ? '−' : ' '}
                  </span>
                  <span className="jp-AAEPDiff-number">{lineNumber(line) ?? ''}</span>
                  <span className="jp-AAEPDiff-text">{line.text || ' '}</span>
                </div>
              ))}
            </div>
          </div>
          <p className="jp-AAEPDiff-legend" aria-hidden="true">
            {change.truncated
              ? trans.__('+ added line, − removed line; long changes are shortened.')
              : trans.__('+ added line, − removed line.')}
          </p>
        </>
      )}
      {change.sentences.length > 0 && (
        <>
          <p className="jp-AAEPDiff-wordsCaption" id={`${prefix}-wordsCaption`}>
            {trans.__('Line by line:')}
          </p>
          {/* No aria-labelledby: in a description its name would replace its items. */}
          <ul id={`${prefix}-words`} className="jp-AAEPDiff-words">
            {change.sentences.map((sentence, index) => (
              <li key={index}>{sentence}</li>
            ))}
          </ul>
        </>
      )}
      {change.kind === 'clear_outputs' && change.cellsWithOutputs.length > 0 && (
        <p className="jp-AAEPDiff-cells">
          {trans._n(
            'From cell %2.',
            'From cells %2.',
            change.cellsWithOutputs.length,
            change.cellsWithOutputs.join(', ')
          )}
        </p>
      )}
    </div>
  );
}
