/**
 * The user's MCP servers, in the panel's settings: each server's name, its
 * status and its tools' titles, and for one that did not start the one
 * sentence saying why. Read from `GET aaep/v1/mcp/servers` when the settings
 * open, again every few seconds while a server is still starting. A plain
 * list: nothing here is announced by itself.
 */
import { TranslationBundle } from '@jupyterlab/translation';
import React, { useEffect, useState } from 'react';

import { IMCPServerInfo, listMCPServers } from '../chatClient';
import { useId } from './hooks';
import { mcpProblemSentence, mcpStatusLabel, mcpToolTitle } from './mcpWords';

/** How often the list is read again while a server is starting (ms). */
const STARTING_POLL_MS = 2000;

type Listing =
  { state: 'loading' } | { state: 'failed'; message: string } | { state: 'ready'; servers: IMCPServerInfo[] };

export function MCPServerList(props: { trans: TranslationBundle }): JSX.Element | null {
  const { trans } = props;
  const headingId = useId('jp-AAEPMCP-heading');
  const [listing, setListing] = useState<Listing>({ state: 'loading' });
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
          setListing({ state: 'failed', message: error instanceof Error ? error.message : String(error) });
        }
      }
    };
    void read();
    return () => {
      alive = false;
      window.clearTimeout(timer);
    };
  }, []);
  return (
    <section className="jp-AAEPMCP" aria-labelledby={headingId}>
      <h3 id={headingId} className="jp-AAEPMCP-heading">
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
              </li>
            );
          })}
        </ul>
      )}
    </section>
  );
}
