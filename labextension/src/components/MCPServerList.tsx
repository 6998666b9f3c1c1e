/**
 * The user's MCP servers, in the panel's settings: each server's name, its
 * status and its tools' titles, for one that did not start the one sentence
 * saying why, and for one whose word that a tool changes nothing the person
 * trusts, since when, with a button that takes the trust back. Read from
 * `GET aaep/v1/mcp/servers` and `GET aaep/v1/mcp/trust` when the settings
 * open, the servers again every few seconds while one is still starting.
 * Nothing here is announced by itself; taking trust back is said (polite,
 * a failure assertive) and the focus goes to the list's heading.
 */
import { TranslationBundle } from '@jupyterlab/translation';
import React, { useCallback, useEffect, useRef, useState } from 'react';

import { IMCPServerInfo, IMCPTrust, listMCPServers, listMCPTrust, revokeMCPTrust } from '../chatClient';
import { useId } from './hooks';
import {
  mcpProblemSentence,
  mcpStatusLabel,
  mcpToolTitle,
  mcpTrustLine,
  mcpTrustNotSetUp,
  mcpTrustRevoked
} from './mcpWords';

/** How often the list is read again while a server is starting (ms). */
const STARTING_POLL_MS = 2000;

const failure = (error: unknown) => (error instanceof Error ? error.message : String(error));

type Listing =
  { state: 'loading' } | { state: 'failed'; message: string } | { state: 'ready'; servers: IMCPServerInfo[] };

/** Props of {@link MCPServerList}. */
export interface IMCPServerListProps {
  trans: TranslationBundle;
  /** Say something to the person (the panel's announcer). */
  announce: (text: string, politeness?: 'polite' | 'assertive') => void;
}

/** The trust line and its button, under a server or for one no longer set up. */
function TrustLine(props: {
  trust: IMCPTrust;
  trans: TranslationBundle;
  onRevoke: (trust: IMCPTrust) => void;
  /** False when the server now starts something else than what was trusted. */
  holds?: boolean;
}): JSX.Element {
  const { trust, trans } = props;
  return (
    <p className="jp-AAEPMCP-trust">
      {mcpTrustLine(trust, trans, props.holds ?? true)}{' '}
      <button
        type="button"
        className="jp-mod-styled jp-mod-warn jp-AAEPMCP-untrust"
        aria-label={trans.__('Stop trusting the %1 server', trust.server)}
        onClick={() => props.onRevoke(trust)}
      >
        {trans.__('Stop trusting')}
      </button>
    </p>
  );
}

export function MCPServerList(props: IMCPServerListProps): JSX.Element | null {
  const { trans, announce } = props;
  const headingId = useId('jp-AAEPMCP-heading');
  const heading = useRef<HTMLHeadingElement>(null);
  const [listing, setListing] = useState<Listing>({ state: 'loading' });
  const [trusted, setTrusted] = useState<IMCPTrust[]>([]);
  const [problem, setProblem] = useState('');
  const readTrust = useCallback(async () => {
    try {
      setTrusted(await listMCPTrust());
    } catch (error) {
      setProblem(trans.__('Which servers you trust could not be read: %1', failure(error)));
    }
  }, [trans]);
  useEffect(() => void readTrust(), [readTrust]);
  const revoke = async (trust: IMCPTrust) => {
    setProblem('');
    try {
      await revokeMCPTrust(trust.server);
      await readTrust();
      heading.current?.focus(); // the button is gone: the person's place is the list
      announce(mcpTrustRevoked(trust.server, trans));
    } catch (error) {
      const said = trans.__('The %1 server is still trusted: %2', trust.server, failure(error));
      setProblem(said);
      announce(said, 'assertive');
    }
  };
  useEffect(() => {
    let alive = true;
    let timer = 0;
    const read = async () => {
      try {
        const answer = await listMCPServers();
        if (!alive) {
          return;
        }
        const servers = answer.servers ?? [];
        setListing({ state: 'ready', servers });
        if (servers.some(s => s.status === 'starting')) {
          timer = window.setTimeout(() => void read(), STARTING_POLL_MS);
        }
      } catch (error) {
        if (alive) {
          setListing({ state: 'failed', message: failure(error) });
        }
      }
    };
    void read();
    return () => {
      alive = false;
      window.clearTimeout(timer);
    };
  }, []);
  const trustOf = (name: string) => trusted.find(t => t.server === name);
  const listed = new Set(listing.state === 'ready' ? listing.servers.map(s => s.name) : []);
  const gone = trusted.filter(t => !listed.has(t.server));
  return (
    <section className="jp-AAEPMCP" aria-labelledby={headingId}>
      <h3 id={headingId} ref={heading} tabIndex={-1} className="jp-AAEPMCP-heading">
        {trans.__('Tools from MCP servers')}
      </h3>
      {listing.state === 'loading' && <p className="jp-AAEPMCP-note">{trans.__('Reading the tool servers…')}</p>}
      {listing.state === 'failed' && (
        <p className="jp-AAEPMCP-note">{trans.__('The tool servers could not be read: %1', listing.message)}</p>
      )}
      {listing.state === 'ready' && listing.servers.length === 0 && (
        <p className="jp-AAEPMCP-note">{trans.__('No MCP servers are set up.')}</p>
      )}
      {listing.state === 'ready' && listing.servers.length > 0 && (
        <ul className="jp-AAEPMCP-servers">
          {listing.servers.map(server => {
            const problem = mcpProblemSentence(server, trans);
            const trust = trustOf(server.name);
            const titles = server.tools.map(t => mcpToolTitle(t, server.name));
            return (
              <li key={server.name} className={`jp-AAEPMCP-server jp-mod-${server.status}`}>
                <span className="jp-AAEPMCP-name">{server.name}</span>
                {': '}
                <span className="jp-AAEPMCP-status">{mcpStatusLabel(server.status, trans)}</span>
                {problem && <p className="jp-AAEPMCP-problem">{problem}</p>}
                {titles.length > 0 && (
                  <p className="jp-AAEPMCP-tools">
                    {trans._n('1 tool: %2', '%1 tools: %2', titles.length, titles.join(', '))}
                  </p>
                )}
                {trust && (
                  <TrustLine
                    trust={trust}
                    trans={trans}
                    holds={server.trusted !== false}
                    onRevoke={t => void revoke(t)}
                  />
                )}
              </li>
            );
          })}
        </ul>
      )}
      {listing.state === 'ready' && gone.length > 0 && (
        <ul className="jp-AAEPMCP-servers" aria-label={trans.__('Trusted servers no longer set up')}>
          {gone.map(trust => (
            <li key={trust.server} className="jp-AAEPMCP-server">
              <span className="jp-AAEPMCP-name">{mcpTrustNotSetUp(trust, trans)}</span>
              <TrustLine trust={trust} trans={trans} onRevoke={t => void revoke(t)} />
            </li>
          ))}
        </ul>
      )}
      {problem && <p className="jp-AAEPMCP-problem">{problem}</p>}
    </section>
  );
}
