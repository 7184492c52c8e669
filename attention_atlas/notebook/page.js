// A notebook's views, mounted with the app's own scripts (ui/live_heads.js, ui/line_view.js).
//
// Each script is an ES module whose default export is a Streamlit component's body; here it is
// imported from a blob URL of its text (carried with the view: nothing is fetched) and called with
// the data the component would get. Plotly.js is whatever window.__atlasPlotly resolves to: the
// copy inlined in a saved file (page.py), or the one the live widget asked its kernel for
// (widget.js). `hooks` are the live widget's: `pick(section, value)` gets a tile click or an arrow
// key, and the opening head of a live section (which carries only its layer and head, `open`);
// `head(section, draw)` a function that draws a head figure the kernel sent; on a long-input
// view, `zoom(section, x, y)` gets a box drawn on the overview and `window(section, element)` the
// element where the kernel's window at full resolution goes.

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
  const modelView = (live, box, section, index) => {
    const { group, config } = section;
    const model = block(box);
    model.className = "atlas-model-view";
    const setStateValue = hooks.pick ? (name, value) => hooks.pick(index, value) : () => {};
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
        if (section.model) modelView(live, box, section, index);
        if (section.figures) figures(box, section, index);
        if (section.line) {
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
