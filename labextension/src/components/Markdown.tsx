/**
 * Markdown rendered through JupyterLab's rendermime (sanitized, untrusted).
 */
import { IRenderMimeRegistry, MimeModel } from '@jupyterlab/rendermime';
import React, { useEffect, useRef } from 'react';

/** Props of {@link Markdown}. */
export interface IMarkdownProps {
  rendermime: IRenderMimeRegistry;
  /** Markdown source (may grow while streaming). */
  source: string;
  /** MIME type of the source; plain text is rendered as such. */
  mimeType?: string;
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
        const model = new MimeModel({ data: { [mimeType]: source }, trusted: false });
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
  }, [source, mimeType]);

  return <div className="jp-AAEPMarkdown" ref={host} />;
}
