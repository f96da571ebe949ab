// Which comments the participant is asked to rate (study setting `sampling`):
//   all     every comment
//   random  a deterministic share `rate`: hash(seed, platform, key) < rate, so a comment is
//           in or out for every rater and every reload alike
//   deciles up to `per_decile` comments per decile of one detector's toxicity score (the
//           paper balanced its sample this way); the counts live in extension storage.
(function (root) {
  const ns = (root.modlens = root.modlens || {});

  // FNV-1a 32-bit plus murmur3's finalizer: without the final mix, keys that differ only in
  // their last characters leave the high bits (which decide the sample) nearly unchanged.
  function fnv1a(str) {
    let h = 0x811c9dc5;
    for (let i = 0; i < str.length; i++) {
      h ^= str.charCodeAt(i);
      h = Math.imul(h, 0x01000193) >>> 0;
    }
    h ^= h >>> 16;
    h = Math.imul(h, 0x85ebca6b) >>> 0;
    h ^= h >>> 13;
    h = Math.imul(h, 0xc2b2ae35) >>> 0;
    h ^= h >>> 16;
    return h >>> 0;
  }

  ns.unitHash = function unitHash(seed, platform, key) {
    return fnv1a(`${seed}|${platform}|${key}`) / 0x100000000;
  };

  ns.decileOf = function decileOf(score) {
    if (typeof score !== "number" || Number.isNaN(score)) return null;
    return Math.min(9, Math.max(0, Math.floor(score * 10)));
  };

  // Detector key whose score defines the deciles: the study's choice, else the first.
  ns.samplingDetector = function samplingDetector(sampling, detectorKeys) {
    return (sampling && sampling.detector) || (detectorKeys && detectorKeys[0]) || null;
  };

  /**
   * Decide for one scored comment. `decileCounts` (array of 10) is updated in place when a
   * deciles-mode comment is taken. Returns {sampled, reason}.
   */
  ns.decideSample = function decideSample(sampling, item, decileCounts, detectorKeys) {
    const mode = (sampling && sampling.mode) || "all";
    if (mode === "all") return { sampled: true, reason: "all" };
    if (mode === "random") {
      const u = ns.unitHash(sampling.seed || 0, item.platform, item.key);
      return { sampled: u < (sampling.rate ?? 1), reason: "random" };
    }
    if (mode === "deciles") {
      const det = ns.samplingDetector(sampling, detectorKeys);
      const score = det && item.detectors && item.detectors[det] ? item.detectors[det].toxicity : null;
      const d = ns.decileOf(score);
      if (d === null) return { sampled: false, reason: "no score" };
      if (decileCounts[d] >= (sampling.per_decile || 10)) return { sampled: false, reason: `decile ${d} full` };
      decileCounts[d] += 1;
      return { sampled: true, reason: `decile ${d}` };
    }
    throw new Error(`unknown sampling mode ${JSON.stringify(mode)}`);
  };

  if (typeof module !== "undefined" && module.exports) module.exports = ns;
})(globalThis);
