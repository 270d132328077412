// A horizontal bar chart in SVG: one bar per row, a zero line when values go negative.
// Small on purpose: the stats questions need bars and labels, nothing more.

import { svg } from "./dom.js";

const ROW = 22;
const LABEL = 170;
const VALUE = 64;
const WIDTH = 640;

/** bars: [{label, value}] → an <svg> that scales to its container's width. */
export function barChart(bars, title) {
  const values = bars.map((b) => (Number.isFinite(b.value) ? b.value : 0));
  const low = Math.min(0, ...values);
  const high = Math.max(0, ...values);
  const span = high - low || 1;
  const plot = WIDTH - LABEL - VALUE;
  const x = (v) => LABEL + ((v - low) / span) * plot;
  const height = bars.length * ROW + 8;
  const chart = svg("svg", {
    class: "chart", viewBox: `0 0 ${WIDTH} ${height}`, role: "img", preserveAspectRatio: "xMinYMin meet",
  });
  chart.appendChild(svg("title", {}, title));
  bars.forEach((bar, i) => {
    const value = values[i];
    const y = 4 + i * ROW;
    const from = x(Math.min(0, value));
    const to = x(Math.max(0, value));
    // SVG text does not wrap or ellipsize: long labels are cut here, whole in the tooltip.
    const shown = bar.label.length > 26 ? `${bar.label.slice(0, 25)}…` : bar.label;
    const label = svg("text", { x: LABEL - 6, y: y + ROW * 0.68, class: "chart-label", "text-anchor": "end" }, shown);
    label.appendChild(svg("title", {}, bar.label));
    chart.appendChild(label);
    chart.appendChild(svg("rect", {
      x: from, y: y + 3, width: Math.max(1, to - from), height: ROW - 6,
      class: value < 0 ? "bar negative" : "bar",
    }));
    chart.appendChild(svg("text", { x: to + 4, y: y + ROW * 0.68, class: "chart-value" }, String(bar.value)));
  });
  if (low < 0) {
    chart.appendChild(svg("line", { x1: x(0), x2: x(0), y1: 0, y2: height, class: "zero" }));
  }
  return chart;
}
