"""modlens daemon: the local WebSocket server the browser extension talks to. Thin: it calls the engine."""
