// Options: daemon address and token, consent to the study's text, per-site switches, pause,
// display mode, the study's attributes and sampling (read-only: the study decides), custom
// selectors for the generic adapter.
const $ = (id) => document.getElementById(id);
const ns = globalThis.modlens;
let current = null;

const call = (msg) => chrome.runtime.sendMessage(msg);

function parseSelectors(text) {
  const out = [];
  const errors = [];
  text.split("\n").map((l) => l.trim()).filter(Boolean).forEach((line, i) => {
    const [host, comment, textSel, author, key] = line.split("|").map((s) => (s || "").trim());
    if (!host || !comment) { errors.push(`line ${i + 1}: needs at least "host | comment selector"`); return; }
    for (const sel of [comment, textSel, author].filter(Boolean)) {
      try { document.createDocumentFragment().querySelector(sel); } catch (_) { errors.push(`line ${i + 1}: invalid selector ${sel}`); return; }
    }
    out.push({ host, comment, text: textSel || "", author: author || "", key: key || "" });
  });
  return { out, errors };
}

function render(st) {
  current = st;
  const s = st.settings;
  if (document.activeElement !== $("daemon-url")) $("daemon-url").value = s.daemonUrl;
  // the worker never hands the token back (not even to its own pages): say whether one is stored
  $("token").placeholder = s.tokenSet ? "stored: paste a new one to replace it" : "paste the token from modlens pair";
  $("rater-id").textContent = s.raterId;
  $("extension-origin").textContent = st.extensionOrigin || "";
  $("conn-state").textContent = st.conn === "ready" ? "Connected." : `${st.conn}${st.lastError ? ": " + st.lastError : ""}`;
  $("paused").checked = !!s.paused;
  const study = st.study;
  $("study-title").textContent = study ? `Study “${study.title}” (${study.study_id})` : "Connect to the daemon to see the study.";
  $("consent-text").textContent = study ? study.consent_text : "";
  $("accept-consent").disabled = !study || st.consented;
  $("withdraw-consent").hidden = !st.consented;
  $("tasks-link").hidden = !st.consented || !((study && study.tasks) || []).length;
  $("consent-state").textContent = consentLine(st);
  const sites = $("sites");
  if (!sites.childElementCount) {
    for (const site of ns.SITES) {
      const box = Object.assign(document.createElement("input"), { type: "checkbox", name: "site", value: site });
      const label = document.createElement("label");
      label.append(box, ` ${ns.SITE_LABELS[site]}`);
      sites.append(label);
    }
    sites.addEventListener("change", () => {
      const map = {};
      for (const box of sites.querySelectorAll("input")) map[box.value] = box.checked;
      call(ns.messages.setSettings({ sites: map })).then(render);
    });
  }
  for (const box of sites.querySelectorAll("input")) box.checked = s.sites[box.value] !== false;
  for (const r of document.querySelectorAll("input[name=display]")) r.checked = r.value === (s.display || "study");
  $("study-display").textContent = study ? study.display : "blind";
  if (study) {
    const sm = study.sampling;
    const pct = (d) => `${Math.round(ns.decileRate(sm, d) * 100)} %`;
    const decilesText = () => (Array.isArray(sm.decile_rates) ? `per score decile ${[...Array(10).keys()].map(pct).join(" · ")}` : `${pct(0)} of each score decile`);
    $("sampling").textContent = `Toxicity asked ${study.toxicity_mode === "direct" ? "on a 3-point scale" : "by comparison with two anchor comments"}; comments asked about: ${
      sm.mode === "all" ? "all" : sm.mode === "random" ? `a random ${Math.round(sm.rate * 100)} %` : decilesText()} (the same for every participant of the study).`;
    $("attributes").replaceChildren(...study.attributes.flatMap((a) => {
      const dt = document.createElement("dt"); dt.textContent = a.label;
      const dd = document.createElement("dd"); dd.textContent = `${a.definition} (${a.levels.join(" · ")})`;
      return [dt, dd];
    }));
  }
  if (document.activeElement !== $("custom-selectors")) {
    $("custom-selectors").value = (s.customSelectors || []).map((c) => [c.host, c.comment, c.text, c.author, c.key].join(" | ").replace(/( \| )+$/, "")).join("\n");
  }
}

