// Which comments the participant is asked to rate (study setting `sampling`). Every mode is a
// pure function of (study salt, platform, comment key[, score]): two participants who see the
// same comment get the same decision whatever order comments arrive in, so ratings overlap.
//   all     every comment
//   random  hash(salt, platform, key) < `rate`
//   deciles hash(salt, platform, key) < the inclusion rate of the comment's score decile (one
//           detector's toxicity): `decile_rates[d]`, else `per_decile` / 100 for every decile
// The salt is `sampling.salt` (the daemon derives it from study id, author_salt and seed: the
// same for every participant of a study); older daemons send none and `seed` stands in.
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

  ns.samplingSalt = (sampling) => String((sampling && (sampling.salt ?? sampling.seed)) ?? 0);

  // Inclusion rate of decile d: the study's per-decile rates (to balance a skewed score
  // distribution, rate = wanted / expected comments in that decile), else per_decile %.
  ns.decileRate = function decileRate(sampling, d) {
    const rates = sampling && sampling.decile_rates;
    if (Array.isArray(rates) && typeof rates[d] === "number") return rates[d];
    return Math.min(1, ((sampling && sampling.per_decile) || 10) / 100);
  };

  /** Decide for one scored comment ({platform, key, detectors}). Returns {sampled, reason}. */
  ns.decideSample = function decideSample(sampling, item, detectorKeys) {
    const mode = (sampling && sampling.mode) || "all";
    if (mode === "all") return { sampled: true, reason: "all" };
    const u = ns.unitHash(ns.samplingSalt(sampling), item.platform, item.key);
    if (mode === "random") return { sampled: u < (sampling.rate ?? 1), reason: "random" };
    if (mode === "deciles") {
      const det = ns.samplingDetector(sampling, detectorKeys);
      const score = det && item.detectors && item.detectors[det] ? item.detectors[det].toxicity : null;
      const d = ns.decileOf(score);
      if (d === null) return { sampled: false, reason: "no score" };
      return { sampled: u < ns.decileRate(sampling, d), reason: `decile ${d}` };
    }
    throw new Error(`unknown sampling mode ${JSON.stringify(mode)}`);
  };

  if (typeof module !== "undefined" && module.exports) module.exports = ns;
})(globalThis);
