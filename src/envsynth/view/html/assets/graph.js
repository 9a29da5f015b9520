// The tool dependency graph of one app page: tools in entity boxes at preset positions.
// All edges are faint until a tool is picked; then only its edges and neighbours stand out.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("graph-data").textContent);
  var cy = cytoscape({
    container: document.getElementById("graph"),
    elements: data.elements,
    layout: { name: "preset", padding: 30 },
    wheelSensitivity: 0.3,
    style: [
      { selector: "node[type = 'entity']", style: { "label": "data(label)", "text-valign": "top", "font-size": 15,
        "font-weight": "bold", "background-color": "#f0f3f7", "border-color": "#9aa7b5", "border-width": 1, "padding": 14 } },
      { selector: "node[type = 'tool']", style: { "label": "data(label)", "shape": "round-rectangle", "width": 190,
        "height": 30, "font-size": 11, "text-valign": "center", "background-color": "#dce8f5", "border-width": 1,
        "border-color": "#3b6ea5" } },
      { selector: "node[mode = 'write']", style: { "background-color": "#fbe3cc", "border-color": "#d9822b" } },
      { selector: "edge", style: { "width": 1, "curve-style": "bezier", "target-arrow-shape": "triangle",
        "arrow-scale": 0.7, "opacity": 0.08, "line-color": "#3b6ea5", "target-arrow-color": "#3b6ea5" } },
      { selector: "edge[main = 'state']", style: { "line-color": "#4c9a5b", "target-arrow-color": "#4c9a5b" } },
      { selector: "edge[main = 'logic']", style: { "line-color": "#b34747", "target-arrow-color": "#b34747", "line-style": "dashed" } },
      { selector: ".faded", style: { "opacity": 0.15 } },
      { selector: "edge.lit", style: { "opacity": 0.9, "width": 2 } },
      { selector: "node.picked", style: { "border-width": 3, "border-color": "#111" } },
      { selector: ".hidden", style: { "display": "none" } }
    ]
  });
  var side = document.getElementById("graph-side");
  function kindsShown() {
    var on = {};
    document.querySelectorAll("input[data-kind]").forEach(function (b) { on[b.dataset.kind] = b.checked; });
    return on;
  }
  function applyFilter() {
    var on = kindsShown();
    cy.edges().forEach(function (e) {
      var show = e.data("kinds").split(" ").some(function (k) { return on[k]; });
      e.toggleClass("hidden", !show);
    });
  }
  function describe(node) {
    var out = node.outgoers("edge:visible"), inc = node.incomers("edge:visible");
    var html = "<h3>" + node.id() + "</h3><p>" + node.data("kind") + " (" + node.data("mode") + ")</p>";
    function list(title, edges, end) {
      var items = edges.map(function (e) { return "<li>" + e[end]().id() + " <span class='tag'>" + e.data("kinds") + "</span></li>"; });
      return "<h4>" + title + " (" + edges.length + ")</h4><ul>" + items.join("") + "</ul>";
    }
    side.innerHTML = html + list("leads to", out, "target") + list("follows", inc, "source");
  }
  cy.on("tap", "node[type = 'tool']", function (evt) {
    var node = evt.target;
    cy.elements().removeClass("lit picked faded");
    var hood = node.closedNeighborhood();
    cy.nodes("[type = 'tool']").not(hood).addClass("faded");
    node.connectedEdges().addClass("lit");
    node.addClass("picked");
    describe(node);
  });
  cy.on("tap", function (evt) {
    if (evt.target === cy) { cy.elements().removeClass("lit picked faded"); side.innerHTML = side.dataset.help; }
  });
  document.querySelectorAll("input[data-kind]").forEach(function (b) { b.addEventListener("change", applyFilter); });
  side.dataset.help = side.innerHTML;
  applyFilter();
  window.envsynthGraph = { cy: cy, tools: data.tools, pairs: data.pairs };
  document.getElementById("graph").dataset.ready = "1";
})();
