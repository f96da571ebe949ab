"""A Perspective-compatible scoring service (Perspective API stops answering after 2026).

Clients written for Google's Comment Analyzer (`POST /v1alpha1/comments:analyze`) call the
daemon instead and get Perspective's JSON back, scored by the study's local, versioned detectors:

- `request`: parses and checks Perspective's request bodies (the documented fields; errors in
  Perspective's shape, `errors.PerspectiveError`);
- `attributes`: which detector and label answer each attribute (study.toml `[perspective]`);
- `service.Analyzer`: scores through the engine's shared batchers, builds the response (each score
  names its detector and version) and logs the call like any scored text unless `doNotStore`;
- `calibration`: optional isotonic maps onto Perspective's scale, fitted on recorded scores;
- `discovery`: the discovery document Google's API clients build the service from;
- `keys`: the separate API key (`modlens pair --api-key`);
- `calls`: one call or a batch answered (key, method, errors in Google's shape);
- `dropin` and `tls`: what the drop-in proxy answers, and its local certificate authority.
The HTTP side is `modlens.daemon.perspective_api`, the drop-in's socket `modlens.daemon.perspective_proxy`.
"""
