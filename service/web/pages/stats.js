// Stats: the questions `kingrec stats` answers, one at a time: its chart (the column the
// terminal charts, by the server's `bar`), its rows and the SQL that gave them.

import { api } from "../api.js";
import { barChart } from "../chart.js";
import { el, href, replace } from "../dom.js";

// Counts and measures (DuckDB's count(*) is BIGINT, round() DOUBLE) are not labels; the
// leading columns that are something else (a contract, a seat, a trick) name each bar.
const MEASURE = /^(BIGINT|HUGEINT|DOUBLE|FLOAT|REAL|DECIMAL.*)$/i;

function chartOf(answer) {
  const columns = answer.columns ?? [];
  const names = columns.map((c) => c[0]);
  let bar = names.indexOf(answer.bar ?? "");
  if (bar < 0) bar = columns.findIndex((c) => MEASURE.test(c[1]));
  if (bar < 0) return null;
  let labels = columns.slice(0, bar).map((c, i) => [c, i]).filter(([c]) => !MEASURE.test(c[1])).map(([, i]) => i);
  if (!labels.length) labels = [bar === 0 ? 1 : 0].filter((i) => i < columns.length && i !== bar);
  const bars = (answer.rows ?? []).map((row) => ({
    // "KOZ · seat 2": the first label as it is, the others with their column's name.
    label: labels.map((i, k) => (k > 0 ? `${names[i]} ${row[i]}` : String(row[i]))).join(" · "),
    value: typeof row[bar] === "number" ? row[bar] : Number(row[bar]),
  }));
  return { column: names[bar], bars };
}

function rowsTable(answer) {
  return el("table", { class: "stat-rows" },
    el("thead", {}, el("tr", {}, (answer.columns ?? []).map(([name, type]) => el("th", { title: type }, name)))),
    el("tbody", {}, (answer.rows ?? []).map((row) => el("tr", {},
      row.map((value) => el("td", { class: typeof value === "number" ? "num" : "" }, value === null ? "NULL" : String(value)))))));
}

export async function render(main, _params, query) {
  const list = (await api.statsList()).questions ?? [];
  const name = query.get("q") || list[0]?.name;
  const menu = el("nav", { class: "questions" }, list.map((q) =>
    el("a", { href: href("/stats", { q: q.name }), class: q.name === name ? "active" : "", title: q.title ?? "" }, q.title || q.name)));
  if (!name) {
    replace(main, el("h1", {}, "Statistics"), el("p", { class: "empty" }, "The server has no questions."));
    return undefined;
  }
  const answer = await api.stat(name);
  const chart = chartOf(answer);
  replace(
    main,
    el("h1", {}, "Statistics"),
    menu,
    el("section", { class: "stat", dataset: { name } },
      el("h2", {}, answer.title ?? name),
      answer.description ? el("p", { class: "description" }, answer.description) : null,
      el("div", { class: "stat-body" },
        chart && chart.bars.length
          ? el("figure", { class: "chart-box" }, barChart(chart.bars, `${answer.title ?? name}: ${chart.column}`),
            el("figcaption", {}, `bars: ${chart.column}`))
          : el("p", { class: "empty" }, "No rows: the store holds no deal this question counts."),
        el("div", { class: "stat-side" },
          el("details", { class: "sql", open: true }, el("summary", {}, "SQL"), el("pre", {}, el("code", {}, answer.sql ?? ""))),
          el("div", { class: "scroll" }, rowsTable(answer)))),
      el("p", { class: "hint" }, "The same rows: ", el("code", {}, `kingrec stats ${name}`))),
  );
  return undefined;
}
