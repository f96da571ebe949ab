// The study's task list as a page of its own: what `modlens browse` opens once the participant
// has agreed to the study, and what the options page links to. Each link opens the page in a new
// tab, so the list (and its progress, updated on every broadcast) stays at hand.
const $ = (id) => document.getElementById(id);
const ns = globalThis.modlens;

function show(st) {
  const study = st.study;
  $("study-title").textContent = study ? `Study “${study.title}” (${study.study_id})` : "Connect to the daemon to see the study.";
  $("consent-needed").hidden = !study || st.consented;
  const cal = st.calibration || { total: 0, done: 0 };
  $("calibration").hidden = !cal.total || cal.done >= cal.total;
  $("cal-progress").textContent = `First, the study's calibration comments: ${cal.done}/${cal.total} done.`;
  const set = st.itemset; // the study's item set: this participant's assignment (itemset.html)
  $("itemset").hidden = !set || !set.total;
  $("itemset-progress").textContent = set ? `The study's comments for you to rate: ${set.done}/${set.total} done.` : "";
  const tasks = st.tasks || { items: [] };
  $("tasks-overall").textContent = ns.taskSummary(tasks);
  $("browsing").textContent = !tasks.items.length ? "" : tasks.freeBrowsing
    ? "You may also browse other pages; comments there are recorded too."
    : "This study records comments on these pages only.";
  $("no-tasks").hidden = !study || tasks.items.length > 0;
  ns.renderTaskList($("task-list"), tasks, null, (url) => chrome.tabs.create({ url }));
}

async function refresh() {
  const st = await chrome.runtime.sendMessage(ns.messages.getState());
  if (st && !st.error) show(st);
}

chrome.runtime.onMessage.addListener((msg) => { if (ns.isStateBroadcast(msg)) refresh(); });
refresh();
