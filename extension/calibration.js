// Calibration round: the study's gold comments (comment platform "study"; the daemon logged them
// at start), one at a time with the rating panel of web pages; see lib/rating_round.js.
const ns = globalThis.modlens;
const PLATFORM = "study";

ns.runRatingRound((st) => {
  const cal = st.calibration || { total: 0, done: 0, items: [] };
  return {
    progress: `calibration: ${cal.done}/${cal.total} done`,
    empty: cal.total ? null : "This study has no calibration round.",
    items: cal.items.map((i) => ({ ...i, platform: PLATFORM })),
    total: cal.total,
  };
});
