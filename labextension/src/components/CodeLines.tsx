/**
 * Code waiting for approval, one line at a time on demand.
 *
 * The code looks like any `<pre>` block, but each line is its own element
 * that takes the focus (never a Tab stop: Approve stays the next one after
 * the card). *Read the pending request's code* (Alt+R) focuses the first
 * line; the screen reader says that line alone, and the arrow keys go to the
 * next or previous one (Home and End to the first and last), so 18 lines are
 * 18 short utterances the person steps through, not one long one. In browse
 * mode the reader's own line keys do the same over the same `<pre>`.
 *
 * In a narrow panel a long line wraps with a hanging indent (style/base.css):
 * its continuation starts two columns right of the line's own indentation, so
 * a wrapped `plt.title(...)` is never seen outside the `if` block it is in.
 * It wraps at spaces and after `.`, `(`, `[`, `{`, `,` and `=` (a `<wbr>`,
 * neither read nor copied), never inside an identifier. Each line has
 * its number beside it, drawn by CSS (a counter, with empty alternative text),
 * so the numbers are neither read nor copied as part of the code.
 */
import React from 'react';

/** Class of one line of code that takes the focus. */
export const CODE_LINE_CLASS = 'jp-AAEPCard-codeLine';

/** The lines of *code*, without the newlines that end it. */
export function codeLines(code: string): string[] {
  return code.replace(/\n+$/, '').split('\n');
}

/** Columns of a line's indentation (a tab to the next multiple of 4, as the card draws tabs). */
export function indentColumns(line: string): number {
  let columns = 0;
  for (const char of line) {
    if (char === ' ') {
      columns += 1;
    } else if (char === '\t') {
      columns += 4 - (columns % 4);
    } else {
      break;
    }
  }
  return columns;
}

/** Where a line may wrap besides its spaces: after a `.` before a name, after `(`, `[`, `{`, `,`
 * or `=` before more code (so never inside a name or a number). */
const WRAP_AFTER = /\.(?=[A-Za-z_])|[([{,=](?=[^\s)\]}=])/g;

/** The line as text with a `<wbr>` where it may wrap between two tokens. */
export function wrappable(line: string): React.ReactNode[] {
  const nodes: React.ReactNode[] = [];
  let from = 0;
  for (const match of line.matchAll(WRAP_AFTER)) {
    const at = (match.index ?? 0) + 1;
    nodes.push(line.slice(from, at), <wbr key={at} />);
    from = at;
  }
  nodes.push(line.slice(from));
  return nodes;
}

/** Which line a key moves to from line *index* of *count*, or `null` for a key it ignores. */
export function lineAfterKey(key: string, index: number, count: number): number | null {
  switch (key) {
    case 'ArrowDown':
      return Math.min(count - 1, index + 1);
    case 'ArrowUp':
      return Math.max(0, index - 1);
    case 'Home':
      return 0;
    case 'End':
      return count - 1;
    default:
      return null;
  }
}

/** The code as a `<pre>`, each line focusable and reached with the arrow keys. */
export function CodeLines(props: { code: string }): JSX.Element {
  const lines = codeLines(props.code);
  const onKeyDown = (event: React.KeyboardEvent<HTMLElement>) => {
    const line = (event.target as HTMLElement).closest<HTMLElement>(`.${CODE_LINE_CLASS}`);
    const all = Array.from(event.currentTarget.querySelectorAll<HTMLElement>(`.${CODE_LINE_CLASS}`));
    const index = line ? all.indexOf(line) : -1;
    const to =
      index < 0 || event.altKey || event.ctrlKey || event.metaKey ? null : lineAfterKey(event.key, index, all.length);
    if (to === null) {
      return;
    }
    // The panel scrolls with the arrows otherwise: the line moves, not the page.
    event.preventDefault();
    all[to].focus();
  };
  // The number column is as wide as the last line's number.
  const gutter = { '--jp-private-aaep-gutter': `${String(lines.length).length + 1}ch` } as React.CSSProperties;
  return (
    <pre style={gutter}>
      {/* The keys of the focusable lines inside are handled here. */}
      <code onKeyDown={onKeyDown}>
        {lines.map((line, index) => (
          <React.Fragment key={index}>
            <span
              className={CODE_LINE_CLASS}
              tabIndex={-1}
              style={{ '--jp-private-aaep-indent': indentColumns(line) } as React.CSSProperties}
            >
              {wrappable(line)}
            </span>
            {index < lines.length - 1 ? '\n' : null}
          </React.Fragment>
        ))}
      </code>
    </pre>
  );
}
