/**
 * "What may the agent do without asking?": says the numbered list of standing
 * permissions and opens it in a dialog, where each can be taken back by
 * keyboard (Tab to its Take back button, Enter). Escape or Close ends it.
 */
import { JupyterFrontEnd } from '@jupyterlab/application';
import { Dialog, ReactWidget, showDialog } from '@jupyterlab/apputils';
import { TranslationBundle } from '@jupyterlab/translation';
import React from 'react';

import { Announcer } from './announcer';
import { PermissionList, REVOKE_CLASS } from './components/PermissionList';
import { listPermissions, permissionListWords, revokePermission } from './permissions';

/** The command's id (listed in `CommandIDs`). */
export const WHAT_MAY_THE_AGENT_DO = 'jupyter-aaep:what-may-the-agent-do';

/** Add the command. */
export function registerPermissionsCommand(options: {
  app: JupyterFrontEnd;
  announcer: Announcer;
  trans: TranslationBundle;
}): void {
  const { app, announcer, trans } = options;
  let open = false;
  app.commands.addCommand(WHAT_MAY_THE_AGENT_DO, {
    label: trans.__('What May the Agent Do Without Asking?'),
    caption: trans.__('Say the standing permissions you gave the agent, and take any of them back'),
    execute: async () => {
      if (open) {
        return;
      }
      let list;
      try {
        list = await listPermissions();
      } catch (error) {
        announcer.announce(
          trans.__('Could not read the permissions: %1', error instanceof Error ? error.message : String(error))
        );
        return;
      }
      announcer.announce(permissionListWords(list, trans));
      const body = ReactWidget.create(
        <PermissionList
          trans={trans}
          initial={list}
          revoke={revokePermission}
          announce={text => announcer.announce(text)}
        />
      );
      open = true;
      try {
        await showDialog({
          title: trans.__('What may the agent do without asking?'),
          body,
          buttons: [Dialog.okButton({ label: trans.__('Close') })],
          focusNodeSelector: list.length > 0 ? `.${REVOKE_CLASS}` : undefined
        });
      } finally {
        open = false;
      }
    }
  });
}
