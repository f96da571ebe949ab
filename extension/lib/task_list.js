// The study's task pages as a list (popup and tasks page): a link per page, its progress
// (rated/target), the page the view is about marked "here", finished pages marked "done".
(function (root) {
  const ns = (root.modlens = root.modlens || {});

  /** "2/5 pages done · 7/20 rated", or "7 rated" when no page has a target. */
  ns.taskSummary = function taskSummary(tasks) {
    const items = (tasks && tasks.items) || [];
    if (!items.length) return "";
    return tasks.target ? `${tasks.done}/${items.length} pages done · ${tasks.toward}/${tasks.target} rated` : `${tasks.rated} rated`;
  };

  /** Fills `list` (an <ol>) with one <li> per task; `open(url)` follows a link. */
  ns.renderTaskList = function renderTaskList(list, tasks, hereId, open) {
    const items = (tasks && tasks.items) || [];
    list.replaceChildren(...items.map((t) => {
      const li = document.createElement("li");
      li.dataset.url = t.url;
      li.className = (t.done ? "done " : "") + (t.id === hereId ? "here" : "");
      const a = document.createElement("a");
      a.href = t.url;
      a.textContent = t.title || t.url;
      a.addEventListener("click", (ev) => { ev.preventDefault(); open(t.url); });
      const n = document.createElement("span");
      n.className = "progress";
      n.textContent = t.target ? `${t.rated}/${t.target}` : `${t.rated} rated`;
      li.append(a, " ", n);
      return li;
    }));
  };

  if (typeof module !== "undefined" && module.exports) module.exports = ns;
})(globalThis);
