// Inline UI: one marker per sampled comment, each in a *closed* shadow root of its own (page styles
// cannot reach in, ours cannot leak out, and page scripts cannot read scores or reach the controls:
// the root is held only here, in the content script's world). Every control that opens the panel or
// records a rating acts on the participant's own input only (`event.isTrusted`): a page script that
// calls click(), requestSubmit() or sets `.checked` records nothing. Scores mode shows a colour band with detector names
// and scores on hover; blind mode (the study default) renders NO score at all until the
// participant has rated the comment, so the detector cannot bias the rating. The rating panel
// is a plain form: native radio groups (arrow keys), definitions on hover and for screen
// readers, Escape to close, Table-1 derivation shown live.
(function (root) {
  const ns = (root.modlens = root.modlens || {});
  const hosts = new WeakMap(); // comment element -> marker host
  const roots = new WeakMap(); // marker host -> its closed shadow root (never reachable from the page)

  const CSS = `
:host { all: initial; display: block; margin: 4px 0; font: 12px/1.4 system-ui, "DejaVu Sans", sans-serif; color: #1f2328; }
.bar { display: inline-flex; align-items: center; gap: 6px; background: #f6f8fa; border: 1px solid #d0d7de; border-radius: 12px; padding: 1px 4px 1px 8px; }
.brand { font-weight: 600; color: #57606a; letter-spacing: .02em; }
.band { display: inline-block; width: 46px; height: 8px; border-radius: 4px; }
.score { font-variant-numeric: tabular-nums; color: #24292f; }
.done { color: #1a7f37; }
button { font: inherit; cursor: pointer; border-radius: 10px; border: 1px solid #8c959f; background: #fff; color: #1f2328; padding: 1px 10px; }
button:hover { background: #eef1f4; }
button:focus-visible, input:focus-visible, .info:focus-visible { outline: 2px solid #0969da; outline-offset: 1px; }
button.primary { background: #1f6feb; border-color: #1f6feb; color: #fff; }
button.primary:hover { background: #1a5fd0; }
form { margin-top: 6px; max-width: 560px; background: #fff; border: 1px solid #d0d7de; border-radius: 8px; padding: 10px 12px; box-shadow: 0 4px 14px rgba(0,0,0,.12); }
h2 { font-size: 13px; margin: 0 0 6px; }
fieldset { border: 0; border-top: 1px solid #eaeef2; margin: 0; padding: 6px 0; }
legend { font-weight: 600; padding: 0; margin-bottom: 3px; }
.info { display: inline-block; margin-left: 4px; width: 14px; height: 14px; line-height: 14px; text-align: center; border-radius: 50%; background: #ddf4ff; color: #0969da; font-size: 10px; cursor: help; }
.def { color: #57606a; margin: 0 0 4px; font-size: 11px; }
.opts { display: flex; flex-wrap: wrap; gap: 4px 12px; }
label { cursor: pointer; white-space: nowrap; }
q { font-style: italic; color: #424a53; }
.derived { display: block; margin: 4px 0; min-height: 1.4em; }
.warn { color: #bc4c00; font-weight: 600; }
.actions { display: flex; gap: 8px; margin-top: 6px; align-items: center; }
.msg { color: #cf222e; }
.pending { color: #57606a; font-style: italic; }
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); }
`;

  function color(t) {
    const hue = Math.round(120 * (1 - Math.max(0, Math.min(1, t))));
    return `hsl(${hue} 70% 45%)`;
  }

  function h(tag, attrs = {}, ...children) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs)) {
      if (v == null || v === false) continue;
      if (k === "text") el.textContent = v;
      else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
      else el.setAttribute(k, v === true ? "" : v);
    }
    for (const c of children.flat()) if (c != null) el.append(c);
    return el;
  }

  function scoreSummary(detectors) {
    const rows = Object.entries(detectors || {}).filter(([, d]) => typeof d.toxicity === "number");
    if (!rows.length) return null;
    const max = Math.max(...rows.map(([, d]) => d.toxicity));
    const title = rows.map(([k, d]) => `${d.name || k} ${d.version || ""}: ${d.toxicity.toFixed(2)}`).join("\n");
    return { max, title };
  }

  // ---------------------------------------------------------------- rating panel
  const ANSWER_LABELS = [["more", "more toxic"], ["same", "about as toxic"], ["less", "less toxic"]];
  let uid = 0;

  function radioGroup(name, options, describedBy) {
    return h("div", { class: "opts", role: "radiogroup", "aria-describedby": describedBy },
      options.map(([value, label]) => h("label", {}, h("input", { type: "radio", name, value }), " " + label)));
  }

  function buildPanel(ctx, record, onSubmit, onCancel) {
    const study = ctx.study;
    const id = `m${++uid}`;
    const form = h("form", { "aria-label": "Rate this comment", novalidate: true });
    // Answers count only when the participant picked them (mouse, keyboard, label): a script's
    // click() on a radio or the Save button is cancelled, and a `.checked` set by a script (no
    // event) leaves the group unanswered, because its value no longer matches what was picked.
    const picked = {};
    const answer = (name) => (picked[name] && form.elements[name].value === picked[name] ? picked[name] : "");
    form.addEventListener("click", (ev) => { if (!ev.isTrusted) ev.preventDefault(); }, true);
    form.addEventListener("change", (ev) => { if (ev.isTrusted && ev.target.type === "radio") picked[ev.target.name] = ev.target.value; }, true);
    form.append(h("h2", { text: "Rate this comment" }));
    for (const attr of study.attributes) {
      if (attr.name === "toxicity") continue;
      const defId = `${id}-${attr.name}-def`;
      form.append(h("fieldset", {},
        h("legend", {}, h("span", { title: attr.definition, text: attr.label }),
          h("span", { class: "info", tabindex: "0", title: attr.definition, "aria-label": `Definition of ${attr.label}` , text: "i" })),
        h("p", { class: "visually-hidden", id: defId, text: attr.definition }),
        radioGroup(attr.name, attr.levels.map((l) => [l, l]), defId)));
    }
    const tox = study.attributes.find((a) => a.name === "toxicity");
    const toxDef = tox ? tox.definition : "";
    const derived = h("output", { class: "derived", "aria-live": "polite" });
    if (study.toxicity_mode === "direct") {
      form.append(h("fieldset", {},
        h("legend", {}, h("span", { title: toxDef, text: tox ? tox.label : "Toxicity" }), h("span", { class: "info", tabindex: "0", title: toxDef, text: "i" })),
        h("p", { class: "visually-hidden", id: `${id}-tox-def`, text: toxDef }),
        radioGroup("toxicity", (tox ? tox.levels : ["not toxic", "hard to say", "toxic"]).map((l) => [l, l]), `${id}-tox-def`)));
    } else {
      const hard = study.anchors.find((a) => a.role === "hard_to_say");
      const extreme = study.anchors.find((a) => a.role === "extreme");
      for (const [name, anchor] of [["vs_hard", hard], ["vs_extreme", extreme]]) {
        form.append(h("fieldset", {},
          h("legend", {}, h("span", { title: toxDef, text: "Toxicity: compared with " }), h("q", { text: anchor.text }), ", this comment is"),
          radioGroup(name, ANSWER_LABELS, `${id}-tox-def`)));
      }
      form.append(h("p", { class: "visually-hidden", id: `${id}-tox-def`, text: toxDef }), derived);
      form.addEventListener("change", () => {
        const a = answer("vs_hard"), b = answer("vs_extreme");
        if (!a || !b) { derived.textContent = ""; return; }
        const d = ns.deriveToxicity(a, b, extreme.rating);
        derived.className = d.inconsistent ? "derived warn" : "derived";
        derived.textContent = d.inconsistent
          ? "These two answers contradict each other (Table 1). Please check them; if you keep them the rating is flagged."
          : `Derived toxicity: ${d.rating}${d.candidates.length > 1 ? ` (between ${d.candidates.join(" and ")})` : ""}`;
      });
    }
    const msg = h("span", { class: "msg", role: "alert" });
    // Only the participant's own click on Save (mouse, Enter or Space, or Enter in a field, which
    // the browser turns into a trusted click on Save) submits; requestSubmit() from a script does not.
    let armed = false;
    let sending = false;
    let taken = false; // the worker took the answer: no second Save
    const save = h("button", { type: "submit", class: "primary", text: "Save rating",
      onclick: (ev) => { armed = ev.isTrusted; setTimeout(() => { armed = false; }, 0); } });
    form.append(h("div", { class: "actions" },
      save,
      h("button", { type: "button", text: "Cancel", onclick: onCancel }), msg));
    form.addEventListener("keydown", (ev) => { if (ev.key === "Escape") { ev.stopPropagation(); onCancel(); } });
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      if (!armed) return;
      armed = false;
      const values = {};
      const missing = [];
      for (const attr of study.attributes) {
        if (attr.name === "toxicity" && study.toxicity_mode !== "direct") continue;
        const v = answer(attr.name);
        if (v) values[attr.name] = v; else missing.push(attr.label);
      }
      let anchors = null;
      if (study.toxicity_mode !== "direct") {
        anchors = { vs_hard: answer("vs_hard"), vs_extreme: answer("vs_extreme") };
        if (!anchors.vs_hard || !anchors.vs_extreme) missing.push("both toxicity comparisons");
      }
      if (missing.length) { msg.textContent = `Please answer: ${missing.join(", ")}`; return; }
      // one answer at a time: a second Save while the first is being handed over would be a second rating.
      // `onSubmit` may answer with why the answer was not taken, said here, in the panel kept open;
      // or with {said, taken: true}: the answer was taken though not marked, and Save stays disabled
      // (a second Save would queue a second rating)
      if (sending || taken) return;
      sending = true;
      save.disabled = true;
      msg.textContent = "";
      Promise.resolve().then(() => onSubmit({ values, anchors }))
        .then((said) => {
          if (said && said.taken) { taken = true; said = said.said; }
          if (said) msg.textContent = said;
        }, (err) => { msg.textContent = `Not saved: ${(err && err.message) || err}`; })
        .finally(() => { sending = false; save.disabled = taken; });
    });
    return form;
  }

  // ---------------------------------------------------------------- marker
  const OFF_TITLES = {
    paused: "Pause everything is on: nothing is collected or sent, and no rating is taken",
    siteOff: "This site is switched off in the options: nothing is collected on it, and no rating is taken",
    frameOff: "The page these comments are on is not on a site switched on: nothing is collected here, and no rating is taken",
  };
  const OFF_LABELS = { paused: "paused", siteOff: "site switched off", frameOff: "site not switched on" };

  function render(host, ctx) {
    const { info, record, display } = host._modlens;
    const sr = roots.get(host);
    const rated = !!info.rated;
    const saved = rated && info.rated.saved !== false;
    // "Pause everything" or the site switched off: no rating is started; an open panel closes (its
    // Save would be refused)
    const off = ctx.notTaking || "";
    if (off) host._modlens.open = false;
    const sig = JSON.stringify([display, rated, info.rated && info.rated.derived, saved, info.refused || "", !!host._modlens.open, info.sampled, !!info.detectors, off, !!host._modlens.taken]);
    if (host._modlens.sig === sig) return;
    host._modlens.sig = sig;
    sr.replaceChildren(h("style", { text: CSS }));
    const bar = h("div", { class: "bar", part: "bar" }, h("span", { class: "brand", text: "modlens" }));
    // Blind mode: no score in the DOM at all before the rating exists.
    const showScores = display === "scores" || rated;
    const summary = showScores ? scoreSummary(info.detectors) : null;
    if (summary) {
      bar.append(h("span", { class: "band", style: `background:${color(summary.max)}`, title: summary.title, "aria-label": `detector scores: ${summary.title}` }),
        h("span", { class: "score", title: summary.title, text: summary.max.toFixed(2) }));
    }
    if (rated) {
      const d = info.rated.derived;
      bar.append(h("span", { class: "done", text: d ? `rated · ${d}` : "rated" }));
      // "rated" is the participant's answer; whether the study log holds it is the daemon's word
      if (!saved) bar.append(h("span", { class: "pending", title: "in the extension's outbox: the daemon has not confirmed writing it yet", text: "not saved yet" }));
    } else if (host._modlens.taken) {
      // the worker took a rating given here that the page could not mark (it changed meanwhile)
      bar.append(h("span", { class: "pending", title: "the extension took a rating of this comment; the page changed before it could be marked", text: "rating taken" }));
    } else if (ctx.study) {
      if (info.refused) bar.append(h("span", { class: "msg", title: info.refused, text: info.refusedLabel || "rating not saved" }));
      if (off) bar.append(h("span", { class: "pending", title: OFF_TITLES[off], text: OFF_LABELS[off] }));
      bar.append(h("button", { type: "button", class: "rate", disabled: !!off, title: off ? ns.NOT_TAKING[off] : null,
        "aria-expanded": host._modlens.open ? "true" : "false", text: "Rate",
        onclick: (ev) => { if (!ev.isTrusted || ctx.notTaking) return; host._modlens.open = !host._modlens.open; host._modlens.openedAt = performance.now(); render(host, ctx); } }));
    }
    sr.append(bar);
    if (host._modlens.open && !rated && !host._modlens.taken && ctx.study) {
      const form = buildPanel(ctx, record, async (answer) => {
        const spent = performance.now() - host._modlens.openedAt;
        const res = (await ctx.onRate(record, { ...answer, time_spent_ms: Math.round(spent) })) || {};
        // The marker says itself what became of the answer, once the worker answered: nothing else
        // renders it on a page that observes no longer (consent withdrawn). Taken (in the outbox):
        // rated, the panel closed. Not taken: the panel stays open with the answers, and says the
        // worker's reason. (main.js marks only a comment of the page it holds: one taken for a
        // comment an in-page navigation left meanwhile is in the outbox, and left unmarked here)
        if (res.error || !res.queued) return ns.ratingNotTakenText(res);
        if (!res.marked) {
          // taken (in the outbox): this marker offers no second rating of it
          host._modlens.taken = true;
          return { taken: true, said: "Not marked as rated: the extension took this rating, but the page changed meanwhile" };
        }
        host._modlens.open = false;
        render(host, ctx);
      }, () => { host._modlens.open = false; render(host, ctx); sr.querySelector("button.rate")?.focus(); });
      sr.append(form);
      const first = form.querySelector("input");
      if (first) setTimeout(() => first.focus(), 0);
    }
  }

  /**
   * Make sure `el` (carrying comment `key`) shows the marker for `info` ({sampled, detectors,
   * rated}); removes a stale marker when a reused element now holds another comment.
   */
  ns.markComment = function markComment(el, key, record, info, ctx, anchor) {
    let host = hosts.get(el);
    if (host && (!host.isConnected || host._modlens.key !== key)) { host.remove(); host = null; hosts.delete(el); }
    if (!info || !info.sampled) return null;
    if (!host) {
      host = document.createElement("modlens-marker");
      host.setAttribute("data-modlens-key", key);
      roots.set(host, host.attachShadow({ mode: "closed" }));
      host._modlens = { key, open: false };
      const at = anchor && anchor.isConnected && el.contains(anchor) ? anchor : null;
      if (at) at.after(host); else el.append(host);
      hosts.set(el, host);
    }
    host._modlens.info = info;
    host._modlens.record = record;
    host._modlens.display = ctx.display;
    render(host, ctx);
    return host;
  };

  ns.scoreColor = color;
  // The calibration page (calibration.js) mounts this same panel: one rating panel, two places.
  ns.buildRatingPanel = buildPanel;
  ns.RATING_PANEL_CSS = CSS;
  if (typeof module !== "undefined" && module.exports) module.exports = ns;
})(globalThis);
