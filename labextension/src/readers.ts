/**
 * Readers: what a chat description from the server (`GET chats/{id}`) says,
 * as typed values. Each reader takes `unknown` and never throws: a missing
 * or malformed field gives the safe default, so an older or newer server
 * still gets a working panel.
 */
import { APPROVAL_MODES, DEFAULT_SUPPORTS, IGuidance, IPolicy, ISupports, IUsage, OPEN_POLICY } from './transcript';

/** Read `policy` from a chat description; an absent or malformed one locks nothing. */
export function readPolicy(value: unknown): IPolicy {
  if (typeof value !== 'object' || value === null) {
    return OPEN_POLICY;
  }
  const raw = value as Record<string, unknown>;
  const locked = Array.isArray(raw.locked) ? raw.locked.filter((v): v is string => typeof v === 'string') : [];
  const allowed = Array.isArray(raw.approval_modes) ? raw.approval_modes : APPROVAL_MODES;
  const approvalModes = APPROVAL_MODES.filter(mode => allowed.includes(mode));
  return {
    locked,
    approvalModes: approvalModes.length > 0 ? approvalModes : [...APPROVAL_MODES],
    message: typeof raw.message === 'string' && raw.message.trim() ? raw.message : null
  };
}

/** Read `usage` from a chat description, or `null` when it has none. */
export function readUsage(value: unknown): IUsage | null {
  if (typeof value !== 'object' || value === null) {
    return null;
  }
  const raw = value as Record<string, unknown>;
  const count = (key: string) =>
    typeof raw[key] === 'number' && Number.isFinite(raw[key]) ? Math.max(0, raw[key] as number) : 0;
  const budget = raw.budget_usd;
  const cost = raw.estimated_cost_usd;
  return {
    inputTokens: count('input_tokens'),
    outputTokens: count('output_tokens'),
    cacheReadTokens: count('cache_read_input_tokens'),
    cacheWriteTokens: count('cache_creation_input_tokens'),
    requests: count('requests'),
    // No price, no figure: null stays null rather than becoming a misleading $0.00.
    costUsd: cost === null ? null : count('estimated_cost_usd'),
    budgetUsd: typeof budget === 'number' && Number.isFinite(budget) ? budget : null,
    compactions: count('context_compactions')
  };
}

/** Read `supports` from a chat description, defaulting what is missing. */
export function readSupports(value: unknown): ISupports {
  const raw = (typeof value === 'object' && value !== null ? value : {}) as Record<string, unknown>;
  const flag = (key: keyof ISupports) =>
    typeof raw[key] === 'boolean' ? (raw[key] as boolean) : DEFAULT_SUPPORTS[key];
  return {
    stop: flag('stop'),
    pause: flag('pause'),
    guidance: flag('guidance'),
    approval_mode: flag('approval_mode'),
    revert: flag('revert'),
    // A server that can pause can resume, unless it says otherwise.
    resume: typeof raw.resume === 'boolean' ? raw.resume : flag('pause'),
    continue: flag('continue')
  };
}

/** Read the `guidance` list of a chat description (entries it cannot read are skipped). */
export function readGuidance(value: unknown): IGuidance[] {
  if (!Array.isArray(value)) {
    return [];
  }
  const out: IGuidance[] = [];
  for (const raw of value) {
    if (typeof raw !== 'object' || raw === null) {
      continue;
    }
    const entry = raw as Record<string, unknown>;
    if (typeof entry.guidance_id !== 'string' || typeof entry.text !== 'string') {
      continue;
    }
    out.push({
      guidanceId: entry.guidance_id,
      sessionId: typeof entry.session_id === 'string' ? entry.session_id : undefined,
      text: entry.text,
      created: typeof entry.created === 'string' ? Date.parse(entry.created) : NaN
    });
  }
  return out;
}
