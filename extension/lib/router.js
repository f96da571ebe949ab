// Message dispatch by `type`: a handler map instead of a switch, so each part of the worker
// declares the messages it answers next to the code that answers them.
(function (root) {
  const ns = (root.modlens = root.modlens || {});

  /** handlers: {type: (msg, ...context) => result}; unknown types go to `fallback`. */
  ns.makeRouter = function makeRouter(handlers, fallback) {
    return (msg, ...context) => {
      const type = msg && msg.type;
      const handler = typeof type === "string" && Object.prototype.hasOwnProperty.call(handlers, type) ? handlers[type] : fallback;
      return handler(msg, ...context);
    };
  };

  if (typeof module !== "undefined" && module.exports) module.exports = ns;
})(globalThis);
