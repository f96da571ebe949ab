// The study's item set: the assignment the daemon gave this participant at hello
// (`study.itemset` of hello_ok, study/assignment.py), in the assignment's order, each comment under
// its own platform and key; rated blind with the panel of web pages, see lib/rating_round.js.
const ns = globalThis.modlens;

ns.runRatingRound((st) => {
  const set = st.itemset;
  if (!set || !set.total) {
    return { progress: "", empty: "This study has no item set to rate: rate the comments modlens asks about on the web." };
  }
  document.getElementById("assignment").textContent = `Your assignment: ${set.assignment} (task ${set.task})`;
  return { progress: `item set: ${set.done}/${set.total} done`, items: set.items, total: set.total };
});
