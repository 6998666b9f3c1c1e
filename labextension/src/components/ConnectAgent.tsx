/**
 * "Connect an outside agent": name an agent, make it a credential that opens
 * the notebook tools over MCP and nothing else, and copy the ready command or
 * configuration; below, every credential with a Revoke button. Each action is
 * said through the announcer (polite; failures assertive), and the focus goes
 * where the result is.
 */
import { Clipboard } from '@jupyterlab/apputils';
import { TranslationBundle } from '@jupyterlab/translation';
import React, { useCallback, useEffect, useRef, useState } from 'react';

import { Announcer } from '../announcer';
import {
  IMintedCredential,
  IOutsideCredential,
  claudeCommand,
  credentialDates,
  listCredentials,
  mcpServersSnippet,
  mintCredential,
  revokeCredential
} from '../outsideAgents';
import { useId } from './hooks';

export interface IConnectAgentProps {
  trans: TranslationBundle;
  announcer: Announcer;
}

const failure = (error: unknown) => (error instanceof Error ? error.message : String(error));

/** One snippet with its Copy button. */
function Snippet(props: {
  label: string;
  text: string;
  copied: string;
  trans: TranslationBundle;
  announcer: Announcer;
}) {
  const { label, text, copied, trans, announcer } = props;
  const id = useId('jp-AAEPConnect-snippet');
  return (
    <div className="jp-AAEPConnect-snippet">
      <label htmlFor={id} className="jp-AAEPConnect-snippetLabel">
        {label}
      </label>
      <textarea
        id={id}
        className="jp-AAEPConnect-code"
        readOnly
        value={text}
        rows={Math.max(text.split('\n').length, Math.ceil(text.length / 90))}
      />
      <button
        type="button"
        className="jp-mod-styled"
        aria-label={trans.__('Copy: %1', label)}
        onClick={() => {
          Clipboard.copyToSystem(text);
          announcer.announce(copied);
        }}
      >
        {trans.__('Copy')}
      </button>
    </div>
  );
}

/** The dialog's content: the form, the credential made just now, the list. */
export function ConnectAgent(props: IConnectAgentProps): JSX.Element {
  const { trans, announcer } = props;
  const nameId = useId('jp-AAEPConnect-name');
  const listHeadingId = useId('jp-AAEPConnect-list');
  const [name, setName] = useState('');
  const [busy, setBusy] = useState(false);
  const [minted, setMinted] = useState<IMintedCredential | null>(null);
  const [credentials, setCredentials] = useState<IOutsideCredential[] | null>(null);
  const [problem, setProblem] = useState('');
  const mintedHeading = useRef<HTMLHeadingElement>(null);
  const listHeading = useRef<HTMLHeadingElement>(null);

  const fail = useCallback(
    (what: string, error: unknown) => {
      const said = trans.__('%1: %2', what, failure(error));
      setProblem(said);
      announcer.announce(said, 'assertive');
    },
    [trans, announcer]
  );
  const refresh = useCallback(async () => {
    try {
      setCredentials(await listCredentials());
    } catch (error) {
      fail(trans.__('The credentials could not be read'), error);
    }
  }, [fail, trans]);
  useEffect(() => void refresh(), [refresh]);
  useEffect(() => {
    if (minted) {
      mintedHeading.current?.focus();
    }
  }, [minted]);

  const mint = async () => {
    if (busy) {
      return;
    }
    setBusy(true);
    setProblem('');
    try {
      const made = await mintCredential(name);
      setMinted(made);
      setName('');
      announcer.announce(
        trans.__(
          'Credential for %1 made. Copy it now: it is shown only this once. It lets %1 use the notebook tools, and every step it takes waits for your approval as usual.',
          made.name
        )
      );
      await refresh();
    } catch (error) {
      fail(trans.__('No credential was made'), error);
    } finally {
      setBusy(false);
    }
  };
  const revoke = async (credential: IOutsideCredential) => {
    try {
      await revokeCredential(credential.id);
      if (minted?.id === credential.id) {
        setMinted(null);
      }
      await refresh();
      listHeading.current?.focus();
      announcer.announce(trans.__("%1's credential is revoked: it opens nothing any more.", credential.name));
    } catch (error) {
      fail(trans.__('%1 was not revoked', credential.name), error);
    }
  };

  return (
    <div className="jp-AAEPConnect">
      <p>
        {trans.__(
          'Give an outside agent (Claude Code, Codex, any MCP client) its own credential. It opens the notebook tools over MCP and nothing else: the agent cannot approve its own steps, change the approval mode or read the chats. Your own Jupyter login can still do all of that.'
        )}
      </p>
      <form
        className="jp-AAEPConnect-form"
        onSubmit={event => {
          event.preventDefault();
          void mint();
        }}
      >
        <label htmlFor={nameId}>{trans.__('Name people will hear')}</label>
        <input
          id={nameId}
          className="jp-mod-styled jp-AAEPConnect-nameInput"
          type="text"
          value={name}
          maxLength={60}
          placeholder={trans.__('Claude Code (laptop)')}
          onChange={event => setName(event.target.value)}
        />
        <button type="submit" className="jp-mod-styled jp-mod-accept" disabled={busy}>
          {trans.__('Make credential')}
        </button>
      </form>
      {problem && <p className="jp-AAEPConnect-problem">{problem}</p>}
      {minted && (
        <section className="jp-AAEPConnect-minted" aria-labelledby={`${nameId}-minted`}>
          <h3 id={`${nameId}-minted`} ref={mintedHeading} tabIndex={-1}>
            {trans.__('Credential for %1 (shown only once)', minted.name)}
          </h3>
          {[
            [
              trans.__('Command for Claude Code'),
              claudeCommand(minted),
              trans.__('The Claude Code command is copied.')
            ],
            [
              trans.__('mcpServers configuration for other MCP clients'),
              mcpServersSnippet(minted),
              trans.__('The mcpServers configuration is copied.')
            ],
            [trans.__('The credential alone'), minted.token, trans.__('The credential is copied.')]
          ].map(([label, text, copied]) => (
            <Snippet key={label} label={label} text={text} copied={copied} trans={trans} announcer={announcer} />
          ))}
        </section>
      )}
      <section aria-labelledby={listHeadingId}>
        <h3 id={listHeadingId} ref={listHeading} tabIndex={-1}>
          {trans.__('Connected agents')}
        </h3>
        {credentials === null && <p>{trans.__('Reading the credentials…')}</p>}
        {credentials?.length === 0 && <p>{trans.__('No outside agent has a credential.')}</p>}
        {!!credentials?.length && (
          <ul className="jp-AAEPConnect-list">
            {credentials.map(credential => (
              <li key={credential.id}>
                <span className="jp-AAEPConnect-agent">{credential.name}</span>
                {', '}
                <span>{credentialDates(credential, trans)}</span>{' '}
                <button
                  type="button"
                  className="jp-mod-styled jp-mod-warn"
                  aria-label={trans.__('Revoke %1', credential.name)}
                  onClick={() => void revoke(credential)}
                >
                  {trans.__('Revoke')}
                </button>
              </li>
            ))}
          </ul>
        )}
      </section>
    </div>
  );
}
