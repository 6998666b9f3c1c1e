/**
 * Reading the user's settings (`schema/plugin.json`) defensively.
 */
import { ReadonlyPartialJSONObject } from '@lumino/coreutils';

import { Verbosity } from './aaep';
import { isApprovalMode } from './model';
import { DEFAULT_SETTINGS, IAAEPSettings } from './tokens';

/**
 * Turn the composite settings into {@link IAAEPSettings}, replacing invalid
 * values by the defaults.
 *
 * @param composite The composite settings object.
 * @param forceDebug Turn the announcement log on regardless (URL flag).
 */
export function readSettings(composite: ReadonlyPartialJSONObject, forceDebug = false): IAAEPSettings {
  const verbosity = composite.verbosity;
  const rate = composite.maxAnnouncementsPerSecond;
  const mode = composite.approvalMode;
  const area = composite.panelArea;
  return {
    verbosity: (['terse', 'normal', 'detailed'] as unknown[]).includes(verbosity)
      ? (verbosity as Verbosity)
      : DEFAULT_SETTINGS.verbosity,
    maxAnnouncementsPerSecond:
      typeof rate === 'number' && Number.isFinite(rate) && rate > 0
        ? Math.min(20, Math.max(0.1, rate))
        : DEFAULT_SETTINGS.maxAnnouncementsPerSecond,
    approvalMode: isApprovalMode(mode) ? mode : DEFAULT_SETTINGS.approvalMode,
    panelArea: area === 'left' ? 'left' : 'right',
    debugAnnouncements: forceDebug || composite.debugAnnouncements === true,
    announcePersonRuns: composite.announcePersonRuns !== false
  };
}
