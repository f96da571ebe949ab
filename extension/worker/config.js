// What the participant and the study decided, kept in chrome.storage.local: settings (daemon
// address, token, rater id, pause, site switches, display, custom selectors), the study the
// daemon announced at hello, consent, and the random author salts used when a study has none.
(function (ns) {
  const store = chrome.storage.local;
  const SEEDED = ["daemonUrl", "token", "raterId"]; // the settings seed.json may set

  const config = {
    settings: null,
    study: null, // hello_ok.study (client_settings)
    detectors: [],
    consent: null, // {study_id, at, text, sha256}
    withdrawals: {}, // study_id -> at: the participant withdrew from it; every hello to its daemon says so until they agree to it again
    salts: {}, // study_id -> random salt
    seedFile: null, // seed.json as load() read it (seed()), or null

    async load() {
      const got = await store.get(["settings", "study", "detectors", "consent", "withdrawals", "salts", "seedApplied"]);
      this.settings = { ...ns.DEFAULT_SETTINGS, ...(got.settings || {}) };
      this.settings.sites = { ...ns.DEFAULT_SETTINGS.sites, ...(this.settings.sites || {}) };
      // seed.json is packaged with this copy of the extension: it cannot change while the worker runs
      this.seedFile = await this.seed();
      // a seed this profile has not applied yet: its first start, or `modlens browse` run again for a daemon
      // on another port or with a rotated token; the same seed again keeps what was changed in the options.
      // A profile from before seedApplied existed had a seed applied on its first start only: whether its
      // daemon address and token are that seed's or set by hand cannot be told, so they are kept and this
      // seed is recorded as applied (equal values lose nothing; other ones stay the participant's until
      // another seed comes: browse for another port, or after `modlens pair --rotate`)
      const seedKey = this.seedFile && JSON.stringify(SEEDED.map((k) => this.seedFile[k] ?? null));
      if (seedKey && got.settings && got.seedApplied === undefined) await store.set({ seedApplied: seedKey });
      else if (seedKey && (!got.settings || seedKey !== got.seedApplied)) await this.applySeed(this.seedFile, seedKey);
      if (!this.settings.raterId) {
        this.settings.raterId = ns.newId("rater");
        await store.set({ settings: this.settings });
      }
      this.study = got.study || null;
      this.detectors = got.detectors || [];
      this.consent = got.consent || null;
      this.withdrawals = got.withdrawals || {};
      // a consent stored by an earlier version holds its text, not yet its hash (hello sends the hash)
      if (this.consent && typeof this.consent.text === "string" && !this.consent.sha256) {
        this.consent.sha256 = await ns.sha256Hex(this.consent.text);
        await store.set({ consent: this.consent });
      }
      this.salts = got.salts || {};
      // browser tests' shorter waits (lib/constants.js applyTimings), given to content scripts too
      this.timings = ns.applyTimings((this.seedFile || {}).timings);
    },

    // `modlens browse` writes seed.json (daemon address + token) into its copy of the extension,
    // so a participant needs no pairing step. Applied once per seed (`seedKey`, see load()).
    async applySeed(seed, seedKey) {
      if (!seed) return;
      for (const k of SEEDED) if (typeof seed[k] === "string" && seed[k]) this.settings[k] = seed[k];
      if (!ns.loopbackDaemonUrl(this.settings.daemonUrl)) this.settings.daemonUrl = ns.DEFAULT_SETTINGS.daemonUrl;
      await store.set({ settings: this.settings, seedApplied: seedKey });
    },

    /** seed.json as `modlens browse` wrote it, or null (an ordinary installation, paired by hand). */
    async seed() {
      try {
        const res = await fetch(chrome.runtime.getURL("seed.json"));
        return res.ok ? await res.json() : null;
      } catch (_) {
        return null;
      }
    },

    /** Returns whether the daemon address or token changed (the socket must then reconnect).
     *  Throws, storing nothing, on an unknown setting or a daemon address off this computer. */
    async updateSettings(changes) {
      changes = { ...changes };
      const unknown = Object.keys(changes).filter((k) => !Object.prototype.hasOwnProperty.call(ns.DEFAULT_SETTINGS, k));
      if (unknown.length) throw new Error(`unknown setting ${unknown[0]}`);
      if ("daemonUrl" in changes) {
        changes.daemonUrl = ns.loopbackDaemonUrl(changes.daemonUrl);
        if (!changes.daemonUrl) throw new Error(ns.NOT_LOOPBACK);
      }
      if ("token" in changes && typeof changes.token !== "string") throw new Error("the pairing token must be text");
      const before = this.settings;
      this.settings = { ...this.settings, ...changes };
      await store.set({ settings: this.settings });
      return before.daemonUrl !== this.settings.daemonUrl || before.token !== this.settings.token;
    },

    async setStudy(study, detectors) {
      this.study = study;
      this.detectors = detectors || [];
      await store.set({ study: this.study, detectors: this.detectors });
    },

    async setConsent(accept, studyId) {
      // `text`: the consent text agreed to (see consented()), `sha256` its hash (hello names the text by it,
      // outbox entries the consent they were collected under); whether images are collected is in the text
      this.consent = accept ? { study_id: studyId, at: new Date().toISOString(),
        text: this.study.consent_text, sha256: await ns.sha256Hex(this.study.consent_text) } : null;
      // a withdrawal is kept (stored with the consent's removal, in one write) and sent with every hello
      // until a new consent to that study: the daemon records it even when it was down at the moment it
      // was made, or ran another study (one per study: a consent to another study takes back none)
      this.withdrawals = { ...this.withdrawals };
      if (accept) delete this.withdrawals[studyId];
      else this.withdrawals[studyId] = new Date().toISOString();
      await store.set({ consent: this.consent, withdrawals: this.withdrawals });
    },

    /** The withdrawal the next hello tells the daemon of, {study_id, at}: the running study's, while no
     *  consent to it holds (a hello names the running study; another study's daemon is told when it
     *  runs that study again: daemon_messages.js hello_ok says hello again when it finds it so). */
    withdrawalToSend() {
      const at = this.study && !this.consented() && this.withdrawals[this.study.study_id];
      return at ? { study_id: this.study.study_id, at } : null;
    },

    consented() {
      // a consent counts for the text agreed to: a study whose text changed (a detector that now sends
      // comments elsewhere, images collected, another signer) asks again, as does a consent stored
      // without its text by an earlier version
      return !!(this.study && this.consent && this.consent.study_id === this.study.study_id
        && typeof this.consent.text === "string" && this.consent.text === this.study.consent_text);
    },

    displayMode() {
      const d = this.settings.display;
      return d === "blind" || d === "scores" ? d : (this.study && this.study.display) || "blind";
    },

    siteActive(site) {
      return this.consented() && !this.settings.paused && this.settings.sites[site] !== false;
    },

    async authorSalt() {
      const study = this.study;
      if (study.author_salt) return study.author_salt;
      if (!this.salts[study.study_id]) {
        this.salts[study.study_id] = ns.newId("salt");
        await store.set({ salts: this.salts });
      }
      return this.salts[study.study_id];
    },
  };

  ns.config = config;
})(globalThis.modlens);
