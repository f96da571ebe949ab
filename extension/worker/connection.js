// The one WebSocket to the local daemon. Content scripts on public pages cannot reach loopback,
// so only the worker connects. Hello carries the pairing token (also as a subprotocol), the
// rater id and the consent; reconnects use jittered exponential back-off; while open, a ping
// every KEEPALIVE_MS keeps the worker alive and gives delivery a chance to resend. "Connected"
// means the daemon answers: an open socket it has said nothing on for SILENT_AFTER_MS (a stopped
// or hung process keeps its socket open) is closed and the worker connects again. A handler that
// never ends cannot hold that up: each socket's messages are handled on a chain of their own, a
// handler gets HANDLE_TIMEOUT_MS before the next message's turn, and a closed socket's queued
// messages are dropped (what they answered is still in the outbox and is sent again).
(function (ns) {
  const config = ns.config;
  const STATUS_MS = 5000; // the popup's daemon status, asked at most this often

  const connection = {
    ws: null,
    status: "disconnected", // disconnected | connecting | ready | no_token | refused | error
    lastError: "",
    sessionId: null,
    helloId: null,
    helloWithdrawal: null, // the withdrawal this socket's hello carried ({study_id, at}) or null
    backoff: ns.BACKOFF_MIN_MS,
    reconnectTimer: null,
    keepaliveTimer: null,
    pending: new Map(), // request id -> resolve, for requests answered by one message (join_study)
    onMessage: () => {}, // daemon message -> promise
    handling: { ws: null, done: Promise.resolve() }, // a socket and its messages handled so far (handle)
    handleTimeoutMs: 30000, // a handler still running after this counts as failed and the next one runs
    onStatus: () => {}, // the status changed
    onNewSocket: () => {}, // what was in flight on the old socket must be resent on this one
    onTick: () => {}, // every keepalive
    variants: null, // ns.daemonVariants of the daemon's last status_ok (the popup shows it)
    statusAskedAt: 0,
    heardAt: 0, // when the daemon last sent anything on this socket

    setStatus(status, error) {
      this.status = status;
      if (error !== undefined) this.lastError = error;
      this.onStatus();
    },

    connect() {
      if (this.ws || this.reconnectTimer) return;
      const { daemonUrl, token } = config.settings;
      if (!token) return this.setStatus("no_token", "No pairing token: run `modlens pair` and paste it in the options.");
      // an address stored before the check in config.updateSettings: never connect off the computer
      if (!ns.loopbackDaemonUrl(daemonUrl)) return this.setStatus("error", ns.NOT_LOOPBACK);
      let ws;
      try {
        ws = new WebSocket(daemonUrl, ns.wsSubprotocols(token));
      } catch (err) {
        this.setStatus("error", `Bad daemon address ${daemonUrl}: ${err.message}`);
        return;
      }
      this.ws = ws;
      this.onNewSocket();
      this.setStatus("connecting");
      ws.onopen = () => ws.send(JSON.stringify(this.hello(token)));
      ws.onmessage = (ev) => {
        this.heardAt = Date.now();
        let msg;
        try { msg = JSON.parse(ev.data); } catch (_) { return; }
        const waiting = msg && this.pending.get(msg.id);
        if (waiting) { this.pending.delete(msg.id); waiting(msg); return; }
        this.handle(msg, ws);
      };
      ws.onclose = (ev) => {
        if (this.ws !== ws) return;
        this.ws = null;
        this.sessionId = null;
        clearInterval(this.keepaliveTimer);
        // A refused handshake (401/403) surfaces as 1006 before open; say so instead of looping fast.
        const neverOpened = this.status === "connecting";
        this.setStatus(neverOpened ? "refused" : "disconnected",
          neverOpened ? `Daemon at ${daemonUrl} not reachable, or it refused the token or this extension (code ${ev.code}): `
            + `if it was paired with another browser, run \`modlens pair --extension ${ns.extensionOrigin(chrome.runtime)}\`.`
            : `Connection closed (code ${ev.code}).`);
        this.scheduleReconnect();
      };
      ws.onerror = () => {}; // onclose follows and handles it
    },

    /** Handles daemon message `msg`, which came on socket `ws`, once every message before it on that
     *  socket is handled (a failed one included): an answer's handler reads and writes the counters
     *  and the outbox over awaits, so a second answer for the same message (a duplicate answer to a
     *  resend) must not run while the first one's write may still fail. A handler still running after
     *  handleTimeoutMs (a storage write that hangs) counts as failed and the next message runs; the
     *  given-up handler goes on, and a later answer counting the same ids waits for its write
     *  (counters.countComments), so the outbox lets a message go only once what it counts is stored. A message whose socket is no longer this.ws
     *  when its turn comes is dropped (a stale hello_ok must not establish the new socket's session;
     *  what it answered is resent on the new socket). Returns its handling (rejected if it failed or
     *  was dropped; logged either way). */
    handle(msg, ws = this.ws) {
      const stale = () => new Error("its socket was closed before its turn: dropped, the outbox sends again");
      if (ws !== this.ws) { // came on a socket already left: never touches the live socket's chain
        const dropped = Promise.reject(stale());
        dropped.catch((err) => console.error("modlens: handling", msg.type, err));
        return dropped;
      }
      if (this.handling.ws !== ws) this.handling = { ws, done: Promise.resolve() }; // a new socket: a new chain
      const chain = this.handling;
      const run = chain.done.then(() => {
        if (ws !== this.ws) throw stale();
        let timer;
        const limit = this.handleTimeoutMs;
        const late = new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error(`its handler did not end in ${limit / 1000} s: counted as failed`)), limit);
        });
        return Promise.race([Promise.resolve().then(() => this.onMessage(msg)), late]).finally(() => clearTimeout(timer));
      });
      chain.done = run.catch((err) => console.error("modlens: handling", msg.type, err));
      return run;
    },

    hello(token) {
      const hello = ns.protocol.hello({ token, raterId: config.settings.raterId, consent: config.consented() ? config.consent : null,
        withdrawal: config.withdrawalToSend() });
      this.helloId = hello.id;
      this.helloWithdrawal = hello.consent_withdrawn_at ? { study_id: hello.study_id, at: hello.consent_withdrawn_at } : null;
      return hello;
    },

    /** Whether this socket's hello told the daemon of `withdrawal` ({study_id, at}). */
    helloCarried(withdrawal) {
      const sent = this.helloWithdrawal;
      return !!(sent && sent.study_id === withdrawal.study_id && sent.at === withdrawal.at);
    },

    /** hello_ok arrived: the session is usable. */
    established(sessionId) {
      this.sessionId = sessionId;
      this.backoff = ns.BACKOFF_MIN_MS;
      this.setStatus("ready", "");
      clearInterval(this.keepaliveTimer);
      this.heardAt = Date.now();
      this.keepaliveTimer = setInterval(() => {
        const silent = Date.now() - this.heardAt;
        if (silent > ns.SILENT_AFTER_MS) return this.dropSilent(silent);
        if (this.ws && this.ws.readyState === WebSocket.OPEN) this.send(ns.protocol.ping());
        this.onTick();
      }, ns.KEEPALIVE_MS);
    },

    /** Closes this session's socket (its onclose silenced: the caller says why and reconnects) and
     *  forgets the session. */
    endSession(closeReason) {
      const ws = this.ws;
      this.ws = null;
      this.sessionId = null;
      clearInterval(this.keepaliveTimer);
      if (ws) {
        ws.onclose = null;
        try { ws.close(1000, closeReason); } catch (_) { /* already closed */ }
      }
    },

    /** The daemon answered nothing, not even pings, for `silent` ms: this session is not one. What
     *  it did not acknowledge stays in the outbox and is sent again on the next socket. */
    dropSilent(silent) {
      this.endSession("no answer");
      this.setStatus("disconnected", `The daemon has not answered for ${Math.round(silent / 1000)} s (not even a ping): connecting again.`);
      this.scheduleReconnect();
    },

    scheduleReconnect() {
      if (this.reconnectTimer) return;
      const delay = this.backoff * (0.75 + Math.random() * 0.5);
      this.backoff = Math.min(ns.BACKOFF_MAX_MS, this.backoff * 2);
      this.reconnectTimer = setTimeout(() => { this.reconnectTimer = null; this.connect(); }, delay);
    },

    /** The daemon cannot take a session now (its study log cannot be written, it is busy): close
     *  this socket, say so, and say hello again on a new one after the back-off. */
    retryLater(reason) {
      this.endSession("retry later");
      this.setStatus("disconnected", `Daemon unavailable (${reason}); trying again shortly.`);
      this.scheduleReconnect();
    },

    reconnectNow() {
      clearTimeout(this.reconnectTimer);
      this.reconnectTimer = null;
      this.backoff = ns.BACKOFF_MIN_MS;
      if (this.ws) {
        const ws = this.ws;
        this.ws = null;
        ws.onclose = null;
        try { ws.close(1000, "reconnect"); } catch (_) { /* already closed */ }
        clearInterval(this.keepaliveTimer);
      }
      this.connect();
    },

    ensure() {
      if (!this.ws && !this.reconnectTimer) this.connect();
    },

    ready() {
      return !!(this.ws && this.ws.readyState === WebSocket.OPEN && this.sessionId);
    },

    /** The popup is open: ask the daemon for its status (live-variant counts), at most every
     *  STATUS_MS; each answer counts the study log's rows, so not on every refresh. */
    askStatus() {
      const now = Date.now();
      if (!this.ready() || now - this.statusAskedAt < STATUS_MS) return;
      this.statusAskedAt = now;
      this.send(ns.protocol.status());
    },

    send(message) {
      this.ws.send(JSON.stringify(message));
    },

    /** Send one message and wait for the daemon's answer to its id (a result or an `error`). */
    request(message, timeoutMs) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          this.pending.delete(message.id);
          reject(new Error(`the daemon gave no answer in ${Math.round(timeoutMs / 1000)} s`));
        }, timeoutMs);
        this.pending.set(message.id, (answer) => { clearTimeout(timer); resolve(answer); });
        this.send(message);
      });
    },
  };

  ns.connection = connection;
})(globalThis.modlens);
