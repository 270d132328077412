// The app's entry: the routes live in the URL's hash (#/match/<id>, #/replay/<id>?deal=3),
// so the server never needs to know them and any view is a link someone can share.

import { el, errorBox, replace } from "./dom.js";
import * as live from "./pages/live.js";
import * as match from "./pages/match.js";
import * as matches from "./pages/matches.js";
import * as replay from "./pages/replay.js";
import * as stats from "./pages/stats.js";
import * as validate from "./pages/validate.js";

const main = document.getElementById("main");
const nav = document.getElementById("nav");

// [pattern, page, nav entry]. A page's render(main, params, query) may return a function
// that undoes what it started (a timer, a stream, a key handler) when the route changes.
const ROUTES = [
  [/^\/?$/, matches, "matches"],
  [/^\/matches$/, matches, "matches"],
  [/^\/match\/([^/]+)$/, match, "matches"],
  [/^\/replay\/([^/]+)$/, replay, "matches"],
  [/^\/live$/, live, "live"],
  [/^\/live\/([^/]+)$/, live, "live"],
  [/^\/stats$/, stats, "stats"],
  [/^\/validate$/, validate, "validate"],
];

let cleanup = null;
let generation = 0;

function parseHash() {
  const raw = location.hash.replace(/^#/, "");
  const q = raw.indexOf("?");
  const path = q < 0 ? raw : raw.slice(0, q);
  const query = new URLSearchParams(q < 0 ? "" : raw.slice(q + 1));
  return { path, query };
}

async function route() {
  const mine = ++generation;
  if (cleanup) {
    try { cleanup(); } catch { /* a page that fails to clean up must not stop the next */ }
    cleanup = null;
  }
  const { path, query } = parseHash();
  let found = null;
  for (const [pattern, page, section] of ROUTES) {
    const m = pattern.exec(path);
    if (m) {
      let params;
      try {
        params = m.slice(1).map(decodeURIComponent);
      } catch {
        break; // a malformed %-escape: no such page
      }
      found = { page, section, params };
      break;
    }
  }
  for (const link of nav.querySelectorAll("a")) {
    link.classList.toggle("active", Boolean(found) && link.dataset.section === found.section);
  }
  if (!found) {
    replace(main, el("div", { class: "error" }, "There is no such page. ", el("a", { href: "#/matches" }, "The matches")));
    return;
  }
  replace(main, el("p", { class: "loading" }, "loading…"));
  try {
    const undo = await found.page.render(main, found.params, query, () => mine !== generation);
    if (mine !== generation) {
      if (typeof undo === "function") undo();
    } else if (typeof undo === "function") cleanup = undo;
  } catch (err) {
    if (mine === generation) replace(main, errorBox(err));
  }
}

window.addEventListener("hashchange", route);
route();
