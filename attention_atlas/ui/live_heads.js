// Model view and head view of one record, drawn with Plotly.js in the page itself.
//
// st.plotly_chart mounts a new chart whenever its figure changes, so every head switch
// cost a server round trip plus a fresh plot. Here a click on a model-view tile redraws
// the head view at once from every head's weights, which came with the model view (when
// the page sent them), then tells Python, which moves the layer and head widgets to
// match. A figure that does arrive from Python is drawn into the same chart with
// Plotly.react.
const groups = (window.__atlasHeadGroups ||= {}); // group id → {heads, weights, show(layer, head)}

function loadPlotly(url) {
  // The plotly package's own plotly.min.js (live_heads.py plotly_url), loaded once per page. The
  // global it sets is put back as it was, so whatever else on the page uses window.Plotly keeps it.
  window.__atlasPlotly ||= new Promise((resolve, reject) => {
    const before = window.Plotly;
    const script = document.createElement("script");
    script.src = url;
    script.onload = () => {
      const ours = window.Plotly;
      window.Plotly = before;
      ours ? resolve(ours) : reject(new Error(`${url} did not define Plotly`));
    };
    script.onerror = () => {
      window.__atlasPlotly = null;
      reject(new Error(`could not load ${url}`));
    };
    document.head.appendChild(script);
  });
  return window.__atlasPlotly;
}

function chartBox(parent, notes) {
  // One chart per mount; Streamlit may also empty the element, and then we start afresh.
  // ``notes``: the waiting and failure lines in the visitor's language (from Python).
  if (!parent.__atlas?.div.isConnected) {
    const note = document.createElement("div");
    note.textContent = notes?.drawing ?? "Drawing the chart…";
    const div = document.createElement("div");
    parent.append(note, div);
    parent.__atlas = { div, note };
    // Plotly fits a chart to its box when it draws, and again only when the window resizes: a box
    // that narrows with the window unchanged (projector mode's sidebar opened) is refitted here.
    new ResizeObserver(() => refit(div)).observe(div);
  }
  return parent.__atlas;
}

function refit(div) {
  const width = div.clientWidth;
  if (!div._fullLayout || !width || width === div.__atlasWidth) return;
  div.__atlasWidth = width;
  window.__atlasPlotly?.then((Plotly) => Plotly.Plots.resize(div));
}

function unpack16(b64) {
  // viz_core.wire.pack16 backwards: 16-bit codes → the float32 weights Python's figures hold.
  const text = atob(b64);
  const bytes = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
  const codes = new Uint16Array(bytes.buffer);
  const bits = new Uint32Array(codes.length);
  for (let i = 0; i < codes.length; i++) {
    const c = codes[i];
    bits[i] = c && (((c >> 10) + 64) << 23) | ((c & 1023) << 13);
  }
  return new Float32Array(bits.buffer);
}

function pageTheme(element) {
  // What st.plotly_chart's theme does for these figures: the page's text colour, muted tick
  // labels, transparent backgrounds (light or dark theme alike), margins that fit the labels,
  // and one plain hover box (the tiles' invisible markers would lend it the trace colour).
  const color = getComputedStyle(element).color || "rgb(49, 51, 63)";
  const muted = color.replace(/^rgb\((.*)\)$/, "rgba($1, 0.75)");
  const axis = { automargin: true, ticks: "", tickfont: { color: muted }, title: { font: { color } }, zeroline: false };
  return {
    layout: {
      font: { color },
      title: { font: { size: 16, weight: 600 } },
      paper_bgcolor: "rgba(0,0,0,0)",
      plot_bgcolor: "rgba(0,0,0,0)",
      hoverlabel: { bgcolor: "white", bordercolor: "rgb(160, 160, 170)", font: { color: "rgb(49, 51, 63)" } },
      xaxis: axis,
      yaxis: axis,
    },
  };
}

function drawFigure(Plotly, box, text, config) {
  const fig = JSON.parse(text);
  fig.layout.template = pageTheme(box.div); // instead of whichever template Python had as default
  box.note.textContent = "";
  return Plotly.react(box.div, fig.data, fig.layout, config);
}

let picks = 0; // numbers each pick, so that picking the same tile again is a change too

async function drawModelView(Plotly, box, data, setStateValue) {
  const group = (groups[data.group] ||= {});
  if (group.heads?.weights !== data.heads?.weights) {
    group.weights = data.heads && unpack16(data.heads.weights);
  }
  group.heads = data.heads;
  group.grid = data.grid;
  // what the notebook's head view draws another layer's lines from (none: the kernel sends them)
  group.rows = data.heads ? (layer, head) => headRows(group, layer, head) : null;
  box.group = group;
  // A state value, not a trigger: a trigger rides on one rerun request only, and one that a timed
  // fragment rerun (the long-input mode polls while it computes) replaced was lost with it.
  box.pick = setStateValue;
  group.pick = (layer, head) => box.pick("pick", { layer, head, n: ++picks });
  group.highlight = (layer, head) => highlightTile(Plotly, box, group, layer, head);
  if (box.figure !== data.figure) {
    box.figure = data.figure;
    await drawFigure(Plotly, box, data.figure, data.config);
    group.tile = box.div.layout.meta?.tile; // [tq, tk] cells a tile (viz_core/model_view.py)
    if (group.open) group.highlight(...group.open);
  }
  if (!box.listening) {
    box.listening = true;
    box.div.on("plotly_click", (event) => {
      const point = event.points.find((p) => p.customdata?.length === 2); // a tile's (layer, head)
      if (!point) return;
      const [layer, head] = Array.from(point.customdata, Number);
      box.group.pick(layer, head); // Python starts on the widgets while we draw
      box.group.show?.(layer, head);
    });
  }
}

