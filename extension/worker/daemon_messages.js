// What the worker does with each message from the daemon (docs/PROTOCOL.md): a handler map.
(function (ns) {
  const { config, connection, counters, delivery, tabs } = ns;

  // Sampling is decided here, from the comment alone (lib/sampling.js), so every frame and
  // every participant of the study gets the same decision.
  async function onScores(msg) {
    const route = delivery.routeOf(msg.id);
    const platform = route && route.platform;
    const sampling = config.study && config.study.sampling;
    const detectorKeys = config.detectors.map((d) => d.key);
    const items = [];
    // scored: distinct comments (their log rows), however often their page is sent and answered
    const scored = (msg.items || []).filter((item) => ns.wasScored(item)).map((item) => item.comment_id);
    for (const item of msg.items || []) {
      const decision = ns.decideSample(sampling, { ...item, platform }, detectorKeys);
      const detectors = {};
      for (const [k, d] of Object.entries(item.detectors || {})) {
        detectors[k] = { name: d.name, version: d.version, toxicity: d.toxicity, error: d.error || null };
      }
      items.push({ key: item.key, sampled: decision.sampled, detectors, rated: counters.ratingOf(platform, item.key) });
    }
    if (route) tabs.send(route, ns.messages.scores(items));
    await countScored(scored);
  }

  // The daemon's `scores` message is neither acknowledged nor resent: ids whose count could not be
  // stored stay owed (counters.countScored) and are written again with the next scores message, or
  // after counters.scoredRetryMs when none comes, until storage holds them.
  let scoredRetry = null;
  async function countScored(ids) {
    clearTimeout(scoredRetry);
    try {
      await counters.countScored(ids);
    } finally {
      if (counters.scoredOwed.size) {
        scoredRetry = setTimeout(() => countScored([]).catch((err) => console.error("modlens: scored not stored yet", String(err))),
          counters.scoredRetryMs);
      }
      delivery.broadcastCounts();
    }
  }

  ns.onDaemonMessage = ns.makeRouter({
    async hello_ok(msg) {
      // a daemon connected anew (another, or the same restarted) has not answered a status yet: the
      // popup's variant counts are its own, never the previous daemon's; an open popup's next state
      // request (the broadcast of this connection) asks it at once, however recently the last one asked
      connection.variants = null;
      connection.statusAskedAt = 0;
      await config.setStudy(msg.study, msg.detectors);
      // the daemon runs a study the participant withdrew from, learnt only now (the hello went out
      // naming no study, or another): say hello again at once, carrying it, rather than on the next
      // connection (hours away on a live socket). That hello carries it, so this happens once.
      const owed = config.withdrawalToSend();
      if (owed && !connection.helloCarried(owed)) {
        connection.reconnectNow();
        return;
      }
      await delivery.setAsideNotConsentedTo(msg.study);
      connection.established(msg.session_id);
      delivery.flush(true);
      // pages that asked for their config before the session existed hold "not connected to the
      // daemon yet" (and no study): they ask again, and report what now holds them back, if anything
      tabs.configChanged();
    },
    async comments_ok(msg) {
      // saved = the distinct rows the daemon says it committed (comment_ids): the same comment sent
      // again is the same row. Counted and stored before the outbox lets the message go, so a worker
      // stopped in between resends it and counts nothing twice.
      await counters.countComments("saved", Object.values(msg.comment_ids || {}));
      await delivery.acknowledged(msg.id);
      delivery.broadcastCounts();
    },
    scores: onScores,
    status_ok(msg) { // asked for by an open popup (connection.askStatus)
      connection.variants = ns.daemonVariants(msg);
      delivery.broadcastCounts();
    },
    async comment_media_ok(msg) {
      // each image logged counts once (by its comment and bytes), however often its page was observed
      // and its images sent again; stored before the outbox lets the message go, like comments_ok.
      // An image answered was sent: counted so too, were the count at its sending not stored
      const pending = delivery.outbox.get(msg.id);
      if (pending && pending.message.type === "comment_media") {
        const m = pending.message;
        const study = pending.study || undefined;
        await counters.countImages("media_sent", m.platform, m.comment_key, m.items.map((it) => it.sha256), study);
        await counters.countImages("media_scored", m.platform, m.comment_key, (msg.media || []).map((it) => it.sha256), study);
      }
      await delivery.acknowledged(msg.id);
      delivery.broadcastCounts();
    },
    async rating_ok(msg) {
      // counted on the first acknowledgement of this rating, whatever `duplicate` says: a resend
      // after a socket lost the first answer is answered duplicate, and no other answer comes.
      // Counted by its id and stored, with the rating's record, before the outbox lets the message
      // go, like comments_ok.
      const pending = delivery.outbox.get(msg.id);
      if (pending) await counters.ratingSaved(pending);
      const entry = await delivery.acknowledged(msg.id);
      if (entry && entry.route) tabs.send(entry.route, ns.messages.ratingOk(entry.message.comment, msg.derived_toxicity, msg.inconsistent));
      delivery.broadcastCounts();
    },
    async error(msg) {
      // the daemon runs another study now, or the consent given was to another text than its current one
      // (consent_outdated): learn the study with its consent text; the participant is asked again
      if (msg.id && msg.id === connection.helloId && (msg.code === "study_mismatch" || msg.code === "consent_outdated")) {
        await config.setStudy(null, []);
        connection.reconnectNow();
        return;
      }
      if (msg.id && msg.id === connection.helloId && (msg.code === "unavailable" || msg.code === "rate_limited")) {
        connection.retryLater(`${msg.code}: ${msg.message}`); // e.g. its study log cannot be written now
        return;
      }
      if (msg.id && msg.id === connection.helloId) {
        connection.setStatus("refused", `Daemon refused the handshake: ${msg.code}: ${msg.message}`);
        return;
      }
      if (!delivery.outbox.has(msg.id)) return;
      counters.totals.errors += 1;
      await delivery.refused(msg);
      delivery.broadcastCounts();
    },
  }, () => {}); // pong, variants: nothing to do here
})(globalThis.modlens);
