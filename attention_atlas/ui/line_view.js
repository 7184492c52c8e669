// BertViz's line view: queries on the left, keys on the right, a line per weight whose opacity
// is the weight (times data.opacity, where given), one colour per head. Hovering a token shows only its own lines. Every token
// is set as text (textContent), never parsed as HTML.
const SVG = "http://www.w3.org/2000/svg";
const FONT = 14; // px of the token labels, unless the data says (projector mode: 20)
let ROW = 22; // px per token row: the labels' size and room between them (set by ``draw``)
let TOP = 2 * ROW; // the legend's band above the tokens

function el(name, attrs, parent) {
  const node = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  parent?.appendChild(node);
  return node;
}

function tokenColumn(svg, tokens, x, anchor, side) {
  const column = el("g", { class: `atlas-line-${side}` }, svg);
  tokens.forEach((token, i) => {
    const label = el("text", { x, y: TOP + (i + 1) * ROW, "text-anchor": anchor, "data-i": i, class: "atlas-token", fill: "currentColor" }, column);
    label.textContent = token;
  });
  return column;
}

function legend(svg, heads) {
  // One coloured square and "head h" (its label from Python, in the visitor's language) per overlaid head.
  const band = el("g", { class: "atlas-legend" }, svg);
  heads.forEach(({ head, label, colour }, i) => {
    const step = (90 * ROW) / 22, box = (14 * ROW) / 22;
    el("rect", { x: 8 + i * step, y: ROW - box + 2, width: box, height: box, fill: colour }, band);
    el("text", { x: 14 + box + i * step, y: ROW, fill: "currentColor" }, band).textContent = label ?? `head ${head}`;
  });
}

function isolate(svg, side, i) {
  // side = "q" or "k": keep the lines of token i on that side; i = null: show every line.
  for (const line of svg.querySelectorAll("line")) {
    line.style.display = i === null || line.dataset[side] === String(i) ? "" : "none";
  }
  for (const label of svg.querySelectorAll(".atlas-token")) label.style.fontWeight = "";
}

function draw(parent, data) {
  parent.replaceChildren();
  const font = data.font || FONT;
  ROW = Math.round((22 * font) / FONT);
  TOP = data.legend === false ? 0 : 2 * ROW; // the notebook's head view has its own boxes above
  const width = Math.max(320, Math.min(parent.clientWidth || 700, 900));
  const rows = Math.max(data.queries.length, data.keys.length);
  const svg = el("svg", { width, height: TOP + (rows + 1) * ROW, class: "atlas-line-view", role: "img" }, parent);
  svg.style.fontFamily = "Noto Sans CJK SC, Source Han Sans SC, Arial, sans-serif";
  svg.style.fontSize = `${font}px`;
  const left = width * 0.3, right = width * 0.7;
  if (data.legend !== false) legend(svg, data.heads);
  const links = el("g", { class: "atlas-links" }, svg);
  for (const { head, colour, links: pairs } of data.heads) {
    for (const [q, k, w] of pairs) {
      el("line", {
        x1: left + 6, y1: TOP + (q + 1) * ROW - 5, x2: right - 6, y2: TOP + (k + 1) * ROW - 5,
        stroke: colour, "stroke-width": 2, "stroke-opacity": w * (data.opacity ?? 1), "data-q": q, "data-k": k, "data-head": head,
      }, links);
    }
  }
  const sides = [[data.queries, left - 4, "end", "q"], [data.keys, right + 4, "start", "k"]];
  for (const [tokens, x, anchor, side] of sides) {
    const column = tokenColumn(svg, tokens, x, anchor, side);
    column.addEventListener("mouseover", (event) => {
      const i = event.target.dataset?.i;
      if (i === undefined) return;
      isolate(svg, side, i);
      event.target.style.fontWeight = "bold";
    });
    column.addEventListener("mouseleave", () => isolate(svg, side, null));
  }
}

export default function (component) {
  const { data, parentElement } = component;
  draw(parentElement, data);
  // Drawn again at the column's new width when it changes (a browser's zoom, the window resized, the
  // sidebar opened): the labels keep their size, and the lines never reach past the page's edge.
  parentElement.atlasResize?.disconnect();
  let drawnAt = parentElement.clientWidth;
  parentElement.atlasResize = new ResizeObserver(() => {
    if (parentElement.clientWidth === drawnAt) return;
    drawnAt = parentElement.clientWidth;
    draw(parentElement, data);
  });
  parentElement.atlasResize.observe(parentElement);
}
