// The live widget's front end (anywidget): page.js's atlasSections precedes this text in one ES
// module (widget.py joins them). The view carries the tiles, then asks for the head it opens
// with; a tile click or an arrow key asks the kernel for that head, and the kernel sends its
// figure back; a layer the head view opens asks for that layer's lines; a box drawn on a long-input overview asks for the tokens under it at full
// resolution.
// Plotly.js comes from the kernel too, once per page: the first widget asks, the others wait.

function plotlyFrom(model) {
  window.__atlasPlotly ||= new Promise((resolve, reject) => {
    const listen = (msg) => {
      if (typeof msg?.plotly !== "string") return;
      model.off("msg:custom", listen);
      const before = window.Plotly; // put back as it was: the page's own Plotly, if any, stays
      const script = document.createElement("script");
      script.src = URL.createObjectURL(new Blob([msg.plotly], { type: "text/javascript" }));
      script.onload = () => {
        const ours = window.Plotly;
        window.Plotly = before;
        ours ? resolve(ours) : reject(new Error("Plotly.js did not define Plotly"));
      };
      script.onerror = () => {
        window.__atlasPlotly = null;
        reject(new Error("Plotly.js could not be loaded"));
      };
      document.head.appendChild(script);
    };
    model.on("msg:custom", listen);
    model.send({ need: "plotly" });
  });
  return window.__atlasPlotly;
}

function showError(el, text) {
  // What the kernel could not do (a head outside the record, a message it did not understand).
  const note = el.querySelector(".atlas-widget-error") || el.appendChild(document.createElement("p"));
  note.className = "atlas-widget-error";
  note.textContent = text;
}

function drawWindow(element, win, spec) {
  // The kernel's window at full resolution under a box drawn on a long-input overview.
  const { data, layout } = JSON.parse(win.figure);
  element.replaceChildren();
  const chart = element.appendChild(document.createElement("div"));
  chart.className = "atlas-window-chart";
  if (win.note) element.appendChild(document.createElement("p")).textContent = win.note;
  window.__atlasPlotly.then((Plotly) => Plotly.newPlot(chart, data, layout, spec.sections[win.section].config));
}

let views = 0; // each rendering of a widget gets its own head groups (a widget may be shown twice)

function render({ model, el }) {
  plotlyFrom(model);
  const spec = structuredClone(model.get("spec"));
  const suffix = `-v${++views}`;
  for (const section of spec.sections) if (section.group) section.group += suffix;
  const draws = [];
  const lineDraws = [];
  const windows = [];
  const hooks = {
    pick: (section, value) => model.send({ pick: { section, layer: value.layer, head: value.head } }),
    head: (section, draw) => {
      draws[section] = draw;
    },
    layer: (section, layer) => model.send({ lines: { section, layer } }),
    lines: (section, draw) => {
      lineDraws[section] = draw;
    },
    zoom: (section, x, y) => model.send({ zoom: { section, x, y } }),
    window: (section, element) => {
      windows[section] = element;
    },
  };
  const reply = (msg) => {
    const head = msg?.head;
    if (head && draws[head.section]) draws[head.section]({ figure: head.figure, shown: head.shown });
    if (msg?.lines && lineDraws[msg.lines.section]) lineDraws[msg.lines.section](msg.lines);
    if (msg?.window && windows[msg.window.section]) drawWindow(windows[msg.window.section], msg.window, spec);
    if (msg?.error) showError(el, msg.error);
  };
  model.on("msg:custom", reply);
  el.classList.add("atlas-notebook", "atlas-widget");
  el.style.fontFamily = "Arial, sans-serif";
  atlasSections(el, spec, model.get("scripts"), hooks);
  return () => model.off("msg:custom", reply);
}

export default { render };
