// A rating round on an extension page: one comment at a time from a list in the worker's state
// (the calibration round's gold comments, the item set's assignment), rated with the SAME panel as
// comments on web pages (content/ui.js). Each answer is an ordinary `rate` request to the worker
// (outbox, consent check, exactly-once delivery; the daemon logged these comments at start). Scores
// are never shown, and gold is not marked. Cancel moves on; skipped items come back after the others.
//
// A page calls `ns.runRatingRound(select)` once; `select(state)` returns what to rate now:
//   { progress, items: [{platform, key, text, done}], total } or { progress, empty: "why not" }.
(function (root) {
  const ns = (root.modlens = root.modlens || {});

  ns.runRatingRound = function (select) {
    const $ = (id) => document.getElementById(id);
    const id = (item) => ns.commentKey(item.platform, item.key);
    let current = null; // the item whose panel is open
    let shownAt = 0;
    const skipped = new Set();

    function block(text, withOptionsLink) {
      $("blocked-text").textContent = text;
      $("open-options").hidden = !withOptionsLink;
      $("blocked").hidden = false;
      $("item").hidden = true;
      current = null;
    }

    function show(item, index, total, study) {
      current = item;
      shownAt = performance.now();
      $("item-title").textContent = `Comment ${index + 1} of ${total}`;
      $("item-text").textContent = item.text;
      const host = document.createElement("div");
      const shadow = host.attachShadow({ mode: "open" });
      const style = document.createElement("style");
      style.textContent = ns.RATING_PANEL_CSS;
      const form = ns.buildRatingPanel({ study }, { platform: item.platform, key: item.key },
        (answer) => submit(item, answer), () => { skipped.add(id(item)); current = null; refresh(); });
      shadow.append(style, form);
      $("panel").replaceChildren(host);
      $("item").hidden = false;
      const first = form.querySelector("input");
      if (first) first.focus();
    }

    async function submit(item, answer) {
      const res = await chrome.runtime.sendMessage(ns.messages.rate({ platform: item.platform, key: item.key },
        { ...answer, time_spent_ms: Math.round(performance.now() - shownAt) }, item.ref)).catch((err) => ({ error: String(err) }));
      // said by the panel (buildRatingPanel writes what this returns into its line), kept open
      if (!res || !res.queued) return ns.ratingNotTakenText(res);
      skipped.delete(id(item));
      current = null;
      refresh();
    }

    async function refresh() {
      const st = await chrome.runtime.sendMessage(ns.messages.getState()).catch(() => null);
      if (!st || st.error) return block("The extension did not answer; reload this page.");
      const round = select(st);
      $("progress").textContent = round.progress || "";
      if (!st.study) return block("Not connected to the modlens daemon yet (run `modlens serve`, then pair in the options).", true);
      if (!st.consented) return block("Please read and accept the study's consent text first.", true);
      if (round.empty) return block(round.empty);
      $("blocked").hidden = true;
      const todo = round.items.filter((i) => !i.done);
      if (!todo.length) {
        $("item").hidden = true;
        const wasOpen = current !== null || $("finished").hidden;
        current = null;
        $("finished").hidden = false;
        if (wasOpen) $("finished").focus();
        return;
      }
      $("finished").hidden = true;
      if (current && todo.some((i) => id(i) === id(current))) return; // keep the panel being filled in
      if (todo.every((i) => skipped.has(id(i)))) skipped.clear();
      const next = todo.find((i) => !skipped.has(id(i))) || todo[0];
      show(next, round.items.findIndex((i) => id(i) === id(next)), round.total, st.study);
    }

    $("open-options").addEventListener("click", (ev) => { ev.preventDefault(); chrome.runtime.openOptionsPage(); });
    chrome.runtime.onMessage.addListener((msg) => { if (ns.isStateBroadcast(msg)) refresh(); });
    refresh();
  };
})(globalThis);
