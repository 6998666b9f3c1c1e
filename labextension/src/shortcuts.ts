/**
 * The keys bound to the panel's commands, as people read them ("Ctrl+Shift+A").
 *
 * Shortcuts live in the schema and users can change them in the Settings
 * Editor, so the panel never hard-codes a key: it asks the command registry.
 */
import { CommandRegistry } from '@lumino/commands';

/**
 * The first key binding of `command`, formatted for the platform, or `null`
 * when the command has no shortcut.
 */
export function shortcutLabel(commands: CommandRegistry, command: string): string | null {
  const binding = commands.keyBindings.find(b => b.command === command);
  return binding ? binding.keys.map(k => CommandRegistry.formatKeystroke(k)).join(', ') : null;
}

/**
 * The same binding in the `aria-keyshortcuts` syntax ("Control+Shift+A"), or
 * `undefined` when there is none.
 */
export function ariaShortcut(commands: CommandRegistry, command: string): string | undefined {
  const binding = commands.keyBindings.find(b => b.command === command);
  if (!binding || binding.keys.length !== 1) {
    return undefined;
  }
  const names: Record<string, string> = {
    Accel: /Mac/.test(navigator.platform) ? 'Meta' : 'Control',
    Ctrl: 'Control',
    Cmd: 'Meta',
    Alt: 'Alt',
    Shift: 'Shift'
  };
  return binding.keys[0]
    .split(/\s+/)
    .map(part => names[part] ?? (part === '.' ? 'Period' : part))
    .join('+');
}
