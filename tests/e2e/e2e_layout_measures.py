"""What the layout tests measure in the page (JavaScript run by ``page.evaluate``).

Kept apart from ``test_e2e_layout.py`` so the test reads as its steps: each script returns
plain data (boxes, overflows, rows of code) that the test asserts on.
"""

SET_SIDEBAR_WIDTH = """target => {
    // The right sidebar's share of JupyterLab's main split panel, so the panel is `target` wide.
    const split = window.jupyterapp.shell._hsplitPanel;
    const sizes = split.relativeSizes();
    const right = target / split.node.clientWidth;
    const rest = sizes[0] + sizes[1];
    split.setRelativeSizes([sizes[0] / rest * (1 - right), sizes[1] / rest * (1 - right), right]);
}"""

MEASURE = """() => {
    const panel = document.querySelector('.jp-AAEPPanel');
    const transcript = panel.querySelector('.jp-AAEPPanel-transcript');
    const box = el => el.getBoundingClientRect();
    const inView = el => { const r = box(el); return r.top >= 0 && r.bottom <= window.innerHeight
                                                 && r.left >= 0 && r.right <= window.innerWidth; };
    const inTranscript = el => { const r = box(el), t = box(transcript);
                                 return r.top >= t.top - 1 && r.bottom <= t.bottom + 1; };
    const card = panel.querySelector('.jp-AAEPCard.jp-mod-pending');
    const buttons = [...card.querySelectorAll('.jp-AAEPCard-actions button')];
    const sideways = el => ['auto', 'scroll'].includes(getComputedStyle(el).overflowX);
    const clipped = [...transcript.querySelectorAll('.jp-AAEPPanel-entry, .jp-AAEPPanel-entry *')]
        .filter(el => !sideways(el))
        // Text only screen readers get (visually hidden by design, 1 px wide) is not clipped text.
        .filter(el => !el.closest('.jp-sr-only'))
        .filter(el => el.scrollWidth > el.clientWidth + 1 && el.clientWidth > 0)
        .map(el => `${el.className || el.tagName}: ${el.scrollWidth} > ${el.clientWidth}`);
    // Blocks that scroll sideways must be named, focusable regions (keyboard users scroll them).
    const regions = [...transcript.querySelectorAll('*')]
        .filter(el => sideways(el) && el.scrollWidth > el.clientWidth + 1)
        .map(el => ({ kind: el.tagName.toLowerCase(), className: String(el.className),
                      role: el.getAttribute('role'), name: el.getAttribute('aria-label'),
                      tabindex: el.getAttribute('tabindex') }));
    const footer = panel.querySelector('.jp-AAEPPanel-footer');
    // Stuck to the transcript's visible bottom, the answer bar leaves no strip of code under it.
    const actions = card.querySelector('.jp-AAEPCard-actions');
    const seenBottom = box(transcript).top + transcript.clientTop + transcript.clientHeight;
    const stuck = box(card).bottom > seenBottom + 1;
    // The code to approve seen between the transcript's visible top and the answer bar: the
    // bar must not cover it (lines of the code's own height).
    const pre = card.querySelector('pre');
    const seenTop = box(transcript).top + transcript.clientTop;
    const codeSeen = Math.min(box(pre).bottom, box(actions).top) - Math.max(box(pre).top, seenTop);
    const fits = b => b.scrollHeight <= b.clientHeight + 1;
    return {
        stripUnderBar: stuck ? Math.round(seenBottom - box(actions).bottom) : 0,
        codeLinesSeen: Math.floor(Math.max(0, codeSeen) / (parseFloat(getComputedStyle(pre).lineHeight) || 16)),
        barHeight: Math.round(box(actions).height),
        composerInView: inView(panel.querySelector('.jp-AAEPComposer-input')),
        panelWidth: box(panel).width,
        panelHeight: box(panel).height,
        transcriptHeight: box(transcript).height,
        footerHeight: box(footer).height,
        // fits: its words inside its own box (a wrapped label in a box of fixed height is drawn
        // over the buttons beside it)
        buttons: buttons.map(b => ({ name: b.textContent.trim(), inView: inView(b), inTranscript: inTranscript(b),
                                     fits: fits(b) })),
        // "don't ask again": below the bar, reached by Tab after Reject (scrolled to then)
        grants: [...card.querySelectorAll('.jp-AAEPCard-grants button')]
            .map(b => ({ name: b.textContent.trim(), fits: fits(b) })),
        focusedCard: document.activeElement === card,
        clipped,
        regions,
        nativeSelects: panel.querySelectorAll('select:not(.jp-HTMLSelect select)').length,
    };
}"""

