/**
 * Outside agents' credentials: the server calls (`aaep/v1/mcp/tokens`) and
 * the words and snippets the Connect dialog shows. No DOM here, so the
 * snippets are tested as plain functions.
 */
import { TranslationBundle } from '@jupyterlab/translation';

import { requestAPI } from './handler';

/** One credential as the server lists it (never its secret). */
export interface IOutsideCredential {
  id: string;
  name: string;
  /** ISO 8601 UTC. */
  created: string;
  /** ISO 8601 UTC, or null when it was never used. */
  last_used: string | null;
}

/** A credential just made: its secret is in `token`, this once. */
export interface IMintedCredential extends IOutsideCredential {
  token: string;
  /** The MCP endpoint's full URL, as the server sees it. */
  mcp_url: string;
}

/** The name the snippets give the server in the agent's own configuration. */
export const MCP_SERVER_KEY = 'jupyter-notebooks';

/** Every credential, oldest first. */
export async function listCredentials(): Promise<IOutsideCredential[]> {
  const answer = await requestAPI<{ credentials: IOutsideCredential[] }>(['mcp', 'tokens']);
  return answer.credentials ?? [];
}

/** Make a credential named `name` (the server tidies and checks the name). */
export function mintCredential(name: string): Promise<IMintedCredential> {
  return requestAPI<IMintedCredential>(['mcp', 'tokens'], { method: 'POST', body: { name } });
}

/** Revoke the credential `id`: it opens nothing from its next request on. */
export async function revokeCredential(id: string): Promise<void> {
  await requestAPI<unknown>(['mcp', 'tokens', id], { method: 'DELETE' });
}

/** `text` as one POSIX shell word (single quotes; a quote inside is closed, escaped, reopened). */
export function shellQuote(text: string): string {
  return /^[A-Za-z0-9_./:=@%+-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`;
}

/** The `claude mcp add` command that connects Claude Code with this credential. */
export function claudeCommand(credential: IMintedCredential): string {
  return [
    'claude mcp add --transport http',
    MCP_SERVER_KEY,
    shellQuote(credential.mcp_url),
    '--header',
    shellQuote(`Authorization: Bearer ${credential.token}`)
  ].join(' ');
}

/** The `mcpServers` JSON most MCP clients read (Claude Desktop, Cursor, Codex, …). */
export function mcpServersSnippet(credential: IMintedCredential): string {
  const server = {
    type: 'http',
    url: credential.mcp_url,
    headers: { Authorization: `Bearer ${credential.token}` }
  };
  return JSON.stringify({ mcpServers: { [MCP_SERVER_KEY]: server } }, null, 2);
}

/** When a credential was made and last used, in words. */
export function credentialDates(credential: IOutsideCredential, trans: TranslationBundle): string {
  const when = (iso: string) => new Date(iso).toLocaleString();
  return credential.last_used
    ? trans.__('made %1, last used %2', when(credential.created), when(credential.last_used))
    : trans.__('made %1, never used', when(credential.created));
}