// What the daemon holds of this participant, said as far as this page knows it. Before any consent
// it records only the hellos; after a consent ended (withdrawn, or the study's text changed) it keeps
// what it recorded under it, which "only the rater id ..." would deny.
let refused = null; // the worker's refusal of this page's last Agree: said until an agreement counts
function consentLine(st) {
  const study = st.study;
  if (st.consented) return `You agreed on ${new Date(st.consent.at).toLocaleString()}.`;
  if (!study) return "";
  const from = "No comment or rating is recorded until you agree; until then the daemon records only your pseudonymous rater id, the extension's version and when it connected.";
  const kept = "What it recorded while you had agreed stays in the study log on this computer (delete the log to remove it), "
    + "and in any bundle already sent to the researcher (ask them to delete it).";
  if (refused) return `Not agreed: ${refused}. ${from}`;
  // the worker's stored withdrawal from this study (publicState), not this page's click: said after a reload too
  const w = st.withdrawal;
  if (w && w.study_id === study.study_id) {
    const told = w.recorded ? "the daemon has recorded it" : "the daemon is told of it when the extension next connects to it";
    return `You withdrew your consent on ${new Date(w.at).toLocaleString()}: nothing more is taken or sent from this browser, and ${told}. ${kept} ${from}`;
  }
  if (st.consent && st.consent.study_id === study.study_id) {
    return `You agreed on ${new Date(st.consent.at).toLocaleString()} to an earlier text of this study, which has changed since. ${kept} ${from}`;
  }
  return from;
}

async function refresh() {
  const st = await call(ns.messages.getState());
  if (st && !st.error) render(st);
}

$("save-connection").addEventListener("click", async () => {
  const url = ns.loopbackDaemonUrl($("daemon-url").value.trim());
  if (!url) { $("conn-state").textContent = ns.NOT_LOOPBACK; return; }
  const token = $("token").value.trim(); // empty: keep the stored one
  const st = await call(ns.messages.setSettings(token ? { daemonUrl: url, token } : { daemonUrl: url }));
  if (st.error) { $("conn-state").textContent = st.error; return; }
  $("token").value = "";
  render(st);
});
$("accept-consent").addEventListener("click", async () => {
  const res = await call(ns.messages.consent(true, current.study.study_id, current.study.consent_text));
  refused = res && res.ok ? null : (res && res.error) || "no answer from the extension";
  refresh();
});
$("withdraw-consent").addEventListener("click", async () => {
  const studyId = current.study.study_id;
  const res = await call(ns.messages.consent(false, studyId));
  if (res && res.ok) refused = null;
  refresh();
});
// Join a study from its pack file: the worker hands it to the daemon, which restarts on it.
$("join-study").addEventListener("click", async () => {
  const file = $("pack-file").files[0];
  if (!file) { $("join-state").textContent = "Choose the study's .modlens file first."; return; }
  if (file.size > ns.MAX_PACK_BYTES) { $("join-state").textContent = `${file.name} is too large to be a study pack.`; return; }
  $("join-state").textContent = `Joining with ${file.name}…`;
  let res;
  try {
    res = await call(ns.messages.joinStudy(await file.text(), file.name, $("pack-replace").checked));
  } catch (err) {
    res = { ok: false, error: String((err && err.message) || err) };
  }
  // the signer's fingerprint, to compare with the one the researcher published; remote detectors
  // stay off when joined from here (the consent text says so too)
  $("join-state").textContent = !res.ok ? `Not joined: ${res.error}`
    : `Joined study “${res.title}” (${res.study_id})${res.tasks ? ` with ${res.tasks} page(s) to visit` : ""}, `
      + `signed by ${res.signer} (compare it with the fingerprint the researcher published). `
      + (res.remote_off && res.remote_off.length ? `Its remote detectors stay off: nothing is sent to ${res.remote_off.join(", ")} `
        + "(to allow them, run `modlens join FILE --accept-remote` in a terminal). " : "")
      + (res.restarting ? "The daemon is restarting on it; its consent text appears below in a moment." : "It was already the daemon's study.");
});
$("paused").addEventListener("change", (ev) => call(ns.messages.setSettings({ paused: ev.target.checked })).then(render));
for (const r of document.querySelectorAll("input[name=display]")) {
  r.addEventListener("change", () => call(ns.messages.setSettings({ display: r.value })).then(render));
}
$("save-selectors").addEventListener("click", async () => {
  const { out, errors } = parseSelectors($("custom-selectors").value);
  if (errors.length) { $("selectors-state").textContent = errors.join("; "); return; }
  render(await call(ns.messages.setSettings({ customSelectors: out })));
  $("selectors-state").textContent = `Saved ${out.length} site(s). Reload the page to apply.`;
});
// the worker's broadcasts, settings set from another page among them (the popup's Pause)
chrome.runtime.onMessage.addListener((msg) => { if (ns.isStateBroadcast(msg)) refresh(); });
refresh();