function tileBounds(tile, layer, head) {
  // Tiles of tq × tk cells with a one-cell gutter after each (viz_core/model_view.py).
  const [tq, tk] = tile;
  const x0 = head * (tk + 1) - 0.5, y0 = layer * (tq + 1) - 0.5;
  return { x0, x1: x0 + tk, y0, y1: y0 + tq };
}

function highlightTile(Plotly, box, group, layer, head) {
  // The open head framed in the model view (Dodrio); head = null frames the whole layer.
  group.open = [layer, head];
  if (!group.tile || !(layer >= 0 && layer < group.grid[0])) return;
  const first = tileBounds(group.tile, layer, 0);
  const bounds = head === null ? { ...first, x1: tileBounds(group.tile, layer, group.grid[1] - 1).x1 }
    : tileBounds(group.tile, layer, head);
  const frame = { type: "rect", xref: "x", yref: "y", ...bounds, line: { color: "#d62728", width: 3 }, name: "open head" };
  Plotly.relayout(box.div, { shapes: [frame] });
}

function headRows(group, layer, head) {
  // One head's [query][key] weights from those the page carries (rows are views, not copies).
  const [, perLayer, q, k] = group.heads.shape;
  const i = layer * perLayer + head;
  return Array.from({ length: q }, (_, r) => group.weights.subarray((i * q + r) * k, (i * q + r + 1) * k));
}

function showHead(Plotly, box, group, layer, head) {
  // Redraw from the weights already here: same matrix, colour range and title as Python's figure.
  const heads = group.heads;
  if (!heads || !box.single || !box.shown?.startsWith(`${heads.id}|`)) return; // ask Python instead
  const [layers, perLayer] = heads.shape;
  if (layer >= layers || head >= perLayer) return;
  const i = layer * perLayer + head;
  const z = headRows(group, layer, head);
  box.shown = `${heads.id}|${layer}|${head}`;
  group.highlight?.(layer, head);
  Plotly.update(box.div, { z: [z], zmax: [heads.zmax[i]] }, { "title.text": heads.titles[i] });
}

const ARROWS = { ArrowLeft: [0, -1], ArrowRight: [0, 1], ArrowUp: [-1, 0], ArrowDown: [1, 0] };

function stepHead(group, box, event) {
  // With the head view focused, ←/→ open the previous/next head and ↑/↓ the layer above/below.
  const [dLayer, dHead] = ARROWS[event.key] || [];
  const [, layer, head] = (box.shown || "").split("|").map(Number);
  const [layers, perLayer] = group.grid || [];
  const to = [layer + dLayer, head + dHead];
  if (dLayer === undefined || !box.single || !(to[0] >= 0 && to[0] < layers && to[1] >= 0 && to[1] < perLayer)) return;
  event.preventDefault(); // the page does not scroll
  group.pick?.(...to);
  group.show(...to);
}

async function drawHeadView(Plotly, box, data) {
  const group = (groups[data.group] ||= {});
  group.show = (layer, head) => showHead(Plotly, box, group, layer, head);
  if (!box.keys) {
    box.keys = true;
    box.div.tabIndex = 0;
    // Plotly's drag layer swallows the click's default focus, so a click focuses the chart here.
    box.div.addEventListener("pointerdown", () => box.div.focus({ preventScroll: true }), true);
    box.div.addEventListener("keydown", (event) => stepHead(groups[data.group], box, event));
  }
  const [, layer, head] = data.shown.split("|");
  group.open = [Number(layer), /^\d+$/.test(head) ? Number(head) : null]; // "average" etc.: the layer
  group.highlight?.(...group.open);
  // On screen already, perhaps drawn from the weights here; a new language redraws it (its words).
  if (box.shown === data.shown && box.lang === data.lang) return;
  box.shown = data.shown;
  box.lang = data.lang;
  box.single = data.single;
  await drawFigure(Plotly, box, data.figure, data.config);
}

export default function (component) {
  const { data, parentElement, setStateValue } = component;
  const box = chartBox(parentElement, data.notes);
  loadPlotly(data.plotly)
    .then((Plotly) =>
      data.role === "model" ? drawModelView(Plotly, box, data, setStateValue) : drawHeadView(Plotly, box, data),
    )
    .catch((err) => {
      box.note.textContent = `${data.notes?.failed ?? "The chart could not be drawn:"} ${err.message}`;
    });
}
