// Author names never leave the browser in clear: SHA-256 over "<salt>\n<author>", hex.
// The salt is per study (worker/config.js authorSalt): the `author_salt` of hello_ok, which the
// daemon always sends (the study's, else its own per-study salt in MODLENS_HOME); a random salt
// kept per study in this browser only if a daemon sent none.
(function (root) {
  const ns = (root.modlens = root.modlens || {});

  ns.sha256Hex = async function sha256Hex(text) {
    const data = new TextEncoder().encode(text);
    const digest = await root.crypto.subtle.digest("SHA-256", data);
    return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
  };

  ns.hashAuthor = async function hashAuthor(author, salt) {
    if (author == null || author === "") return null;
    if (!salt) throw new Error("hashAuthor needs a study salt");
    return ns.sha256Hex(`${salt}\n${author}`);
  };

  // The key of a comment whose site gives it no id (Viafoura, a site with custom selectors): a
  // hash of what the log holds of the comment anyway (its page key, the time shown, its text),
  // never of its author. The hash has no secret, so a name in it could be tested against the key
  // by whoever holds the log (guess a name, hash, compare), where the consent text promises names
  // only as the salted author hash. Without a secret the same comment gets the same key on every
  // reload, in every browser and study, so the log keeps one row per comment and bundles merge.
  // Two 32-bit hashes (lib/sampling.js unitHash), 64 bits: keys of a large log stay apart.
  ns.derivedCommentKey = function derivedCommentKey(prefix, platform, parts) {
    const input = JSON.stringify(parts.map((p) => (p == null ? "" : String(p))));
    return `${prefix}-${ns.hash64("comment-key", platform, input)}`;
  };

  /** 16 hex digits: two 32-bit hashes of `text` (lib/sampling.js unitHash, seeded `${seed}-1` and `${seed}-2`). */
  ns.hash64 = function hash64(seed, platform, text) {
    const half = (n) => Math.floor(ns.unitHash(`${seed}-${n}`, platform, text) * 0x100000000).toString(16).padStart(8, "0");
    return half(1) + half(2);
  };

  if (typeof module !== "undefined" && module.exports) module.exports = ns;
})(globalThis);