UNCUT = """panel => {
    // The title on one line, the header's buttons inside the panel, the placeholder whole.
    const title = panel.querySelector('.jp-AAEPPanel-title');
    const header = panel.querySelector('.jp-AAEPPanel-header').getBoundingClientRect();
    const size = parseFloat(getComputedStyle(title).fontSize);
    const box = panel.querySelector('.jp-AAEPComposer-input');
    const style = getComputedStyle(box);
    const pen = document.createElement('canvas').getContext('2d');
    pen.font = `${style.fontStyle} ${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
    const room = box.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    return {
        titleLines: Math.round(title.getBoundingClientRect().height / (size * 1.25)),
        // The chat buttons share the title's line (a second line would cost the transcript).
        buttonRows: new Set([...panel.querySelectorAll('.jp-AAEPChats-buttons > button')]
            .map(b => Math.round(b.getBoundingClientRect().top))).size,
        buttonsOut: [...panel.querySelectorAll('.jp-AAEPPanel-header button')]
            .filter(b => b.getBoundingClientRect().right > header.right + 1).map(b => b.textContent),
        placeholderFits: pen.measureText(box.placeholder).width <= room,
    };
}"""

CODE_LAYOUT = """card => {
    // Per line of the code: where its first non-space character is, relative to the left of
    // an unindented line's first character, in character widths; whether any part of it is
    // left of that (a wrapped rest seen outside its block), how many rows it takes, where its
    // wrapped rows start, and the identifiers split across two rows.
    const lines = [...card.querySelectorAll('.jp-AAEPCard-codeLine')];
    const chars = line => {  // each character of the line with its box (text nodes in order)
        const walker = document.createTreeWalker(line, NodeFilter.SHOW_TEXT);
        const out = [];
        for (let node = walker.nextNode(); node; node = walker.nextNode()) {
            for (let i = 0; i < node.textContent.length; i++) {
                const range = document.createRange();
                range.setStart(node, i);
                range.setEnd(node, i + 1);
                out.push({ char: node.textContent[i], box: range.getBoundingClientRect() });
            }
        }
        return out;
    };
    const firstBox = chars(lines[0])[0].box;
    const ch = firstBox.width, origin = firstBox.left;
    const column = box => (box.left - origin) / ch;
    return {
        ch,
        text: card.querySelector('pre').innerText,
        number: getComputedStyle(lines[0], '::before').content,
        lines: lines.map(line => {
            const all = chars(line);
            const text = all.map(c => c.char).join('');
            const indent = text.length - text.trimStart().length;
            const code = all.slice(indent).filter(c => c.char !== ' ');
            if (!code.length) { return { text, indent, rows: 1, broken: [], wrappedAt: [] }; }
            const tops = [...new Set(code.map(c => Math.round(c.box.top)))];
            const broken = [...text.matchAll(/[A-Za-z_][A-Za-z0-9_]*/g)]
                .filter(m => new Set(all.slice(m.index, m.index + m[0].length)
                    .map(c => Math.round(c.box.top))).size > 1)
                .map(m => m[0]);
            return {
                text, indent, rows: tops.length, broken,
                column: column(code[0].box),
                leftmost: Math.min(...code.map(c => column(c.box))),
                rightmost: Math.max(...code.map(c => column(c.box) + 1)),
                wrappedAt: tops.slice(1).map(top => Math.min(...code
                    .filter(c => Math.round(c.box.top) === top).map(c => column(c.box)))),
            };
        }),
    };
}"""
