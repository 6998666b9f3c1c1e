/**
 * The numbered list of standing permissions, each with its own Take back
 * button. Taking one back says so and puts the focus on the item that took its
 * place (or on the heading when none is left), so a keyboard user never lands
 * on nothing.
 */
import { TranslationBundle } from '@jupyterlab/translation';
import React, { useEffect, useRef, useState } from 'react';

import {
  IPermission,
  focusAfterRevoke,
  permissionListWords,
  permissionWords,
  revokeLabel,
  revokedWords
} from '../permissions';
import { useId } from './hooks';

/** Props of {@link PermissionList}. */
export interface IPermissionListProps {
  trans: TranslationBundle;
  /** The permissions when the list opened. */
  initial: IPermission[];
  /** Take one back on the server (rejects with the server's sentence). */
  revoke: (id: string) => Promise<void>;
  /** Say something to the screen reader. */
  announce: (text: string) => void;
}

/** CSS class of each Take back button (the dialog focuses the first). */
export const REVOKE_CLASS = 'jp-AAEPPermissions-revoke';

export function PermissionList(props: IPermissionListProps): JSX.Element {
  const { trans, revoke, announce } = props;
  const [list, setList] = useState(props.initial);
  const [problem, setProblem] = useState<string | null>(null);
  const [focus, setFocus] = useState<number | 'heading' | null>(null);
  const heading = useRef<HTMLHeadingElement>(null);
  const buttons = useRef<(HTMLButtonElement | null)[]>([]);
  const headingId = useId('jp-AAEPPermissions-heading');
  useEffect(() => {
    if (focus === 'heading') {
      heading.current?.focus();
    } else if (focus !== null) {
      buttons.current[focus]?.focus();
    }
  }, [focus, list]);
  const takeBack = async (permission: IPermission, index: number) => {
    try {
      await revoke(permission.id);
    } catch (error) {
      const said = trans.__('Could not take it back: %1', error instanceof Error ? error.message : String(error));
      setProblem(said);
      announce(said);
      return;
    }
    const left = list.filter(p => p.id !== permission.id);
    const next = focusAfterRevoke(list.length, index);
    setProblem(null);
    setList(left);
    setFocus(next === null ? 'heading' : next);
    announce(revokedWords(permission, left.length, trans));
  };
  return (
    <section className="jp-AAEPPermissions" aria-labelledby={headingId}>
      <h2 id={headingId} ref={heading} tabIndex={-1} className="jp-AAEPPermissions-heading">
        {trans._n('%1 standing permission', '%1 standing permissions', list.length)}
      </h2>
      {list.length === 0 ? (
        <p className="jp-AAEPPermissions-empty">{permissionListWords([], trans)}</p>
      ) : (
        <ol className="jp-AAEPPermissions-list" aria-labelledby={headingId}>
          {list.map((permission, index) => (
            <li key={permission.id} className="jp-AAEPPermissions-item">
              <span className="jp-AAEPPermissions-sentence">{permissionWords(permission, trans)}</span>{' '}
              <button
                type="button"
                ref={node => {
                  buttons.current[index] = node;
                }}
                className={`jp-Button jp-mod-styled jp-mod-warn ${REVOKE_CLASS}`}
                aria-label={revokeLabel(permission, index, trans)}
                onClick={() => void takeBack(permission, index)}
              >
                {trans.__('Take back')}
              </button>
            </li>
          ))}
        </ol>
      )}
      {problem && (
        <p className="jp-AAEPPermissions-problem" role="alert">
          {problem}
        </p>
      )}
    </section>
  );
}
