// A notebook's views, mounted with the app's own scripts (ui/live_heads.js, ui/line_view.js).
//
// Each script is an ES module whose default export is a Streamlit component's body; here it is
// imported from a blob URL of its text (carried with the view: nothing is fetched) and called with
// the data the component would get. Plotly.js is whatever window.__atlasPlotly resolves to: the
// copy inlined in a saved file (page.py), or the one the live widget asked its kernel for
// (widget.js). `hooks` are the live widget's: `pick(section, value)` gets a tile click or an arrow
// key, and the opening head of a live section (which carries only its layer and head, `open`);
// `head(section, draw)` a function that draws a head figure the kernel sent; in the head view,
// `layer(section, layer)` gets a layer whose lines the page needs and `lines(section, draw)` a
// function that draws the lines the kernel sent; on a long-input view, `zoom(section, x, y)` gets
// a box drawn on the overview and `window(section, element)` the element where the kernel's window
// at full resolution goes.

function atlasSections(root, spec, sources, hooks = {}) {
  const load = (name) => {
    const url = URL.createObjectURL(new Blob([sources[name]], { type: "text/javascript" }));
    return import(url).then((module) => module.default);
  };
  const block = (parent, text, tag = "div") => {
    const element = document.createElement(tag);
    if (text) element.textContent = text;
    parent.appendChild(element);
    return element;
  };
  const modelView = (live, box, section, index, opened) => {
    // `opened({layer, head})`: a tile click or an arrow key opened that head (the head view's lines follow)
    const { group, config } = section;
    const model = block(box);
    model.className = "atlas-model-view";
    const setStateValue = (name, value) => {
      hooks.pick?.(index, value);
      opened?.(value);
    };
    live({ data: { role: "model", group, config, ...section.model }, parentElement: model, setStateValue });
    if (section.note) block(box, section.note, "p");
    block(box, "Click a tile to open its head below; in the head view (click it first), ←/→ step through the heads and ↑/↓ through the layers.", "p").style.color = "gray";
    const head = block(box);
    head.className = "atlas-head-view";
    if (section.sentences) sentenceFilter(box, head, section.sentences);
    const draw = (extra) =>
      live({ data: { role: "head", group, config, ...section.head, ...extra }, parentElement: head, setStateValue() {} });
    hooks.head?.(index, draw);
    if (section.head.figure) draw({});
    else hooks.pick?.(index, { layer: section.head.open[0], head: section.head.open[1] }); // the live widget's first head
  };
  const linksOf = (rows, threshold) => {
    // viz_core.line_view.head_links in the page: [query, key, weight] of every weight at or above threshold
    const links = [];
    rows.forEach((row, q) => row.forEach((w, k) => w >= threshold && links.push([q, k, Math.round(w * 1e4) / 1e4])));
    return links;
  };
  const headBoxes = (parent, heads, flip) => {
    // BertViz's colour boxes, one per head: filled when its lines are on, an outline when off.
    const row = block(parent);
    row.className = "atlas-head-boxes";
    const buttons = heads.map(({ head, label, colour }) => {
      const button = block(row, String(head), "button");
      Object.assign(button, { type: "button", title: label, className: "atlas-head-box" });
      button.dataset.head = head;
      Object.assign(button.style, {
        width: "26px", height: "22px", margin: "0 3px 3px 0", padding: "0", cursor: "pointer",
        border: `2px solid ${colour}`, borderRadius: "3px", font: "12px Arial, sans-serif",
      });
      button.addEventListener("click", () => flip(head, false));
      button.addEventListener("dblclick", () => flip(head, true));
      return [button, head, colour];
    });
    return (on) =>
      buttons.forEach(([button, head, colour]) => {
        Object.assign(button.style, on.has(head) ? { background: colour, color: "#000" } : { background: "none", color: "inherit" });
        button.setAttribute("aria-pressed", String(on.has(head)));
      });
  };
  const headLines = (box, section, index, line) => {
    // BertViz's head view: a layer selector, a colour box per head (a click switches its lines on or
    // off, a double-click shows that head alone, and again every head), the lines of the heads on.
    // Another layer's lines come from the heads the page carries, else from the kernel (live widget).
    // Returns what the model view calls when a tile or an arrow key opens a head: the lines follow.
    const sel = section.select;
    const state = { layer: sel.layer, head: sel.on[0], data: section.line, on: new Set(sel.on) };
    const group = () => window.__atlasHeadGroups?.[section.group];
    const controls = block(box);
    controls.className = "atlas-head-controls";
    const label = block(controls, `${sel.label} `, "label");
    label.style.marginRight = "12px";
    const select = document.createElement("select");
    select.className = "atlas-layer-select";
    select.style.fontSize = "14px";
    sel.layers.forEach((text, i) => select.append(new Option(text, String(i))));
    select.value = String(sel.layer);
    select.disabled = !section.model?.heads && !hooks.layer; // a file too big for every head keeps its layer
    label.appendChild(select);
    const all = section.line.heads.map((h) => h.head);
    const flip = (head, alone) => {
      const only = state.on.size === 1 && state.on.has(head);
      if (alone) state.on = new Set(only ? all : [head]);
      else if (!only) state.on.has(head) ? state.on.delete(head) : state.on.add(head);
      render();
    };
    const paint = headBoxes(controls, section.line.heads, flip);
    block(controls, "Click a box to switch its head's lines on or off; double-click it to see that head alone.", "span").style.color = "gray";
    const holder = block(box);
    holder.className = "atlas-line-view-box";
    const render = () => {
      paint(state.on);
      holder.style.opacity = "";
      const heads = state.data.heads.filter((h) => state.on.has(h.head));
      // a line's opacity is its weight, damped as more heads are drawn (BertViz divides by their
      // number, which leaves twelve heads' lines too faint to read on a dark page; here 1/√n)
      line({ data: { ...state.data, heads, legend: false, opacity: 1 / Math.sqrt(heads.length) }, parentElement: holder });
    };
    const showRow = (layer) => {
      // head_view(layer=…): the model view's row of tiles is the open layer's
      const div = box.querySelector(".atlas-model-view .js-plotly-plot");
      const tq = div?.layout?.meta?.tile?.[0];
      if (sel.row && tq !== undefined)
        window.__atlasPlotly.then((Plotly) => Plotly.relayout(div, { "yaxis.range": [layer * (tq + 1) + tq - 0.5, layer * (tq + 1) - 0.5] }));
    };
    const setLayer = (layer) => {
      if (layer === state.layer) return;
      state.layer = layer;
      select.value = String(layer);
      showRow(layer);
      const rows = group()?.rows;
      if (rows) {
        const heads = section.line.heads.map((h) => ({ ...h, links: linksOf(rows(layer, h.head), sel.threshold) }));
        state.data = { ...section.line, heads };
        render();
      } else if (hooks.layer) {
        holder.style.opacity = "0.4"; // the old layer's lines, faded until the kernel's arrive
        hooks.layer(index, layer);
      }
    };
    hooks.lines?.(index, (reply) => {
      if (reply.layer !== state.layer) return; // a layer left before its lines came
      state.data = reply.data;
      render();
    });
    select.addEventListener("change", () => {
      const layer = Number(select.value);
      setLayer(layer);
      group()?.pick?.(layer, state.head); // the matrix and the tiles' frame go to that layer too
      group()?.show?.(layer, state.head);
    });
    render();
    return ({ layer, head }) => {
      state.head = head;
      setLayer(layer);
    };
  };
  const sentenceFilter = (box, head, sentences) => {
    // BertViz's filter (sentence_b_start): the head view shows all of it, or one sentence's queries
    // over one sentence's keys; kept when another head is drawn there.
    const label = document.createElement("label");
    label.textContent = `${sentences.label} `;
    const select = document.createElement("select");
    select.className = "atlas-sentence-filter";
    sentences.labels.forEach((text, i) => select.append(new Option(text, String(i))));
    label.appendChild(select);
    box.insertBefore(label, head);
    const ranges = () => {
      const i = Number(select.value);
      if (!i) return { "xaxis.autorange": true, "yaxis.autorange": "reversed" };
      const [q0, q1] = sentences.queries[(i - 1) >> 1], [k0, k1] = sentences.keys[(i - 1) & 1];
      return { "xaxis.range": [k0 - 0.5, k1 - 0.5], "yaxis.range": [q1 - 0.5, q0 - 0.5] };
    };
    let applying = false;
    const apply = (div) => {
      if (applying) return;
      applying = true;
      window.__atlasPlotly.then((Plotly) => Plotly.relayout(div, ranges())).finally(() => (applying = false));
    };
    const plot = () => head.querySelector(".js-plotly-plot");
    select.addEventListener("change", () => plot() && apply(plot()));
    // a head drawn afresh comes with its whole range: the filter chosen is put back on it
    const follow = (div) =>
      div.on("plotly_afterplot", () => {
        const want = ranges()["xaxis.range"];
        const now = div.layout.xaxis?.range;
        if (want && !(now && now[0] === want[0] && now[1] === want[1])) apply(div);
      });
    const found = plot();
    if (found?.on) follow(found);
    else {
      const watch = new MutationObserver(() => {
        const div = plot();
        if (div?.on) {
          watch.disconnect();
          follow(div);
        }
      });
      watch.observe(head, { childList: true, subtree: true });
    }
  };
  const zoomable = (div, index) => {
    // A box drawn on a live long-input overview asks the kernel for the tokens under it.
    div.on("plotly_relayout", (event) => {
      const x = [event["xaxis.range[0]"], event["xaxis.range[1]"]];
      const y = [event["yaxis.range[0]"], event["yaxis.range[1]"]];
      if ([...x, ...y].every(Number.isFinite)) hooks.zoom(index, x, y); // not a double-click's reset
    });
  };
  const figures = (box, section, index) => {
    section.figures.forEach((figure, i) => {
      const { data, layout } = JSON.parse(figure);
      const div = block(box);
      window.__atlasPlotly
        .then((Plotly) => Plotly.newPlot(div, data, layout, section.config))
        .then(() => i === section.zoom && hooks.zoom && zoomable(div, index));
    });
    if (section.note) block(box, section.note, "p").style.color = "gray";
    if (section.zoom !== undefined && hooks.window) {
      const win = block(box);
      win.className = "atlas-window";
      hooks.window(index, win);
    }
  };
  if (spec.palette) {
    // BertViz's display_mode: a background and text colour of the view's own (the charts take the text colour)
    Object.assign(root.style, { background: spec.palette.background, color: spec.palette.color, padding: "8px" });
  }
  const boxes = [];
  if (spec.choose) {
    // BertViz's Encoder / Decoder / Cross selector: one section shown at a time
    const label = block(root, `${spec.choose.label} `, "label");
    const select = document.createElement("select");
    select.className = "atlas-section-choice";
    spec.choose.options.forEach((text, i) => select.append(new Option(text, String(i))));
    label.appendChild(select);
    select.addEventListener("change", () => {
      boxes.forEach((box, i) => (box.style.display = String(i) === select.value ? "" : "none"));
      const shown = boxes[Number(select.value)];
      window.__atlasPlotly?.then((Plotly) => shown.querySelectorAll(".js-plotly-plot").forEach((p) => Plotly.Plots.resize(p)));
    });
  }
  return Promise.all([load("live"), load("line")])
    .then(([live, line]) => {
      spec.sections.forEach((section, index) => {
        const box = block(root);
        box.className = "atlas-section";
        boxes.push(box);
        if (spec.choose && index > 0) box.style.display = "none";
        if (section.title) block(box, section.title, "h3");
        const opened = section.select ? headLines(box, section, index, line) : null; // BertViz's head view on top
        if (section.model) modelView(live, box, section, index, opened);
        if (section.figures) figures(box, section, index);
        if (section.line && !section.select) {
          const lines = block(box);
          lines.className = "atlas-line-view-box";
          line({ data: section.line, parentElement: lines });
        }
      });
    })
    .catch((err) => {
      block(root, `The views could not be drawn: ${err.message}`);
    });
}

function atlasNotebook(rootId) {
  // A saved file's or an HTML output's view: its data and scripts sit in the page beside it.
  const read = (suffix) => JSON.parse(document.getElementById(rootId + suffix).textContent);
  return atlasSections(document.getElementById(rootId), read("-data"), read("-js"));
}
