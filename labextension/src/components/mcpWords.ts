/**
 * The words the panel shows for the user's MCP servers (pure, unit-tested in
 * `test/mcp-words.test.mjs`): a server's status in a few words, and the one
 * sentence saying why a server is not working.
 */
import type { TranslationBundle } from '@jupyterlab/translation';

import type { IMCPServerInfo } from '../chatClient';

/** The few words of a server's status. */
export function mcpStatusLabel(status: string, trans: TranslationBundle): string {
  switch (status) {
    case 'ready':
      return trans.__('ready');
    case 'starting':
      return trans.__('starting…');
    case 'failed':
      return trans.__('did not start');
    case 'stopped':
      return trans.__('stopped (starts again on next use)');
    case 'refused':
      return trans.__('not allowed');
    case 'invalid':
      return trans.__('not usable');
    default:
      return status;
  }
}

/** The one sentence saying why a server is not working, or '' when it works. */
export function mcpProblemSentence(server: IMCPServerInfo, trans: TranslationBundle): string {
  const message = (server.message ?? '').trim();
  if (!message) {
    return '';
  }
  // `failed` carries the end of a sentence ("the command x was not found."); the others a whole one.
  return server.status === 'failed' ? trans.__('%1 did not start: %2', server.name, message) : message;
}

/**
 * A tool's title as listed under its server: the server's title for it without the
 * ", from the … server" the agent's narration adds (the list already says which server).
 */
export function mcpToolTitle(tool: { name: string; title: string }, serverName: string): string {
  const title = (tool.title || tool.name).trim();
  const suffix = `, from the ${serverName} server`;
  return title.endsWith(suffix) ? title.slice(0, -suffix.length) : title;
}
