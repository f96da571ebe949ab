// The study's task pages as a list (popup and tasks page): a link per page, its progress
// (rated/target), the page the view is about marked "here", finished pages marked "done".
(function (root) {
  const ns = (root.modlens = root.modlens || {});

  /** "2/5 pages done · 7/20 rated", or "7 rated" when no page has a target. Done is reaching a
   *  page's target: a page without one is never done, so N counts the pages with a target, said so
   *  when some have none ("1/2 pages with a target done"). */
  ns.taskSummary = function taskSummary(tasks) {
    const items = (tasks && tasks.items) || [];
    if (!items.length) return "";
    if (!tasks.target) return `${tasks.rated} rated`;
    const withTarget = items.filter((t) => t.target).length;
    const pages = withTarget === items.length ? "pages" : withTarget === 1 ? "page with a target" : "pages with a target";
    return `${tasks.done}/${withTarget} ${pages} done · ${tasks.toward}/${tasks.target} rated`;
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
