// The live widget's front end (anywidget): page.js's atlasSections precedes this text in one ES
// module (widget.py joins them). The view carries the tiles, then asks for the head it opens
// with; a tile click or an arrow key asks the kernel for that head, and the kernel sends its
// figure back; a layer the head view opens asks for that layer's lines; a box drawn on a long-input overview asks for the tokens under it at full
// resolution.
// Plotly.js is a model of its own that every view refers to (its `plotly`), gzipped: loaded once a
// page. A notebook saved with its widget state keeps that model too, and each view's `drawn`: the
// head each of its model views showed last, set here only (the kernel never has it), so that the
// notebook reopened before anything runs draws what was on screen.

async function gunzip(bytes) {
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  return new Response(stream).text();
}

function loadScript(text) {
  return new Promise((resolve, reject) => {
    const before = window.Plotly; // put back as it was: the page's own Plotly, if any, stays
    const script = document.createElement("script");
    script.src = URL.createObjectURL(new Blob([text], { type: "text/javascript" }));
    script.onload = () => {
      const ours = window.Plotly;
      window.Plotly = before;
      ours ? resolve(ours) : reject(new Error("Plotly.js did not define Plotly"));
    };
    script.onerror = () => reject(new Error("Plotly.js could not be loaded"));
    document.head.appendChild(script);
  });
}

function plotlyFrom(model, host) {
  window.__atlasPlotly ||= host
    .getModel(model.get("plotly"))
    .then((shared) => gunzip(shared.get("source")))
    .then(loadScript)
    .catch((err) => {
      window.__atlasPlotly = null;
      throw err;
    });
  return window.__atlasPlotly;
}

function backbone(proxy) {
  // The model behind anywidget's proxy of it: its change events carry it.
  let found = null;
  const grab = (model) => (found = model);
  proxy.on("change:_atlas_probe", grab);
  proxy.set("_atlas_probe", true);
  proxy.off("change:_atlas_probe", grab);
  proxy.set("_atlas_probe", undefined, { unset: true });
  return found;
}

function keepForSaving(models) {
  // JupyterLab saves the state of models whose comm is live only, and a model it restored from the
  // notebook has none: the notebook's next save (an autosave too: restoring marks it changed) would
  // drop every view of a reopened notebook (ipywidgets issue 3270). While a view of such a model is
  // on the page, it, its Plotly.js and their layouts count as live. Returns what lets them go when
  // the view goes.
  const kept = (window.__atlasKept ||= new Map()); // a restored model: how many views keep it (one page-wide map)
  const live = (model) => model.comm_live || (model.comm_live = true);
  const restored = models.filter((model) => model && model.comm === undefined);
  for (const model of restored) {
    if (!kept.has(model)) model.on("comm_live_update", () => kept.has(model) && live(model));
    kept.set(model, (kept.get(model) || 0) + 1);
    live(model);
  }
  return () =>
    restored.forEach((model) => {
      kept.set(model, kept.get(model) - 1);
      if (kept.get(model) > 0) return;
      kept.delete(model);
      model.comm_live = false;
    });
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

function render({ model, el, host }) {
  plotlyFrom(model, host).catch((err) => showError(el, err.message));
  const spec = structuredClone(model.get("spec"));
  const drawn = { ...model.get("drawn") };
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
    if (head && draws[head.section]) {
      drawn[head.section] = { figure: head.figure, shown: head.shown };
      draws[head.section](drawn[head.section]);
      model.set("drawn", { ...drawn }); // not saved to the kernel: kept for the notebook's widget state
    }
    if (msg?.lines && lineDraws[msg.lines.section]) lineDraws[msg.lines.section](msg.lines);
    if (msg?.window && windows[msg.window.section]) drawWindow(windows[msg.window.section], msg.window, spec);
    if (msg?.error) showError(el, msg.error);
  };
  model.on("msg:custom", reply);
  el.classList.add("atlas-notebook", "atlas-widget");
  el.style.fontFamily = "Arial, sans-serif";
  atlasSections(el, spec, model.get("scripts"), hooks).then(() =>
    Object.entries(drawn).forEach(([section, head]) => draws[section]?.(head)),
  );
  const shared = host.getModel(model.get("plotly")).then(backbone);
  const withLayout = (widget) => [widget, widget.get("layout")]; // a DOM widget's state names its layout's
  const release = shared.then((plotly) => keepForSaving([backbone(model), plotly].flatMap(withLayout)));
  return () => {
    model.off("msg:custom", reply);
    release.then((let_go) => let_go());
  };
}

export default { render };
