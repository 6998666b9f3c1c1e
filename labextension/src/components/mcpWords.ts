/**
 * The words the panel shows for the user's MCP servers (pure, unit-tested in
 * `test/mcp-words.test.mjs`): a server's status in a few words, the one
 * sentence saying why a server is not working, and the person's trust in a
 * server's word that a tool changes nothing.
 */
import type { TranslationBundle } from '@jupyterlab/translation';

import type { IMCPServerInfo, IMCPTrust } from '../chatClient';

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

/** When the trust was given, in the person's own date and time format ('' when unknown). */
function trustedSince(trust: IMCPTrust): string {
  const when = trust.granted_at ? new Date(trust.granted_at) : null;
  return when && !Number.isNaN(when.getTime()) ? when.toLocaleString() : '';
}

/**
 * The line under a trusted server: what the trust means and since when; or, when
 * the server is now set up to start something else (`holds` false), that the trust
 * was for the earlier setup and its tools ask again.
 */
export function mcpTrustLine(trust: IMCPTrust, trans: TranslationBundle, holds = true): string {
  if (!holds) {
    return trust.origin
      ? trans.__(
          'You trusted it when it was started by %1; it now starts something else, so its tools ask you again.',
          trust.origin
        )
      : trans.__('You trusted an earlier setup of it; its tools ask you again.');
  }
  const since = trustedSince(trust);
  return since
    ? trans.__('You trust its tools that say they change nothing to run without asking (since %1).', since)
    : trans.__('You trust its tools that say they change nothing to run without asking.');
}

/** The spoken confirmation once the trust is taken back. */
export function mcpTrustRevoked(server: string, trans: TranslationBundle): string {
  return trans.__(
    'You no longer trust the %1 server: its tools that say they change nothing will ask you first again.',
    server
  );
}

/** The sentence for a trusted server that is no longer set up (the trust stays until taken back). */
export function mcpTrustNotSetUp(trust: IMCPTrust, trans: TranslationBundle): string {
  return trust.origin
    ? trans.__('%1 is no longer set up (it was started by %2).', trust.server, trust.origin)
    : trans.__('%1 is no longer set up.', trust.server);
}
