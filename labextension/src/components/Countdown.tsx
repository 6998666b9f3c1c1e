/**
 * A visible countdown to a request's deadline.
 */
import { TranslationBundle } from '@jupyterlab/translation';
import React from 'react';

import { useNow } from './hooks';

/** Format milliseconds as `m:ss` (or `h:mm:ss`). */
export function formatRemaining(ms: number): string {
  const total = Math.max(0, Math.ceil(ms / 1000));
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = total % 60;
  const pad = (n: number) => String(n).padStart(2, '0');
  return h > 0 ? `${h}:${pad(m)}:${pad(s)}` : `${m}:${pad(s)}`;
}

/** Props of {@link Countdown}. */
export interface ICountdownProps {
  /** Epoch milliseconds of the deadline. */
  deadline: number;
  /** Whether the request is still open (the clock stops otherwise). */
  active: boolean;
  trans: TranslationBundle;
}

/**
 * Shows the time left. It is a `timer` (not live), so screen readers read it
 * on demand instead of every second; the announcer warns before expiry.
 */
export function Countdown(props: ICountdownProps): JSX.Element {
  const now = useNow(props.active);
  const left = props.deadline - now;
  const expired = left <= 0;
  return (
    <span
      className={`jp-AAEPCountdown${expired ? ' jp-mod-expired' : ''}${
        left > 0 && left < 15000 ? ' jp-mod-urgent' : ''
      }`}
      role="timer"
    >
      {expired ? props.trans.__('expired') : props.trans.__('%1 left', formatRemaining(left))}
    </span>
  );
}
