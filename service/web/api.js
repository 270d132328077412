// The HTTP API (docs/HTTP.md) as small async functions. Errors arrive as
// {"error": {"code", "message"}}; they become ApiError, which pages show as a sentence.

export class ApiError extends Error {
  constructor(code, message, status) {
    super(message);
    this.code = code;
    this.status = status;
  }
}

/** The id part of a URL path: every character percent-encoded (ids are anyone's strings). */
function ids(...parts) {
  return parts.map((p) => encodeURIComponent(p)).join("/");
}

function query(params) {
  const q = new URLSearchParams();
  for (const [key, value] of Object.entries(params ?? {})) {
    if (value !== undefined && value !== null && value !== "") q.set(key, String(value));
  }
  const text = q.toString();
  return text ? "?" + text : "";
}

async function failure(response) {
  let code = `HTTP_${response.status}`;
  let message = `the server answered ${response.status} ${response.statusText}`;
  try {
    const body = await response.json();
    if (body && body.error) {
      code = body.error.code || code;
      message = body.error.message || message;
    }
  } catch {
    // Not JSON (a proxy's page): the status line says enough.
  }
  return new ApiError(code, message, response.status);
}

async function getJson(path, params, accept = "application/json") {
  let response;
  try {
    response = await fetch(path + query(params), { headers: { Accept: accept } });
  } catch (err) {
    throw new ApiError("UNREACHABLE", `the server cannot be reached (${err.message})`, 0);
  }
  if (!response.ok) throw await failure(response);
  return response.json();
}

export const api = {
  /** A page of stored matches: {matches, next_page_token}. */
  matches: (filters) => getJson("/api/matches", filters),
  /** One record, in the JSON form `kingrec convert` writes. */
  match: (id) => getJson(`/api/matches/${ids(id)}`),
  /** The record's validation report (the object `kingrec validate --json` prints). */
  report: (id) => getJson(`/api/matches/${ids(id)}/report`),
  /** A stored replay's events, all at once (a JSON array). */
  replay: (id, params) => getJson(`/api/matches/${ids(id)}/replay`, params),
  /** Par analysis of a stored match (the Analyse RPC's answer): {deals: [...]}. */
  par: (id, params) => getJson(`/api/matches/${ids(id)}/par`, params),
  /** The matches being played now. */
  live: () => getJson("/api/live"),
  /** The URL of a live match's SSE stream (EventSource takes a URL, not a request). */
  liveUrl: (id, params) => `/api/live/${ids(id)}` + query(params),
  /**
   * Why a stream URL does not stream: null when it does (the request is then dropped), else
   * its ApiError. EventSource cannot read an error's body, so the page asks again by fetch.
   */
  async probe(url) {
    const controller = new AbortController();
    let response;
    try {
      response = await fetch(url, { headers: { Accept: "text/event-stream" }, signal: controller.signal });
    } catch (err) {
      return new ApiError("UNREACHABLE", `the server cannot be reached (${err.message})`, 0);
    }
    if (response.ok) {
      controller.abort();
      return null;
    }
    return failure(response);
  },
  /** The stats questions: {questions: [{name, title, sql}]}. */
  statsList: () => getJson("/api/stats"),
  /** One question's answer: {name, title, sql, columns, rows}. */
  stat: (name) => getJson(`/api/stats/${ids(name)}`),

  /** POST a file to be judged; the NDJSON lines `kingrec validate --json --all` writes. */
  async validate(file) {
    let response;
    try {
      // The report names the file as the person picked it (as `kingrec validate` would).
      response = await fetch("/api/validate" + query({ all: 1, name: file.name ?? "" }), {
        method: "POST",
        body: file,
        headers: { "Content-Type": "application/octet-stream", Accept: "application/x-ndjson" },
      });
    } catch (err) {
      throw new ApiError("UNREACHABLE", `the server cannot be reached (${err.message})`, 0);
    }
    if (!response.ok) throw await failure(response);
    const text = await response.text();
    return text.split("\n").filter((line) => line.trim()).map((line) => JSON.parse(line));
  },
};
