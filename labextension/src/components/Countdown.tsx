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

/**
 * The time left in words, in steps coarse enough that a screen reader
 * reading it again hears a change only now and then: whole minutes above two
 * minutes, half minutes above one, ten seconds above fifteen, then seconds.
 * Rounded up, so it never promises less time than there is.
 */
export function spokenRemaining(ms: number, trans: TranslationBundle): string {
  const total = Math.max(0, Math.ceil(ms / 1000));
  const step = total > 120 ? 60 : total > 60 ? 30 : total > 15 ? 10 : 1;
  const rounded = Math.ceil(total / step) * step;
  const m = Math.floor(rounded / 60);
  const s = rounded % 60;
  const words = [
    m > 0 ? trans._n('%1 minute', '%1 minutes', m) : '',
    s > 0 || m === 0 ? trans._n('%1 second', '%1 seconds', s) : ''
  ]
    .filter(Boolean)
    .join(' ');
  return trans.__('Time left to answer: %1', words);
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
 * on demand instead of every second, and what they read is named and coarse
 * ("Time left to answer: 1 minute 30 seconds"), never a bare "1:29".
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
      {expired ? (
        props.trans.__('expired')
      ) : (
        <>
          <span aria-hidden="true">{props.trans.__('%1 left', formatRemaining(left))}</span>
          <span className="jp-sr-only">{spokenRemaining(left, props.trans)}</span>
        </>
      )}
    </span>
  );
}
