/**
 * AAEP 1.0.0 message shapes as the panel sees them, plus small pure helpers.
 *
 * The panel is a *subscriber*: it must survive unknown event types, unknown
 * payload keys and extensions, so every payload field is optional here and
 * read defensively. Nothing in this module touches the DOM.
 */

/** The core JSON-LD context every AAEP event starts with. */
export const AAEP_CONTEXT = 'https://aaep-protocol.org/context/v1';

/** The AAEP version this panel speaks. */
export const AAEP_VERSION = '1.0.0';

/** Verbosity levels of AAEP summaries and of the announcer. */
export type Verbosity = 'terse' | 'normal' | 'detailed';

/** Envelope urgency. */
export type Urgency = 'background' | 'normal' | 'critical';

/** A JSON object whose shape we do not trust. */
export type JSONRecord = { [key: string]: unknown };

/**
 * One AAEP event: the envelope plus whatever payload it carries.
 *
 * Payload keys are typed loosely on purpose; use the accessors below.
 */
export interface IAAEPEvent extends JSONRecord {
  '@context': string | string[];
  /** Compact (`aaep:agent.tool.invoked`) or URI form of the type. */
  type: string;
  event_id: string;
  session_id: string;
  timestamp: string;
  urgency?: Urgency;
  verbosity?: Verbosity;
  sequence_number?: number;
  summary_terse?: string;
  summary_normal?: string;
  summary_detailed?: string;
}

/** The short names of the 12 core event types. */
export type CoreEventName =
  | 'session.started'
  | 'session.completed'
  | 'session.errored'
  | 'session.cancelled'
  | 'state.changed'
  | 'progress.updated'
  | 'tool.invoked'
  | 'tool.completed'
  | 'output.streaming'
  | 'awaiting.confirmation'
  | 'awaiting.clarification'
  | 'handoff.requested';

const CORE_NAMES: ReadonlySet<string> = new Set<CoreEventName>([
  'session.started',
  'session.completed',
  'session.errored',
  'session.cancelled',
  'state.changed',
  'progress.updated',
  'tool.invoked',
  'tool.completed',
  'output.streaming',
  'awaiting.confirmation',
  'awaiting.clarification',
  'handoff.requested'
]);

const COMPACT_PREFIX = 'aaep:agent.';
const URI_PREFIX = 'https://aaep-protocol.org/types/agent.';

/** Event types that are always announced assertively and never dropped. */
export const CRITICAL_EVENTS: ReadonlySet<string> = new Set([
  'session.errored',
  'awaiting.confirmation',
  'awaiting.clarification',
  'handoff.requested'
]);

/** Terminal event types (exactly one per session). */
export const TERMINAL_EVENTS: ReadonlySet<string> = new Set([
  'session.completed',
  'session.errored',
  'session.cancelled'
]);

/**
 * Return the short core name (`tool.invoked`) of an event type, or `null`
 * when the type is not one of the 12 core types.
 */
export function coreName(type: unknown): CoreEventName | null {
  if (typeof type !== 'string') {
    return null;
  }
  let name: string | null = null;
  if (type.startsWith(COMPACT_PREFIX)) {
    name = type.slice(COMPACT_PREFIX.length);
  } else if (type.startsWith(URI_PREFIX)) {
    name = type.slice(URI_PREFIX.length);
  }
  return name !== null && CORE_NAMES.has(name) ? (name as CoreEventName) : null;
}

/** Whether a parsed JSON message is an AAEP event (it carries the core `@context`). */
export function isAAEPEvent(message: unknown): message is IAAEPEvent {
  if (!isRecord(message)) {
    return false;
  }
  const ctx = message['@context'];
  const hasContext = ctx === AAEP_CONTEXT || (Array.isArray(ctx) && ctx[0] === AAEP_CONTEXT);
  return (
    hasContext &&
    typeof message.type === 'string' &&
    typeof message.event_id === 'string' &&
    typeof message.session_id === 'string'
  );
}

/** Whether a value is a plain JSON object. */
export function isRecord(value: unknown): value is JSONRecord {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Read a string payload field, or `undefined`. */
export function str(event: JSONRecord, key: string): string | undefined {
  const value = event[key];
  return typeof value === 'string' && value.length > 0 ? value : undefined;
}

/** Read a finite number payload field, or `undefined`. */
export function num(event: JSONRecord, key: string): number | undefined {
  const value = event[key];
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

/** Read a boolean payload field, or `undefined`. */
export function bool(event: JSONRecord, key: string): boolean | undefined {
  const value = event[key];
  return typeof value === 'boolean' ? value : undefined;
}

/**
 * Pick the summary at the requested verbosity, falling back to the nearest
 * available one (terse ← normal → detailed).
 */
export function pickSummary(event: JSONRecord, verbosity: Verbosity): string | undefined {
  const order: Record<Verbosity, string[]> = {
    terse: ['summary_terse', 'summary_normal', 'summary_detailed'],
    normal: ['summary_normal', 'summary_terse', 'summary_detailed'],
    detailed: ['summary_detailed', 'summary_normal', 'summary_terse']
  };
  for (const key of order[verbosity]) {
    const value = str(event, key);
    if (value) {
      return value;
    }
  }
  return undefined;
}

/** Whether an event must be treated as critical (by type or by urgency). */
export function isCritical(event: IAAEPEvent): boolean {
  const name = coreName(event.type);
  return event.urgency === 'critical' || (name !== null && CRITICAL_EVENTS.has(name));
}

/** A clarification choice (`{value, label}`). */
export interface IChoice {
  value: string;
  label: string;
}

/** Read the `choices` of a clarification, skipping malformed items. */
export function readChoices(event: JSONRecord): IChoice[] {
  const raw = event.choices;
  if (!Array.isArray(raw)) {
    return [];
  }
  const choices: IChoice[] = [];
  for (const item of raw) {
    if (isRecord(item) && typeof item.value === 'string') {
      choices.push({
        value: item.value,
        label: typeof item.label === 'string' ? item.label : item.value
      });
    }
  }
  return choices;
}

/** Read the accepted response kinds of a clarification (default: freetext). */
export function readResponseKinds(event: JSONRecord): string[] {
  const raw = event.accepted_response_kinds;
  if (Array.isArray(raw)) {
    const kinds = raw.filter((k): k is string => typeof k === 'string');
    if (kinds.length > 0) {
      return kinds;
    }
  }
  return readChoices(event).length > 0 ? ['multiple_choice'] : ['freetext'];
}

/** The current time as an RFC 3339 timestamp with milliseconds (`…sssZ`). */
export function nowTimestamp(): string {
  return new Date().toISOString();
}

/**
 * Milliseconds since the epoch at which a confirmation or clarification
 * expires (`timestamp` + `timeout_seconds`), or `null` if unknown.
 */
export function deadlineOf(event: IAAEPEvent): number | null {
  const start = Date.parse(event.timestamp);
  const timeout = num(event, 'timeout_seconds');
  if (Number.isNaN(start) || timeout === undefined) {
    return null;
  }
  return start + timeout * 1000;
}
