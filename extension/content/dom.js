// DOM helpers shared by the site adapters and the observer: a comment's own subtree (never a
// nested reply's), accessible-label names, text as the adapters report it, URL parameters and
// absolute posting times. Pure functions of the nodes they are given; loadable from node tests.
(function (root) {
  const ns = (root.modlens = root.modlens || {});

  /** The first element matching `sel` in `el`'s subtree whose closest `scope` is `el` itself.
   * `sel` may be a list: its selectors are tried in order (a priority, not document order). */
  ns.own = function own(el, sel, scope) {
    for (const one of [].concat(sel)) {
      for (const n of el.querySelectorAll(one)) if (!scope || n.closest(scope) === el) return n;
    }
    return null;
  };

  /** "Comment by NAME" / "Reply from NAME" style accessible labels: NAME, or null. */
  ns.labelName = function labelName(node, re) {
    const label = node && node.getAttribute && node.getAttribute("aria-label");
    const m = label && label.match(re || /^\s*(?:comment|reply|post)\s+(?:by|from)\s+(.+?)\s*$/i);
    return m ? ns.cleanText(m[1]) : null;
  };

  /** The first element of `el`'s subtree matching one of `spec` (a selector or a list, in order). */
  ns.pick = function pick(el, spec) {
    if (!spec) return null;
    for (const sel of [].concat(spec)) {
      const found = el.querySelector(sel);
      if (found) return found;
    }
    return null;
  };

  /** A node's text as the adapters report it: its rendered text (innerText), whitespace collapsed,
   * the same whether or not the node is laid out when it is read (see unrenderedText). */
  ns.textOf = function textOf(node) {
    if (!node) return "";
    if (typeof node === "string") return ns.cleanText(node);
    if (node.innerText === undefined) return ns.cleanText(node.textContent); // not an HTML element
    return ns.cleanText(isRendered(node) ? node.innerText : unrenderedText(node));
  };

  // innerText of an element with no layout box (in a display:none container or frame, detached,
  // in a parsed document) is its textContent, which puts nothing between blocks or at <br>
  // ("rabbits.<br>September" read "rabbits.September"). Reading the boxes forces layout, as
  // innerText does anyway.
  function isRendered(node) {
    const view = node.isConnected && node.ownerDocument && node.ownerDocument.defaultView;
    if (!view) return false;
    if (node.getClientRects().length > 0) return true;
    // display: contents makes no box of its own, yet innerText reads its laid-out children
    return view.getComputedStyle(node).display === "contents" && !!node.parentElement && isRendered(node.parentElement);
  }

  // What unrenderedText skips or breaks at when no style can be computed (a detached node, a parsed
  // document): the user agent style sheet's display of each element.
  const NOT_SHOWN = new Set(["head", "title", "meta", "link", "base", "script", "style", "template", "noscript",
    "datalist", "param", "source", "track", "area", "rp"]);
  // replaced elements: innerText reads no text inside them (fallback content, a textarea's value, alt)
  const REPLACED = new Set(["img", "input", "textarea", "video", "audio", "canvas", "iframe", "embed", "meter", "progress", "frame"]);
  const BLOCKS = new Set(["address", "article", "aside", "blockquote", "body", "center", "dd", "details", "dialog",
    "dir", "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5",
    "h6", "header", "hgroup", "hr", "html", "legend", "li", "listing", "main", "menu", "nav", "ol", "optgroup",
    "option", "p", "plaintext", "pre", "search", "section", "summary", "table", "ul", "xmp",
    // table rows, cells and captions: not blocks, yet innerText breaks around them too (a row a line,
    // a cell a tab), which textOf's whitespace collapsing reads as the break a block gives
    "tr", "td", "th", "caption"]);
  // displays innerText breaks lines around (table-cell: a tab, the same once collapsed)
  const BREAKS = new Set(["block", "flow-root", "list-item", "flex", "grid", "table", "table-caption", "-webkit-box",
    "table-row", "table-cell"]);

  function defaultDisplay(el, name) {
    if (NOT_SHOWN.has(name) || el.hasAttribute("hidden") || (name === "dialog" && !el.hasAttribute("open"))) return "none";
    return BLOCKS.has(name) ? "block" : "inline";
  }

  /** The text innerText gives for `node` once it is rendered, up to runs of whitespace (textOf
   * collapses them, so every break is one line break): around each block-level element, table row
   * and cell, and at <br>; display:none and visibility:hidden parts, replaced elements' insides,
   * a closed <details>' body and SVG text outside <text> are left out, as innerText leaves them out.
   * Display, visibility and text-transform are the computed ones where the document can compute
   * them (a display:none subtree or frame), else the user agent's defaults. Not modelled: text in
   * shadow trees, text-transform: capitalize, MathML's italic letters. */
  function unrenderedText(node) {
    const view = node.ownerDocument && node.ownerDocument.defaultView;
    // a detached node has no computed style: getComputedStyle answers "" for every property
    const styleOf = (el) => {
      const cs = view && view.getComputedStyle ? view.getComputedStyle(el) : null;
      return cs && cs.display ? cs : null;
    };
    const out = [];
    const walk = (el, root, inherited) => {
      const name = String(el.localName || "").toLowerCase();
      const cs = styleOf(el);
      const display = root ? "contents" : cs ? cs.display : defaultDisplay(el, name);
      if (display === "none" || REPLACED.has(name)) return;
      const svg = inherited.svg || name === "svg";
      if (svg && (name === "defs" || name === "symbol")) return;
      const style = {
        svg,
        visible: cs ? cs.visibility === "visible" : inherited.visible,
        transform: cs ? cs.textTransform : inherited.transform,
        // SVG draws only what is inside <text>, each <text> a block of its own
        svgText: svg && (inherited.svgText || name === "text"),
      };
      if (name === "br") { out.push("\n"); return; }
      const breaks = svg ? name === "text" : BREAKS.has(display.split(" ")[0]);
      if (breaks) out.push("\n");
      // a closed <details> shows its summary only
      const shown = name === "details" && !el.hasAttribute("open")
        ? [...el.childNodes].filter((c) => c.nodeType === 1 && String(c.localName).toLowerCase() === "summary").slice(0, 1)
        : el.childNodes;
      for (const child of shown) {
        if (child.nodeType === 1) walk(child, false, style);
        else if (child.nodeType === 3 && style.visible && (!svg || style.svgText)) out.push(transformed(child.data, style.transform));
      }
      if (breaks) out.push("\n");
    };
    walk(node, true, { svg: false, svgText: false, visible: true, transform: "none" });
    return out.join("");
  }

  function transformed(text, transform) {
    if (transform === "uppercase") return text.toUpperCase();
    if (transform === "lowercase") return text.toLowerCase();
    return text;
  }

  ns.urlParam = function urlParam(href, name, base) {
    try { return new URL(href, base || root.location.href).searchParams.get(name); } catch (_) { return null; }
  };

  // The site's posting time as an ISO instant, when it shows an absolute one (a datetime
  // attribute, a dated tooltip); relative labels ("2 days ago") are not guessed at.
  ns.isoTime = function isoTime(value) {
    if (!value || !/\d{4}/.test(value)) return null;
    const t = Date.parse(value);
    return Number.isNaN(t) ? null : new Date(t).toISOString();
  };

  if (typeof module !== "undefined" && module.exports) module.exports = ns;
})(globalThis);
