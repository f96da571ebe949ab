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

  if (typeof module !== "undefined" && module.exports) module.exports = ns;
})(globalThis);
