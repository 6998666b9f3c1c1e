/**
 * Where the panel's commands put the focus, and for how long they guard it.
 *
 * A command that moves the focus into the panel may run before its target is
 * rendered (the chat is still loading) and while JupyterLab's activation may
 * still move the focus away a moment later, so the target is looked for and
 * the focus checked again for a while. Only the latest request guards the
 * focus: Ctrl+Shift+Y then Ctrl+Shift+A in quick succession must leave the
 * person on the request, not be taken back to the message box by the first
 * command's guard. `PanelFocus` is pure of the DOM (a small host),
 * unit-tested in `test/panel-focus.test.mjs`.
 */

/** What {@link PanelFocus} needs of an element. */
export interface IFocusTarget {
  readonly tagName: string;
  focus(): void;
}

/** The page as {@link PanelFocus} sees it (the real one in `commands.ts`, fakes in tests). */
export interface IFocusHost {
  /** Whether `element` is the panel or inside it. */
  inPanel(element: IFocusTarget): boolean;
  /** Whether `inner` is `outer` or inside it. */
  within(inner: IFocusTarget, outer: IFocusTarget): boolean;
  /** The focused element; `null` for none or the page's body. */
  active(): IFocusTarget | null;
  /** Call `callback` after `ms` milliseconds. */
  later(callback: () => void, ms: number): void;
}

/** How a request to place the focus ended. */
export type FocusOutcome = 'placed' | 'missing' | 'superseded';

/** Time between two looks (ms). */
export const FOCUS_STEP_MS = 50;
/** Looks for a target not rendered yet: about 3 s, a chat loading under load. */
export const FOCUS_TRIES = 60;
/** Looks after the focus is placed, to put it back if activation took it to nowhere. */
export const FOCUS_GUARD_TRIES = 4;

/** Controls a focus itself: what a person moved to stays theirs. */
const CONTROLS = ['TEXTAREA', 'BUTTON', 'SELECT', 'INPUT'];

export class PanelFocus {
  constructor(host: IFocusHost) {
    this._host = host;
  }

  /**
   * Move the focus to what `find` gives once it gives something, then guard
   * it for a moment. A later {@link place} ends this one.
   *
   * @param options.area Where the person moving on keeps their place (the
   *   card around a line of its code, whose arrows go line by line); by
   *   default the target itself.
   * @param options.start Runs the first look (e.g. after the next render).
   *   The request's turn is taken now, so a command run meanwhile (Ctrl+Shift+O
   *   then Ctrl+Shift+A) still wins over this one's late first look.
   * @returns `placed` once the target has the focus, `missing` when `find`
   *   gave nothing (or the focus never stayed) for `tries` looks, `superseded`
   *   when a later request took over first.
   */
  place(
    find: () => IFocusTarget | null,
    options: {
      tries?: number;
      area?: () => IFocusTarget | null;
      start?: (look: () => void) => void;
    } = {}
  ): Promise<FocusOutcome> {
    const { tries = FOCUS_TRIES, area, start = (look: () => void) => look() } = options;
    const generation = ++this._generation;
    let placed = false;
    let left = tries;
    return new Promise(resolve => {
      const look = () => {
        if (generation !== this._generation) {
          if (!placed) {
            resolve('superseded');
          }
          return;
        }
        const target = find();
        const active = this._host.active();
        if (target && active !== target && (!placed || this._lost(active, area?.() ?? target))) {
          target.focus();
        }
        if (!placed && target && this._host.active() === target) {
          placed = true;
          left = Math.min(left, FOCUS_GUARD_TRIES);
          resolve('placed');
        }
        if (left-- > 0) {
          this._host.later(look, FOCUS_STEP_MS);
        } else if (!placed) {
          resolve('missing');
        }
      };
      start(look);
    });
  }

  /**
   * Whether activation took the focus to nowhere: the page, or a part of the
   * panel that is not a control (the panel itself). Never when the person
   * moved on to a control, or out of the panel (a palette, the notebook), nor
   * within `area` (an answered card's outcome, the next line of its code).
   */
  private _lost(active: IFocusTarget | null, area: IFocusTarget): boolean {
    return (
      !active || (this._host.inPanel(active) && !CONTROLS.includes(active.tagName) && !this._host.within(active, area))
    );
  }

  private readonly _host: IFocusHost;
  private _generation = 0;
}

/** The focus of the panel whose node is `node`, in this page. */
export function panelFocusOf(node: HTMLElement): PanelFocus {
  return new PanelFocus({
    inPanel: element => node.contains(element as unknown as Node),
    within: (inner, outer) => (outer as unknown as Node).contains(inner as unknown as Node),
    active: () => {
      const active = document.activeElement;
      return active && active !== document.body ? (active as HTMLElement) : null;
    },
    later: (callback, ms) => window.setTimeout(callback, ms)
  });
}

/** What `find` gives once it gives something, looked for every 50 ms, `tries` times; else `null`. */
export async function soon<T>(find: () => T | null | undefined, tries = 20): Promise<T | null> {
  for (let i = 0; ; i++) {
    const found = find();
    if (found || i >= tries) {
      return found ?? null;
    }
    await new Promise(resolve => window.setTimeout(resolve, FOCUS_STEP_MS));
  }
}
