// Getting outbox messages to the daemon: send what is pending once the session is ready (and
// consent given), resend what stayed unacknowledged for RESEND_AFTER_MS, drop on ack, retry
// transient refusals with back-off, bury permanent ones as dead letters. Also remembers which
// tab and frame each message came from, so its scores can be routed back.
(function (ns) {
  const { config, connection, counters, tabs } = ns;
  const sentAt = new Map(); // outbox id -> time sent on the current socket
  const routes = new Map(); // outbox id -> {tabId, frameId, platform}
  // outbox ids this worker sent, on any socket, with no answer yet: the daemon may hold them (a
  // withdrawal says so of them, setAsideWithdrawn). A restarted worker knows none of the earlier one's
  const unanswered = new Set();
  // A rating names the study it was given in (protocol.rating); one an earlier version queued names
  // none in its message, but its entry keeps that study: it goes naming it too
  const onTheWire = (e) => (e.message.type === "rating" && e.study && !e.message.study_id ? { ...e.message, study_id: e.study } : e.message);

  const delivery = {
    outbox: new ns.Outbox(chrome.storage.local),

    /** Stored in the outbox (unless opts.persist is false) before it returns its entry; a write that
     *  fails throws, and nothing is queued. Kept for the running study, the one it was collected in
     *  (read before the first await: a rating queued in the same turn as its message named the study
     *  names the same one). */
    async queue(message, route, opts = {}) {
      const study = config.study ? config.study.study_id : null;
      const entry = await this.outbox.add(message, route, { ...opts, study,
        consent: config.consented() ? config.consent.sha256 : null });
      if (route) routes.set(message.id, route);
      return entry;
    },

    flush(force) {
      // paused ("Pause everything"): nothing is sent; what waits stays in the outbox until the
      // participant goes on (page_messages.js set_settings flushes then)
      if (!connection.ready() || !config.consented() || config.settings.paused) return;
      const now = Date.now();
      const study = config.study && config.study.study_id;
      // no consent check here: consented() means the consent is to the text hello_ok named, and
      // hello_ok set aside every entry collected under another text (setAsideNotConsentedTo)
      for (const entry of this.outbox.pending()) {
        if (entry.study && entry.study !== study) continue; // another study's: set aside at hello_ok
        const at = sentAt.get(entry.id);
        if (at !== undefined && !force && now - at < ns.RESEND_AFTER_MS) continue;
        if (entry.notBefore && entry.notBefore > now) continue;
        sentAt.set(entry.id, now);
        unanswered.add(entry.id);
        if (entry.route) routes.set(entry.id, entry.route);
        connection.send(onTheWire(entry));
        // images live in memory only (a stopped worker loses them): counted as sent once they were,
        // each image once however often it is sent (its page observed again sends it again); a count
        // whose write fails is made again at its answer (daemon_messages.js comment_media_ok)
        if (entry.message.type === "comment_media") {
          const m = entry.message;
          counters.countImages("media_sent", m.platform, m.comment_key, m.items.map((it) => it.sha256), entry.study || undefined)
            .then((counted) => { if (counted) this.broadcastCounts(); },
              (err) => console.error("modlens: the count of images sent was not stored", String(err)));
        }
      }
    },

    /** Totals for the popup; `queued` = comments, ratings and images not yet acknowledged. */
    broadcastCounts() {
      tabs.broadcast(ns.messages.counts(this.totals()));
    },

    /** The popup's totals: the counters, and what the outbox holds now (waiting; kept aside). */
    totals() {
      return { ...counters.totals, queued: this.outbox.waitingItems(), not_delivered: this.outbox.deadItems,
        consent_discarded: this.outbox.deadByCode.consent_changed || 0,
        withdrawn_discarded: this.outbox.deadByCode.consent_withdrawn || 0 };
    },

    newSocket() {
      sentAt.clear();
    },

    routeOf(id) {
      return routes.get(id);
    },

    /** The daemon acknowledged message `id`: returns its outbox entry (or undefined). */
    async acknowledged(id) {
      sentAt.delete(id);
      unanswered.delete(id);
      return this.outbox.ack(id);
    },

    /** An error answer to one of our messages: retry later or keep it as a dead letter. */
    async refused(msg) {
      const entry = this.outbox.get(msg.id);
      if (!entry) return false;
      sentAt.delete(msg.id);
      unanswered.delete(msg.id); // answered: an error answer stores nothing
      // Retriable errors (unavailable: the study log cannot be written now; rate_limited; internal)
      // are retried with back-off for as long as the daemon gives them: never given up. A rating or
      // image whose comment the daemon does not know is retried while its page is still in the
      // outbox (that page was not stored yet), else a few times (a replay racing its page's write).
      const m = entry.message;
      const comment = m.type === "rating" ? m.comment : m.type === "comment_media" ? { platform: m.platform, key: m.comment_key } : null;
      const waitsForPage = msg.code === "unknown_comment" && comment && this.outbox.holdsComment(comment.platform, comment.key);
      // (study_mismatch, a rating of another study than the daemon runs, is among the permanent ones:
      // this daemon stores it in no other study however often it is sent, so it is kept aside for its
      // study, as hello_ok sets aside what was collected under another study's consent, never resent)
      const transient = !ns.PERMANENT_ERRORS.has(msg.code) || waitsForPage || (msg.code === "unknown_comment" && entry.attempts < 5);
      if (transient) {
        entry.attempts += 1;
        entry.notBefore = Date.now() + (msg.retry_after_ms || Math.min(30000, 1000 * 2 ** entry.attempts));
        setTimeout(() => this.flush(false), entry.notBefore - Date.now() + 10);
      } else {
        console.warn("modlens: daemon refused", entry.message.type, msg.code, msg.message);
        await this.retire(entry, { code: msg.code, message: msg.message });
      }
      return true;
    },

    /** Never to be delivered: kept aside as a dead letter. A rating that will never be in the log is
     *  not a rating: its comment goes back to unrated (calibration, item set, task progress, its
     *  marker), and its page says why, once: a refusal that waited for a burial of it already under
     *  way (outbox.bury answers null) leaves both to that one. */
    async retire(entry, error) {
      sentAt.delete(entry.id);
      unanswered.delete(entry.id);
      if (!(await this.outbox.bury(entry.id, error))) return;
      const m = entry.message;
      if (m.type === "rating") {
        counters.forgetRating(m.id);
        if (entry.route) tabs.send(entry.route, ns.messages.ratingRefused(m.comment, error.code, error.message));
      }
    },

    /** The participant withdrew their consent to `studyId`: what waits of that study (and what an earlier
     *  version queued naming no study) is set aside, never sent again (consent_withdrawn). A consent given
     *  again to the same text names the same hash, so hello_ok would not set it aside: without this, it
     *  would be delivered under the new consent, which counts from then on only. An entry already sent,
     *  its answer not yet come, may be in the daemon's log (the withdrawal covers it there): its dead
     *  letter, and its page for a rating, say so, not that it was never sent. What `unanswered` does not
     *  hold may still have been sent (it is memory only: a restarted worker forgot what it sent), so its
     *  dead letter says only that it is not known to have been. Returns how many entries. */
    async setAsideWithdrawn(studyId) {
      let n = 0;
      for (const entry of this.outbox.pending()) {
        if (entry.study && entry.study !== studyId) continue; // another study's consent holds for it
        await this.retire(entry, { code: "consent_withdrawn", message: unanswered.has(entry.id)
          ? `sent before the participant withdrew consent to study ${studyId}, its answer not yet come (the daemon may hold it; the withdrawal covers it there); not sent again`
          : `collected before the participant withdrew consent to study ${studyId}; not known to have been sent; not sent again` });
        n += 1;
      }
      return n;
    },

    /** The daemon runs `study` (hello_ok.study), one pass over what waits: what was collected under the
     *  consent to another study (its authors hashed with that study's salt) is not delivered into this
     *  one's log (study_changed); what was collected under the consent to another text of this study is
     *  not delivered, even once the participant agrees to this one (consent_changed: a consent counts for
     *  the text agreed to). An entry an earlier version queued names no consent: its study decides. */
    async setAsideNotConsentedTo(study) {
      if (!study) return; // no study named: nothing to compare with
      const studyId = study.study_id;
      const consent = typeof study.consent_text === "string" ? await ns.sha256Hex(study.consent_text) : null;
      for (const entry of this.outbox.pending()) {
        if (studyId && entry.study && entry.study !== studyId) {
          await this.retire(entry, { code: "study_changed",
            message: `collected under the consent to study ${entry.study}; the daemon now runs study ${studyId}` });
        } else if (consent && entry.consent && entry.consent !== consent) {
          await this.retire(entry, { code: "consent_changed",
            message: "collected under an earlier consent text; the study's consent text changed since" });
        }
      }
    },
  };

  ns.delivery = delivery;
})(globalThis.modlens);
