// Live: the matches being played now, and watching one. Watching is an EventSource on the
// server's SSE stream; each event's `id:` is its number, so when the connection drops the
// browser reconnects with Last-Event-ID and the server goes on from the next event. The
// page says so while it is reconnecting, and never draws an event twice.

import { api } from "../api.js";
import { el, errorBox, href, matchPath, replace, signed } from "../dom.js";
import { statusText } from "../names.js";
import { createTable } from "../tableview.js";

const LIST_REFRESH_MS = 3000;

function listRow(m) {
  const id = m.match_id ?? "";
  return el("tr", {},
    el("td", { class: "id" }, el("a", { href: href(matchPath("live", id)), title: id }, id || "(no id)")),
    el("td", { class: "players" }, (m.players ?? []).map((p) => p.name || p.id).join(", ")),
    el("td", {}, m.preset ?? ""),
    el("td", { class: "status" }, statusText(m.status)),
    el("td", { class: "num" }, m.deals ?? 0),
    el("td", { class: "num totals" }, (m.totals ?? []).map(signed).join(" ")),
    el("td", { class: "num viewers" }, m.viewers ?? 0));
}

async function renderList(main, isStale) {
  const body = el("tbody", {});
  const note = el("p", { class: "count" });
  const problem = el("div", {});
  replace(main, el("h1", {}, "Live matches"),
    el("div", { class: "scroll" }, el("table", { class: "live-matches" },
      el("thead", {}, el("tr", {}, ["match", "players", "preset", "status", "deals", "totals", "viewers"].map((h) => el("th", {}, h)))),
      body)),
    note, problem);
  async function refresh() {
    try {
      const page = await api.live();
      if (isStale()) return;
      const list = page.matches ?? [];
      replace(body, list.map(listRow));
      note.textContent = list.length ? `${list.length} match(es) in progress or just finished` : "No match is being played now.";
      replace(problem);
    } catch (err) {
      if (!isStale()) replace(problem, errorBox(err));
    }
  }
  await refresh();
  // The list changes as matches start and end: look again every few seconds.
  const timer = setInterval(refresh, LIST_REFRESH_MS);
  return () => clearInterval(timer);
}

function watch(main, id, query) {
  const seatText = query.get("seat");
  const seat = seatText !== null && /^[0-3]$/.test(seatText) ? Number(seatText) : null;
  const delay = query.get("delay_ms");
  const table = createTable({ follow: true, bottomSeat: seat ?? 0 });
  const state = el("span", { class: "stream-state", dataset: { state: "connecting" } }, "connecting…");
  const follow = el("button", { type: "button", class: "follow", onclick: () => table.go(table.stops.length - 1) }, "⏩ follow live");
  // Whose view: changing it starts the stream again for that seat (the server decides
  // what each seat may see).
  const view = el("select", { class: "seat-view", "aria-label": "whose view" },
    el("option", { value: "", selected: seat === null }, "all hands"),
    [0, 1, 2, 3].map((s) => el("option", { value: String(s), selected: seat === s }, `seat ${s}'s view`)));
  view.addEventListener("change", () => {
    location.hash = href(matchPath("live", id), { seat: view.value, delay_ms: delay ?? "" });
  });
  replace(main,
    el("h1", { class: "match-id" }, "Live: ", el("span", { class: "id", title: id }, id)),
    el("div", { class: "toolbar" }, state, follow, view),
    table.node);

  let lastSeq = 0; // the number of the last event drawn: what a resumption asks after
  let source = null;
  let retry = null;
  let closed = false;
  let pending = [];
  let flushing = false;

  function setState(name, text) {
    state.dataset.state = name;
    state.textContent = text;
  }
  // Events arrive one message each; a snapshot is hundreds at once. Drawing them in one
  // go after the burst keeps a long snapshot from redrawing the table per event.
  function flush() {
    flushing = false;
    const batch = pending;
    pending = [];
    if (batch.length) table.addEvents(batch);
    state.dataset.seq = String(lastSeq);
  }
  function receive(message) {
    let event;
    try {
      event = JSON.parse(message.data);
    } catch {
      return; // not an event: nothing to draw
    }
    const seq = event.seq ?? 0;
    if (seq <= lastSeq) {
      // Already drawn (a server that resent it): counted, for whoever checks, never redrawn.
      state.dataset.repeats = String(Number(state.dataset.repeats ?? 0) + 1);
      return;
    }
    if (lastSeq && seq !== lastSeq + 1) state.dataset.gap = `${lastSeq + 1}..${seq - 1}`;
    lastSeq = seq;
    pending.push(event);
    if (!flushing) {
      flushing = true;
      setTimeout(flush, 0);
    }
  }
  function connect() {
    const params = { seat: seat ?? "", delay_ms: delay ?? "", resume_from: lastSeq || "" };
    const url = api.liveUrl(id, params);
    source = new EventSource(url);
    source.onopen = () => setState("live", "● live");
    source.onmessage = receive;
    source.onerror = () => {
      if (closed) return;
      if (source.readyState === EventSource.CONNECTING) {
        // The browser retries by itself, sending Last-Event-ID.
        setState("reconnecting", "reconnecting…");
      } else {
        // It gave up: the server answered with an error (no such live match, a bad seat) or
        // not at all. Ask why; a refusal is shown and final, anything else is tried again
        // from the last event drawn.
        setState("reconnecting", "connection lost; reconnecting…");
        source.close();
        api.probe(url).then((problem) => {
          if (closed) return;
          if (problem && problem.status >= 400 && problem.status < 500 && problem.status !== 429) {
            closed = true;
            setState("error", `${problem.code}: ${problem.message}`);
            return;
          }
          retry = setTimeout(connect, 2000);
        });
      }
    };
    // News of the publisher (as Watch gives it): gone, the match waits for it a while and is
    // then ended as abandoned; back, the match goes on.
    source.addEventListener("publisher", (message) => {
      let news = {};
      try { news = JSON.parse(message.data); } catch { return; }
      if (news.publisher === "PUBLISHER_GONE") {
        const seconds = Math.round((news.abandon_in_ms ?? 0) / 1000);
        setState("waiting", `the publisher is gone: the match ends abandoned in ${seconds} s unless it comes back`);
      } else if (news.publisher === "PUBLISHER_PUBLISHING" && state.dataset.state === "waiting") {
        setState("live", "● live");
      }
    });
    source.addEventListener("end", (message) => {
      let end = {};
      try { end = JSON.parse(message.data); } catch { /* an end without a body is still an end */ }
      source.close();
      if (end.code === "FELL_BEHIND") {
        // Too slow for the server's buffer: start again after the last event drawn.
        setState("reconnecting", "fell behind; catching up…");
        retry = setTimeout(connect, 0);
        return;
      }
      closed = true;
      flush();
      setState(end.code === "OK" ? "ended" : "error",
        end.code === "OK" ? "match over" : `${end.code ?? "ended"}: ${end.message ?? ""}`);
    });
  }
  connect();
  return () => {
    closed = true;
    if (retry !== null) clearTimeout(retry);
    if (source) source.close();
    table.destroy();
  };
}

export async function render(main, params, query, isStale) {
  if (params.length && params[0]) return watch(main, params[0], query);
  return renderList(main, isStale);
}
