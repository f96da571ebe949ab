// manifest.json's site lists, built from the sites table (lib/sites.js). MV3 manifests are static
// JSON, so the lists are written into the checked-in manifest rather than computed by the browser:
//   node tools/extension_manifest.mjs           prints the manifest the table gives
//   node tools/extension_manifest.mjs --write   rewrites extension/manifest.json with it
// extension/test/sites.test.mjs fails when the checked-in manifest differs from it. Outside
// extension/ so it is never shipped, and `modlens extension build` needs no node.
import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const require = createRequire(import.meta.url);
const EXT = fileURLToPath(new URL("../extension/", import.meta.url));
export const MANIFEST = `${EXT}manifest.json`;

// Every content script starts with these and ends with the UI and the entry point.
const CORE = ["lib/ns.js", "lib/constants.js", "lib/sites.js", "lib/messages.js", "lib/protocol.js", "lib/table1.js", "lib/sampling.js", "lib/hash.js", "lib/media.js",
  "content/dom.js", "content/registry.js", "content/observer.js"];
const TAIL = ["content/ui.js", "content/main.js"];
// Any other site, asked for one site at a time from the popup (never at install).
const OPTIONAL_HOSTS = ["https://*/*", "http://*/*"];

const adapterFile = (row) => `content/adapters/${row.adapter}.js`;

/** The manifest's site-derived keys for a sites table. */
export function siteLists(table) {
  const pages = table.filter((r) => !r.frame);
  const frames = table.filter((r) => r.frame);
  const contentScripts = [
    // the page adapters share one script (it also serves the sites switched on later: site_access.js)
    { matches: pages.flatMap((r) => r.hosts || []), js: [...CORE, ...pages.map(adapterFile), ...TAIL], run_at: "document_idle" },
    // a frame adapter runs alone, in its frame wherever it is embedded
    ...frames.map((r) => ({ matches: r.hosts, all_frames: true, js: [...CORE, adapterFile(r), ...TAIL], run_at: "document_idle" })),
  ];
  const hostPermissions = [
    ...table.filter((r) => (r.permission || "host") === "host").flatMap((r) => r.hosts || []),
    ...table.flatMap((r) => r.imageHosts || []),
  ];
  return { host_permissions: hostPermissions, optional_host_permissions: OPTIONAL_HOSTS, content_scripts: contentScripts };
}

/** `manifest` with its site lists replaced by the table's (key order kept). */
export function withSiteLists(manifest, table) {
  return { ...manifest, ...siteLists(table) };
}

export function tableFromSource() {
  return require("../extension/lib/sites.js").SITE_TABLE;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const built = withSiteLists(JSON.parse(readFileSync(MANIFEST, "utf8")), tableFromSource());
  const text = JSON.stringify(built, null, 2) + "\n";
  if (process.argv.includes("--write")) writeFileSync(MANIFEST, text); else process.stdout.write(text);
}
