/**
 * Sideways scrolling for code, diffs and tables in the transcript: rather than
 * breaking identifiers, a wide block scrolls. A block that scrolls is made a
 * Tab stop with a name ("Code, scrolls sideways"), so a keyboard user can
 * scroll it with the arrow keys; one that fits is left alone, so it adds no
 * Tab stop. The code of an approval card wraps (at spaces, with a hanging
 * indent), so it fits and is no Tab stop: Approve stays the next stop after
 * the card. Only a word wider than the card makes it scroll, and a Tab stop.
 */
import { TranslationBundle } from '@jupyterlab/translation';
import { RefObject, useEffect } from 'react';

/** What scrolls sideways: code, the diff's scroller, and the wrappers given to tables. */
const SCROLLERS = '.jp-AAEPPanel-transcript pre, .jp-AAEPPanel-transcript .jp-AAEPScrollX';
/** Set on the blocks this module made focusable, so it only ever undoes its own work. */
const MARK = 'data-aaep-scroll-region';

/** Wrap each rendered table not yet wrapped, so the wrapper (not the table) scrolls. */
function wrapTables(root: HTMLElement): void {
  root.querySelectorAll<HTMLTableElement>('.jp-AAEPPanel-transcript table').forEach(table => {
    const parent = table.parentElement;
    if (!parent || parent.classList.contains('jp-AAEPScrollX')) {
      return;
    }
    const wrapper = document.createElement('div');
    wrapper.className = 'jp-AAEPScrollX jp-AAEPTable-scroll';
    parent.insertBefore(wrapper, table);
    wrapper.appendChild(table);
  });
}

/** Make every block under `root` that scrolls sideways a named Tab stop, and undo it when it fits. */
export function markScrollRegions(root: HTMLElement, trans: TranslationBundle): void {
  wrapTables(root);
  root.querySelectorAll<HTMLElement>(SCROLLERS).forEach(block => {
    const scrolls = block.scrollWidth > block.clientWidth + 1;
    const marked = block.hasAttribute(MARK);
    if (scrolls && !marked && !block.hasAttribute('tabindex')) {
      const label = block.classList.contains('jp-AAEPTable-scroll')
        ? trans.__('Table, scrolls sideways')
        : block.classList.contains('jp-AAEPDiff-scroll')
          ? trans.__('Changed lines, scroll sideways')
          : trans.__('Code, scrolls sideways');
      block.setAttribute(MARK, '');
      block.setAttribute('tabindex', '0');
      // A group, not a region: regions are landmarks, which must be few and uniquely named.
      block.setAttribute('role', 'group');
      block.setAttribute('aria-label', label);
    } else if (!scrolls && marked) {
      block.removeAttribute(MARK);
      block.removeAttribute('tabindex');
      block.removeAttribute('role');
      block.removeAttribute('aria-label');
    }
  });
}

/**
 * Keep the scroll regions under `root` marked: after every render, when
 * content arrives later (Markdown renders asynchronously) and when the panel
 * is resized (a narrower sidebar makes more blocks scroll).
 */
export function useScrollRegions(root: RefObject<HTMLElement>, trans: TranslationBundle): void {
  useEffect(() => {
    if (root.current) {
      markScrollRegions(root.current, trans);
    }
  });
  useEffect(() => {
    const node = root.current;
    if (!node) {
      return;
    }
    let frame = 0;
    const soon = () => {
      cancelAnimationFrame(frame);
      frame = requestAnimationFrame(() => markScrollRegions(node, trans));
    };
    // Only added or removed nodes: the attributes set here never trigger another pass.
    const mutations = new MutationObserver(soon);
    mutations.observe(node, { childList: true, subtree: true });
    const resizes = typeof ResizeObserver === 'undefined' ? null : new ResizeObserver(soon);
    resizes?.observe(node);
    return () => {
      cancelAnimationFrame(frame);
      mutations.disconnect();
      resizes?.disconnect();
    };
  }, [root, trans]);
}
