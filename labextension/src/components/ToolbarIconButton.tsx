/**
 * A labelled icon button of the panel's toolbar, drawn as JupyterLab draws
 * its own toolbar buttons (`jp-ToolbarButtonComponent` on ui-components'
 * `Button`, a `LabIcon`, a label and a tooltip).
 *
 * Not `ToolbarButtonComponent` itself: that one disables a button natively
 * (which drops the keyboard focus of someone on it when a run ends) and
 * takes no `aria-describedby` or `aria-keyshortcuts`. Here an unavailable
 * button stays focusable with `aria-disabled` and says why in its
 * description. The label is always in the accessible name; in a narrow
 * panel only the icon is shown (CSS) and the tooltip carries the words.
 */
import { Button, LabIcon } from '@jupyterlab/ui-components';
import React from 'react';

/** Props of {@link ToolbarIconButton}. */
export interface IToolbarIconButtonProps {
  icon: LabIcon;
  label: string;
  /** The tooltip; the label when absent. */
  tooltip?: string;
  className?: string;
  /** Shown as unavailable, still focusable and pressable (the action then says why). */
  unavailable?: boolean;
  describedBy?: string;
  keyShortcuts?: string;
  pressed?: boolean;
  expanded?: boolean;
  controls?: string;
  onClick: () => void;
}

export function ToolbarIconButton(props: IToolbarIconButtonProps): JSX.Element {
  return (
    <Button
      type="button"
      minimal
      small
      className={`jp-ToolbarButtonComponent jp-AAEPToolbar-button${props.className ? ` ${props.className}` : ''}`}
      title={props.tooltip ?? props.label}
      aria-disabled={props.unavailable ? true : false}
      aria-describedby={props.describedBy || undefined}
      aria-keyshortcuts={props.keyShortcuts || undefined}
      aria-pressed={props.pressed}
      aria-expanded={props.expanded}
      aria-controls={props.controls}
      onClick={() => props.onClick()}
    >
      <props.icon.react tag="span" className="jp-ToolbarButtonComponent-icon" aria-hidden="true" />
      <span className="jp-ToolbarButtonComponent-label">{props.label}</span>
    </Button>
  );
}
