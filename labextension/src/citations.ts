/**
 * Cell citations in the agent's answers (pure: unit-tested without a DOM).
 *
 * The server writes each citation as words ("cell 4", "cell 4, lines 3 to 5")
 * and says where it sits, and which cell it names, in the `jaaep` extension of
 * the `output.streaming` chunk. The panel turns each one into a real link named
 * by the cell's number *now* (cells move), or plain words for a cell that no
 * longer exists. Spoken text keeps the server's words: never an id or markup.
 */
import { TranslationBundle } from '@jupyterlab/translation';

import { IAAEPEvent } from './aaep';

/** One citation of an answer; offsets are in the answer's whole text. */
export interface ICitation {
  start: number;
  end: number;
  cellId: string;
  firstLine?: number;
  lastLine?: number;
}

/** Where link targets point: a fragment the panel handles itself. */
export const CITATION_HREF = '#aaep-cell-citation-';

/** The citations an `output.streaming` chunk carries, made absolute with `base`. */
export function citationsOf(event: IAAEPEvent, base: number): ICitation[] {
  const ext = event.extensions;
  if (!ext || typeof ext !== 'object' || Array.isArray(ext)) {
    return [];
  }
  const ours = (ext as Record<string, unknown>).jaaep;
  const list = ours && typeof ours === 'object' ? (ours as Record<string, unknown>).citations : null;
  if (!Array.isArray(list)) {
    return [];
  }
  const found: ICitation[] = [];
  for (const raw of list) {
    if (!raw || typeof raw !== 'object') {
      continue;
    }
    const c = raw as Record<string, unknown>;
    if (typeof c.start !== 'number' || typeof c.end !== 'number' || typeof c.cell_id !== 'string') {
      continue;
    }
    if (c.start < 0 || c.end < c.start) {
      continue;
    }
    found.push({
      start: base + c.start,
      end: base + c.end,
      cellId: c.cell_id,
      firstLine: typeof c.first_line === 'number' ? c.first_line : undefined,
      lastLine: typeof c.last_line === 'number' ? c.last_line : undefined
    });
  }
  return found;
}

/** A citation's words for the cell's number now (`null`: the cell is gone). */
export function citationWords(trans: TranslationBundle, citation: ICitation, number: number | null): string {
  if (number === null) {
    return trans.__('a cell that no longer exists');
  }
  const { firstLine, lastLine } = citation;
  if (firstLine === undefined) {
    return trans.__('cell %1', number);
  }
  if (lastLine === undefined || lastLine === firstLine) {
    return trans.__('cell %1, line %2', number, firstLine);
  }
  return trans.__('cell %1, lines %2 to %3', number, firstLine, lastLine);
}

/**
 * The answer's Markdown with each citation as a link to `CITATION_HREF<i>`,
 * named by the cell's number now; a gone cell's citation is plain words, and
 * one whose notebook is not open here keeps the server's words.
 */
export function withCitationLinks(
  text: string,
  citations: readonly ICitation[],
  numberOf: (cellId: string) => number | null | undefined,
  trans: TranslationBundle
): string {
  let out = '';
  let at = 0;
  citations.forEach((citation, index) => {
    if (citation.start < at || citation.end > text.length) {
      return; // overlapping or not streamed yet: leave the text as it is
    }
    const number = numberOf(citation.cellId);
    if (number === undefined) {
      return; // the notebook is not open here: the server's words, without a link
    }
    const words = citationWords(trans, citation, number);
    out += text.slice(at, citation.start);
    out += number === null ? words : `[${words}](${CITATION_HREF}${index})`;
    at = citation.end;
  });
  return out + text.slice(at);
}

/** The index of the citation a link's `href` names, or null. */
export function citationIndex(href: string | null): number | null {
  if (!href) {
    return null;
  }
  const at = href.indexOf(CITATION_HREF);
  if (at < 0) {
    return null;
  }
  const index = Number(href.slice(at + CITATION_HREF.length));
  return Number.isInteger(index) && index >= 0 ? index : null;
}

/** The class and data attributes of a citation link in the `%aaep` view (`kernel/_view_citations.py`). */
export const VIEW_CITATION_SELECTOR = 'a.jp-AAEPView-citation[data-aaep-cell-id]';

/**
 * The citation a `%aaep` view's link names, from its `data-` attributes
 * (`aaepCellId`, `aaepFirstLine`, `aaepLastLine`), or null when they do not
 * name a cell. The kernel wrote them: only a well-formed id and line numbers count.
 */
export function citationOfLink(data: { [key: string]: string | undefined }): ICitation | null {
  const cellId = data.aaepCellId ?? '';
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(cellId)) {
    return null;
  }
  const line = (value: string | undefined) => {
    const n = Number(value);
    return value && Number.isInteger(n) && n > 0 ? n : undefined;
  };
  const firstLine = line(data.aaepFirstLine);
  const lastLine = firstLine === undefined ? undefined : (line(data.aaepLastLine) ?? firstLine);
  return { start: 0, end: 0, cellId, firstLine, lastLine };
}
