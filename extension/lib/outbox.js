// Persistent outbox: every comments / rating message is written to extension storage before
// it is sent, and removed only when the daemon acknowledged it (comments_ok / rating_ok), which
// it sends only once what the message carried is committed to the study log (docs/PROTOCOL.md).
// Anything created while the daemon is down, or pending when the browser stopped the worker,
// is re-sent after the next handshake with the SAME id, so the daemon's dedupe makes delivery
// exactly-once. One storage key per entry: no read-modify-write of a big list.
(function (root) {
  const ns = (root.modlens = root.modlens || {});
  const PREFIX = "ob:";
  const DEAD = "dead:";

  // A message in the participant's units: a rating is one, a page or an image message its items,
  // each named as the study log keeps it once (a comment by platform and key, an image by its comment
  // and bytes, in the study it was collected for): a page observed again sends its comments (and
  // images) again, and the daemon stores them once, so two messages carrying one comment count it once.
  const itemsOf = ({ id, message: m, study }) => {
    if (m.type === "rating") return [JSON.stringify(["rating", id])];
    if (m.type === "comments") return (m.items || []).map((it) => JSON.stringify(["comment", study, m.page && m.page.platform, it.key]));
    if (m.type === "comment_media") return (m.items || []).map((it) => JSON.stringify(["image", study, m.platform, m.comment_key, it.sha256]));
    return (m.items || []).map((_, i) => JSON.stringify([m.type, id, i]));
  };

  class Outbox {
    /** @param area promise-based storage: get(keys|null), set(obj), remove(keys) */
    constructor(area) {
      this.area = area;
      this.entries = new Map(); // id -> {id, seq, message, route, study, attempts, createdAt}
      this.seq = 0;
      // comments, ratings and images kept aside as dead letters, per error code (the popup says how many,
      // and how many consent_changed: collected under an earlier consent text); deadItems: how many in all.
      // Counted from deadKeys, the items (itemsOf) kept aside under each code
      this.deadByCode = {};
      this.deadKeys = {};
      // id -> the burial under way (bury): a refusal of a message whose dead letter is still being
      // written (a write that hangs past the worker's handler timeout, the message resent and refused
      // again) waits for that burial instead of burying and counting the same message twice
      this.burying = new Map();
      this.loaded = null;
    }

    /** `stored`: everything stored, when the caller read it already (the worker's start reads it
     *  once for the outbox and the counters); else read here. Loads once. */
    load(stored) {
      if (!this.loaded) {
        this.loaded = (stored ? Promise.resolve(stored) : this.area.get(null)).then(async (all) => {
          const buried = []; // entries whose dead letter is stored too: a worker stopped between bury's two writes
          for (const [k, v] of Object.entries(all || {})) {
            if (k.startsWith(PREFIX) && v && v.id && all[DEAD + v.id] && all[DEAD + v.id].message) {
              buried.push(k); // dead: removed, as bury's second write would have
            } else if (k.startsWith(PREFIX) && v && v.id) {
              this.entries.set(v.id, v);
              this.seq = Math.max(this.seq, v.seq || 0);
            } else if (k.startsWith(DEAD) && v && v.message) {
              this.countDead(v);
            }
          }
          // not waited for (a storage write that hangs must not keep the outbox from loading); not
          // removed (a failing storage): skipped again at the next start, never sent
          if (buried.length) {
            this.area.remove(buried).catch((err) => console.error("modlens: outbox entries already buried kept", String(err)));
          }
        });
      }
      return this.loaded;
    }

    /** opts.persist false: kept in memory only (comment images: megabytes of base64 do not belong in storage).
     *  opts.study: the study whose consent it was collected under (delivered to that study only);
     *  opts.consent: the SHA-256 of the consent text it was collected under (delivered under that consent only). */
    async add(message, route, opts = {}) {
      await this.load();
      if (!message || !message.id || !message.type) throw new Error("outbox entries need a type and an id");
      const entry = { id: message.id, seq: ++this.seq, message, route: route || null, study: opts.study || null,
        consent: opts.consent || null, attempts: 0, createdAt: Date.now() };
      if (opts.persist !== false) await this.area.set({ [PREFIX + entry.id]: entry });
      this.entries.set(entry.id, entry);
      return entry;
    }

    /** Number the entries added from now on after `seq` (records kept elsewhere are ordered by
     *  the seq of the entries they came from: worker/counters.js ratings). */
    numberAfter(seq) {
      this.seq = Math.max(this.seq, seq);
    }

    has(id) {
      return this.entries.has(id);
    }

    get(id) {
      return this.entries.get(id);
    }

    async ack(id) {
      await this.load();
      const entry = this.entries.get(id);
      if (!entry) return null;
      this.entries.delete(id);
      await this.area.remove(PREFIX + id);
      return entry;
    }

    /** Permanent failure (the daemon refused the content): keep it aside, visible, not retried.
     *  The dead letter is written before the entry leaves the outbox: a write that fails throws and
     *  leaves it queued (refused again on its resend), never neither queued nor kept aside.
     *  Returns the entry buried, or null when there was none, or when this call waited for a burial
     *  of it already under way (that one buried it, or failed: then this call fails too). */
    async bury(id, error) {
      await this.load();
      const running = this.burying.get(id);
      if (running) return running.then(() => null);
      const entry = this.entries.get(id);
      if (!entry) return null;
      const burial = this.buryEntry(entry, error);
      this.burying.set(id, burial);
      try {
        return await burial;
      } finally {
        this.burying.delete(id);
      }
    }

    async buryEntry(entry, error) {
      // a dead image message keeps what it was, not its bytes
      const message = entry.message.type === "comment_media"
        ? { ...entry.message, items: entry.message.items.map(({ data_b64, ...rest }) => rest) } : entry.message;
      const dead = { ...entry, message, error, buriedAt: Date.now() };
      await this.area.set({ [DEAD + entry.id]: dead });
      this.countDead(dead);
      await this.ack(entry.id);
      return entry;
    }

    countDead(dead) {
      const code = (dead.error && dead.error.code) || "unknown";
      const keys = (this.deadKeys[code] = this.deadKeys[code] || new Set());
      for (const k of itemsOf(dead)) keys.add(k);
      this.deadByCode[code] = keys.size;
    }

    get deadItems() {
      return new Set(Object.values(this.deadKeys).flatMap((keys) => [...keys])).size;
    }

    async dead() {
      const all = await this.area.get(null);
      return Object.entries(all || {}).filter(([k]) => k.startsWith(DEAD)).map(([, v]) => v);
    }

    /** Whether a comments message still waiting for its comments_ok carries this comment: a rating
     *  or image of it that the daemon does not know yet is waiting for that page, not wrong. */
    holdsComment(platform, key) {
      for (const e of this.entries.values()) {
        const m = e.message;
        if (m.type === "comments" && m.page && m.page.platform === platform && (m.items || []).some((it) => it.key === key)) return true;
      }
      return false;
    }

    pending() {
      return [...this.entries.values()].sort((a, b) => a.seq - b.seq);
    }

    /** What the daemon has not acknowledged yet, in the participant's units: each comment of a
     *  page, each rating, each image (a page of 50 comments is 50 waiting, not one message). */
    waitingItems() {
      return new Set([...this.entries.values()].flatMap(itemsOf)).size;
    }

    get size() {
      return this.entries.size;
    }
  }

  // Errors after which re-sending the same message cannot succeed.
  // the protocol's REFUSED_FOR_GOOD (tests/test_extension_protocol.py checks the copy), plus unknown_comment:
  // a rating whose comment never arrives is given up after a few tries (delivery.js)
  ns.PERMANENT_ERRORS = new Set(["bad_json", "unknown_type", "invalid_fields", "too_large", "media_not_collected",
    "other_assignment", "study_mismatch", "unknown_comment"]);
  ns.Outbox = Outbox;

  if (typeof module !== "undefined" && module.exports) module.exports = ns;
})(globalThis);
