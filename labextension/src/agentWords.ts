/**
 * The agent picker's words and entries, as plain functions (tested without a
 * DOM): each agent by name, one that cannot start marked "not installed", and
 * the description that says what a choice does and what to install.
 */
import type { TranslationBundle } from '@jupyterlab/translation';

import type { IAgentInfo } from './chatClient';

/** One entry of the picker: its value, its label and whether it can be chosen. */
export interface IAgentOption {
  value: string;
  label: string;
  disabled: boolean;
}

/**
 * The picker's entries: every agent, the chat's own one kept even if it
 * vanished from the list; one that cannot start says so in its label.
 */
export function agentOptions(
  agents: ReadonlyArray<IAgentInfo>,
  current: string | null,
  trans: TranslationBundle
): IAgentOption[] {
  const options = agents.map(agent => ({
    value: agent.name,
    label: agent.available ? agent.name : trans.__('%1 (not installed)', agent.name),
    disabled: !agent.available && agent.name !== current
  }));
  if (current && !options.some(o => o.value === current)) {
    options.unshift({ value: current, label: current, disabled: false });
  }
  return options;
}

/**
 * The picker's description: what a choice does, and why an agent that cannot
 * start is not there (the server's sentences, one per agent).
 */
export function agentHint(agents: ReadonlyArray<IAgentInfo>, trans: TranslationBundle): string {
  const problems = agents.filter(a => !a.available && a.problem).map(a => a.problem as string);
  const base = trans.__(
    'The coding agent that answers your next messages in this chat. Its steps and questions are told here as the built-in agent’s are.'
  );
  return problems.length ? `${base} ${problems.join(' ')}` : base;
}

/**
 * The coding agent over ACP that answers this chat, or null when our own
 * agent does: the model picker applies to our agent only (an ACP agent runs
 * its own model), so with one chosen the picker says so instead of offering
 * a choice that would do nothing.
 */
export function outsideAgent(agents: ReadonlyArray<IAgentInfo>, current: string | null): string | null {
  if (!current || agents.length === 0) {
    return null;
  }
  const agent = agents.find(a => a.name === current);
  // Not listed any more (removed from agents.json): still not ours, ours is always listed.
  return agent?.kind === 'built_in' ? null : current;
}

/** What the settings say in place of the model picker while an ACP agent answers. */
export function modelNotApplicable(agent: string, trans: TranslationBundle): string {
  return trans.__(
    '%1 uses its own model: the model setting applies only to the built-in agent. Choose the built-in agent above to pick a model.',
    agent
  );
}
