// The worker fetches the images attached to comments itself (the daemon never fetches from the
// web): without cookies (`credentials: "omit"`), capped at the study's `media.max_bytes` (by
// Content-Length before reading, and by counting bytes while reading), typed by magic bytes,
// hashed here, and sent as `comment_media` messages after the comment. A failed or oversized
// fetch is counted for the popup and never holds up the comment's text.
// Image messages go through the outbox in memory only: a few MB of base64 do not belong in
// chrome.storage: a stopped worker drops those not yet sent, and no counter says so (they were
// never counted as sent).
(function (ns) {
  const { config, counters, delivery } = ns;

  class MediaFetchError extends Error {
    constructor(reason, message) {
      super(message);
      this.reason = reason; // too_large | bad_type | fetch_failed
    }
  }

  async function readCapped(res, maxBytes) {
    const declared = Number(res.headers.get("content-length"));
    if (declared > maxBytes) throw new MediaFetchError("too_large", `Content-Length ${declared} > ${maxBytes}`);
    const reader = res.body.getReader();
    const chunks = [];
    let n = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      n += value.length;
      if (n > maxBytes) {
        reader.cancel().catch(() => {});
        throw new MediaFetchError("too_large", `over ${maxBytes} bytes`);
      }
      chunks.push(value);
    }
    const bytes = new Uint8Array(n);
    let at = 0;
    for (const c of chunks) { bytes.set(c, at); at += c.length; }
    return bytes;
  }

  /** {mime, sha256, data_b64, url, n_bytes} of one image, or a MediaFetchError. */
  async function fetchImage(url, maxBytes) {
    let res;
    try {
      res = await fetch(url, { credentials: "omit", redirect: "follow", cache: "force-cache" });
    } catch (err) {
      throw new MediaFetchError("fetch_failed", String((err && err.message) || err));
    }
    if (!res.ok) throw new MediaFetchError("fetch_failed", `HTTP ${res.status}`);
    const bytes = await readCapped(res, maxBytes);
    const mime = ns.sniffImageMime(bytes);
    if (!mime) throw new MediaFetchError("bad_type", "not a PNG, JPEG, GIF or WebP image");
    const digest = await crypto.subtle.digest("SHA-256", bytes);
    const sha256 = Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
    // a data: URL is the image itself, not an address: it is not sent twice
    return { mime, sha256, data_b64: ns.bytesToBase64(bytes), url: url.startsWith("data:") ? null : url, n_bytes: bytes.length };
  }

  // Each image of a comment once (counters.countImages: by its place among the comment's images),
  // however often its page is observed and its images fetched again; a write that fails counts nothing
  async function count(what, platform, key, positions) {
    if (!positions.length) return;
    try {
      await counters.countImages(what, platform, key, positions);
    } catch (err) {
      console.error("modlens: the count of images", what, "was not stored", String(err));
    }
    delivery.broadcastCounts();
  }

  /** Fetch a comment's images and queue them after its comment; never throws. */
  async function queueCommentMedia(platform, key, urls, route) {
    const media = (config.study && config.study.media) || {};
    if (!media.collect || !urls || !urls.length) return;
    const max = media.max_per_comment || 4;
    if (urls.length > max) await count("media_skipped", platform, key, urls.map((_, i) => i).slice(max));
    // an image is captured only while its comment's site captures (consent, no pause, site on): once
    // the participant paused, withdrew or switched the site off, the comment's images are dropped, not
    // queued for after (they would be collected after they said stop), both those already fetched and
    // those not fetched yet, and every one of them is counted as not taken
    const stopped = () => !config.siteActive(platform);
    const wanted = urls.slice(0, max);
    const fetched = [];
    let tried = 0;
    for (const [position, url] of wanted.entries()) {
      if (stopped()) break;
      tried += 1;
      try {
        fetched.push({ ...(await fetchImage(url, media.max_bytes)), position });
      } catch (err) {
        await count("media_failed", platform, key, [position]);
        counters.lastMediaError = `${err.reason || "fetch_failed"}: ${err.message}`;
        console.warn("modlens: comment image not sent:", url.slice(0, 120), err.reason, err.message);
      }
    }
    if (stopped()) {
      await count("media_not_taken", platform, key, [...fetched.map((f) => f.position), ...wanted.map((_, i) => i).slice(tried)]);
      return;
    }
    for (const group of ns.packMedia(fetched, media.max_bytes, max)) {
      const message = ns.protocol.commentMedia(platform, key, group);
      await delivery.queue(message, route, { persist: false }); // counted as sent when it is (delivery.flush)
    }
    delivery.flush(false);
  }

  ns.commentMedia = { fetchImage, queueCommentMedia, MediaFetchError };
})(globalThis.modlens);
