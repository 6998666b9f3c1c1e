/**
 * The "Connect an outside agent" command: opens (or brings back) one tab in
 * the main area holding {@link ConnectAgent}, with the focus in its name
 * field. A tab rather than a modal dialog: Enter in the name field makes the
 * credential, where a JupyterLab dialog would take it as "close".
 */
import { JupyterFrontEnd } from '@jupyterlab/application';
import { MainAreaWidget, ReactWidget } from '@jupyterlab/apputils';
import { TranslationBundle } from '@jupyterlab/translation';
import React from 'react';

import { Announcer } from './announcer';
import { ConnectAgent } from './components/ConnectAgent';

/** The command's id (listed in `CommandIDs`). */
export const CONNECT_OUTSIDE_AGENT = 'jupyter-aaep:connect-outside-agent';

/** Add the command. */
export function registerConnectAgent(options: {
  app: JupyterFrontEnd;
  announcer: Announcer;
  trans: TranslationBundle;
}): void {
  const { app, announcer, trans } = options;
  let open: MainAreaWidget | null = null;
  const focusName = (widget: MainAreaWidget) =>
    requestAnimationFrame(() => widget.node.querySelector<HTMLInputElement>('.jp-AAEPConnect-nameInput')?.focus());
  app.commands.addCommand(CONNECT_OUTSIDE_AGENT, {
    label: trans.__('Connect an Outside Agent…'),
    caption: trans.__(
      'Make a credential that lets an outside agent (Claude Code, Codex, any MCP client) use the notebook tools and nothing else; list and revoke them'
    ),
    execute: () => {
      if (!open || open.isDisposed) {
        const content = ReactWidget.create(<ConnectAgent trans={trans} announcer={announcer} />);
        content.addClass('jp-AAEPConnect-content');
        open = new MainAreaWidget({ content });
        open.id = 'jupyter-aaep-connect-agent';
        open.title.label = trans.__('Outside Agents');
        open.title.closable = true;
        open.node.setAttribute('role', 'region');
        open.node.setAttribute('aria-label', trans.__('Connect an outside agent'));
        app.shell.add(open, 'main');
      }
      app.shell.activateById(open.id);
      focusName(open);
      announcer.announce(
        trans.__('Outside agents. Type a name for the agent, then press Enter to make its credential.')
      );
    }
  });
}
