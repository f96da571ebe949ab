// Images attached to comments (docs/EXTENSION.md, "Comment media"): the pure parts, shared by the
// content scripts (which images of a comment count), the worker (type by magic bytes, base64,
// packing into messages) and the node tests. Nothing here touches `chrome` or the network.
(function (root) {
  const ns = (root.modlens = root.modlens || {});

  // Smaller than this (rendered, either side) is an avatar, an emoji or an icon, not an attachment.
  ns.MEDIA_MIN_PX = 64;
  // The image hosts the worker fetches attachments from (`ns.MEDIA_HOSTS`, host permissions, so no
  // CORS header is needed) are the sites table's `imageHosts` (lib/sites.js); they are not sites the
  // content scripts run on (lib/site_access.js).

  // Leading bytes -> MIME type, as the daemon checks them (modlens.media.sniff_mime); images only.
  const MAGIC = [
    [[0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 0, "image/png"],
    [[0xff, 0xd8, 0xff], 0, "image/jpeg"],
    [[0x47, 0x49, 0x46, 0x38, 0x37, 0x61], 0, "image/gif"],
    [[0x47, 0x49, 0x46, 0x38, 0x39, 0x61], 0, "image/gif"],
    [[0x57, 0x45, 0x42, 0x50], 8, "image/webp"],
  ];

  /** The image type of these bytes (Uint8Array), or null: a page's or a header's claim is not trusted. */
  ns.sniffImageMime = function sniffImageMime(bytes) {
    for (const [magic, offset, mime] of MAGIC) {
      if (bytes.length >= offset + magic.length && magic.every((b, i) => bytes[offset + i] === b)) return mime;
    }
    return null;
  };

  ns.bytesToBase64 = function bytesToBase64(bytes) {
    let s = "";
    for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
    return root.btoa(s);
  };

  /** Whether an <img> is shown big enough to be an attachment (avatars, emoji and icons are not). */
  ns.isAttachmentSize = function isAttachmentSize(img, min = ns.MEDIA_MIN_PX) {
    const r = img.getBoundingClientRect ? img.getBoundingClientRect() : { width: 0, height: 0 };
    const w = r.width || img.naturalWidth || 0;
    const h = r.height || img.naturalHeight || 0;
    return w >= min && h >= min;
  };

  /** The attached images' URLs of one comment element: `selector` matched in the comment's own
   * subtree (`inOwn(node)` says whether a node belongs to this comment, not a nested reply), big
   * enough, http(s) or data: URLs, each once, in document order. */
  ns.attachedImageUrls = function attachedImageUrls(el, selector, inOwn, min) {
    if (!selector) return [];
    const urls = [];
    for (const img of el.querySelectorAll(selector)) {
      if (img.tagName !== "IMG" || (inOwn && !inOwn(img)) || !ns.isAttachmentSize(img, min)) continue;
      const url = img.currentSrc || img.src || "";
      if (/^(https?:|data:image\/)/i.test(url) && !urls.includes(url)) urls.push(url);
    }
    return urls;
  };

  /** Fetched images [{..., n_bytes}] into message-sized groups: each group's bytes add up to at most
   * `maxBytes` (the daemon lets one frame carry that much base64), at most `maxItems` per group. */
  ns.packMedia = function packMedia(items, maxBytes, maxItems = 16) {
    const groups = [];
    let cur = [];
    let size = 0;
    for (const it of items) {
      if (cur.length && (size + it.n_bytes > maxBytes || cur.length >= maxItems)) { groups.push(cur); cur = []; size = 0; }
      cur.push(it);
      size += it.n_bytes;
    }
    if (cur.length) groups.push(cur);
    return groups;
  };

  if (typeof module !== "undefined" && module.exports) module.exports = ns;
})(globalThis);
