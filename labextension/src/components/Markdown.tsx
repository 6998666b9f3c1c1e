/**
 * Markdown rendered through JupyterLab's rendermime (sanitized, untrusted).
 */
import { IRenderMimeRegistry, MimeModel } from '@jupyterlab/rendermime';
import { TranslationBundle } from '@jupyterlab/translation';
import React, { useEffect, useRef, useState } from 'react';

import { ICitationNavigator } from '../citationNavigator';
import { ICitation, citationIndex, withCitationLinks } from '../citations';

/** Props of {@link Markdown}. */
export interface IMarkdownProps {
  rendermime: IRenderMimeRegistry;
  /** Markdown source (may grow while streaming). */
  source: string;
  /** MIME type of the source; plain text is rendered as such. */
  mimeType?: string;
  /** Cells the text cites, made links that go to them (with `navigator`). */
  citations?: readonly ICitation[];
  navigator?: ICitationNavigator | null;
  trans?: TranslationBundle;
}

/**
 * Render Markdown with the same renderer notebooks use. Re-renders are
 * batched to one per animation frame while text streams in.
 */
export function Markdown(props: IMarkdownProps): JSX.Element {
  const { rendermime, source } = props;
  const mimeType = props.mimeType && rendermime.mimeTypes.includes(props.mimeType) ? props.mimeType : 'text/markdown';
  const host = useRef<HTMLDivElement>(null);
  const renderer = useRef<ReturnType<IRenderMimeRegistry['createRenderer']> | null>(null);
  const frame = useRef<number | null>(null);
  const { citations, navigator, trans } = props;
  const cites = citations && citations.length > 0 && navigator && trans ? citations : null;
  // Citations are named by the cells' numbers now: render again when cells change.
  const [renumbered, setRenumbered] = useState(0);
  useEffect(() => {
    if (!cites || !navigator) {
      return;
    }
    const bump = () => setRenumbered(n => n + 1);
    navigator.changed.connect(bump);
    return () => {
      navigator.changed.disconnect(bump);
    };
  }, [cites, navigator]);
  const shown =
    cites && navigator && trans ? withCitationLinks(source, cites, id => navigator.numberOf(id), trans) : source;

  useEffect(() => {
    const node = host.current;
    if (!node) {
      return;
    }
    const current = rendermime.createRenderer(mimeType);
    renderer.current = current;
    node.replaceChildren(current.node);
    return () => {
      current.dispose();
      renderer.current = null;
    };
  }, [rendermime, mimeType]);

  useEffect(() => {
    if (frame.current !== null) {
      cancelAnimationFrame(frame.current);
    }
    frame.current = requestAnimationFrame(() => {
      frame.current = null;
      const current = renderer.current;
      if (current && !current.isDisposed) {
        const model = new MimeModel({ data: { [mimeType]: shown }, trusted: false });
        current.renderModel(model).catch(error => {
          console.warn('jupyter-aaep: could not render the answer', error);
        });
      }
    });
    return () => {
      if (frame.current !== null) {
        cancelAnimationFrame(frame.current);
        frame.current = null;
      }
    };
  }, [shown, mimeType, renumbered]);

  // A citation link goes to its cell (Enter on the focused link clicks it too).
  const follow = (event: React.MouseEvent<HTMLDivElement>) => {
    const link = (event.target as HTMLElement).closest('a');
    const index = citationIndex(link?.getAttribute('href') ?? null);
    if (index === null || !cites || !navigator) {
      return;
    }
    event.preventDefault();
    event.stopPropagation();
    navigator.go(cites[index]);
  };

  return <div className="jp-AAEPMarkdown" ref={host} onClickCapture={follow} />;
}
