// A notebook file's views, mounted with the app's own scripts (ui/live_heads.js, ui/line_view.js).
//
// Each script is an ES module whose default export is a Streamlit component's body; here it is
// imported from a blob URL of its text (carried in the file: nothing is fetched) and called with
// the data the component would get. Plotly.js was inlined just before this script: the copy it
// defined is handed to live_heads.js as the one it would load, and window.Plotly put back.
window.__atlasPlotly ||= Promise.resolve(window.Plotly);
window.Plotly = window.__atlasPlotlyBefore;

function atlasNotebook(rootId) {
  const root = document.getElementById(rootId);
  const read = (suffix) => JSON.parse(document.getElementById(rootId + suffix).textContent);
  const spec = read("-data");
  const sources = read("-js");
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
  Promise.all([load("live"), load("line")])
    .then(([live, line]) => {
      for (const section of spec.sections) {
        const box = block(root);
        box.className = "atlas-section";
        if (section.title) block(box, section.title, "h3");
        if (section.model) {
          const { group, config } = section;
          const model = block(box);
          model.className = "atlas-model-view";
          live({ data: { role: "model", group, config, ...section.model }, parentElement: model, setStateValue() {} });
          if (section.note) block(box, section.note, "p");
          block(box, "Click a tile to open its head below; in the head view (click it first), ←/→ step through the heads and ↑/↓ through the layers.", "p").style.color = "gray";
          const head = block(box);
          head.className = "atlas-head-view";
          live({ data: { role: "head", group, config, ...section.head }, parentElement: head, setStateValue() {} });
        }
        if (section.figures) {
          for (const figure of section.figures) {
            const { data, layout } = JSON.parse(figure);
            const div = block(box);
            window.__atlasPlotly.then((Plotly) => Plotly.newPlot(div, data, layout, section.config));
          }
          if (section.note) block(box, section.note, "p").style.color = "gray";
        }
        if (section.line) {
          const lines = block(box);
          lines.className = "atlas-line-view-box";
          line({ data: section.line, parentElement: lines });
        }
      }
    })
    .catch((err) => {
      block(root, `The views could not be drawn: ${err.message}`);
    });
}
