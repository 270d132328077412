// Building the page. Every string from a record (names, ids, events, tags, finding
// messages) reaches the page through textContent or setAttribute here, never through
// innerHTML: a player called `<img src=x onerror=…>` is a player with a strange name.

/** An element: el("td", {class: "num", title: t}, child, "text", …). */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  append(node, children);
  return node;
}

/** Append children: nodes as they are, strings and numbers as text, arrays flattened. */
export function append(node, children) {
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue;
    if (Array.isArray(child)) append(node, child);
    else if (child instanceof Node) node.appendChild(child);
    else node.appendChild(document.createTextNode(String(child)));
  }
  return node;
}

/** Replace everything in node with children. */
export function replace(node, ...children) {
  node.replaceChildren();
  return append(node, children);
}

/** A link to a route of the app (the hash part), with query parameters. */
export function href(path, params = {}) {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== "") query.set(key, String(value));
  }
  const text = query.toString();
  return "#" + path + (text ? "?" + text : "");
}

/** A route path holding a match id: every character of the id percent-encoded. */
export function matchPath(kind, matchId) {
  return `/${kind}/${encodeURIComponent(matchId)}`;
}

/** The SVG namespace's elements (charts). */
export function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
  for (const child of children) {
    if (child instanceof Node) node.appendChild(child);
    else if (child !== undefined && child !== null) node.appendChild(document.createTextNode(String(child)));
  }
  return node;
}

/** A signed score as people read it: +50, -320, 0. */
export function signed(n) {
  return n > 0 ? `+${n}` : String(n);
}

/** An error as the page shows it: its code and its sentence. */
export function errorBox(err) {
  return el("div", { class: "error", role: "alert" },
    el("strong", {}, err.code || "ERROR"), " ", el("span", { class: "error-message" }, err.message || String(err)));
}
