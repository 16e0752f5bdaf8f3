// trtmc-bench analyze report. Reads window.TRTMC_REPORT (data.js) and renders it with DOM APIs
// only: every string from the input goes through textContent or an attribute, never innerHTML.
// The only HTML inserted as markup is analyze.md, rendered by trtmc-bench with raw HTML escaped.
(function () {
  "use strict";

  var errors = [];
  window.addEventListener("error", function (e) { errors.push(String(e.message || e)); });
  // A self-check for tests: input text that turned into markup and ran would call alert().
  window.alert = function () { errors.push("alert() was called"); };
  window.addEventListener("unhandledrejection", function (e) { errors.push(String(e.reason)); });

  var COLORS = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac",
    "#1f77b4", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#17becf"];
  var ROW_PAGE = 300;
  var FULL_GRAPH_LIMIT = 600;
  var SVG_NS = "http://www.w3.org/2000/svg";

  var state = { backend: 0, sortKey: "index", sortAsc: true, rowsShown: ROW_PAGE, selected: null, breakdownKey: "by_type",
    graph: { scale: 1, tx: 0, ty: 0, focus: null } };

  function $(id) { return document.getElementById(id); }

  // el("td", {class: "num"}, "text" | Node | [children])
  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    if (attrs) {
      Object.keys(attrs).forEach(function (k) {
        var v = attrs[k];
        if (v === undefined || v === null || v === false) { return; }
        if (k === "class") { node.className = v; } else if (k === "onclick") { node.addEventListener("click", v); } else { node.setAttribute(k, String(v)); }
      });
    }
    append(node, children);
    return node;
  }
  function append(node, children) {
    if (children === undefined || children === null) { return node; }
    if (!Array.isArray(children)) { children = [children]; }
    children.forEach(function (c) {
      if (c === undefined || c === null) { return; }
      node.appendChild(typeof c === "object" && c.nodeType ? c : document.createTextNode(String(c)));
    });
    return node;
  }
  function clear(node) { while (node.firstChild) { node.removeChild(node.firstChild); } return node; }
  function svg(tag, attrs) {
    var node = document.createElementNS(SVG_NS, tag);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, String(attrs[k])); });
    return node;
  }

  function fmtMs(v) {
    if (v === null || v === undefined || !isFinite(v)) { return "–"; }
    return Math.abs(v) < 0.01 ? v.toFixed(4) + " ms" : v.toFixed(3) + " ms";
  }
  function fmtPct(v) { return v === null || v === undefined || !isFinite(v) ? "–" : v.toFixed(2) + "%"; }
  function short(s, n) { s = String(s === undefined || s === null ? "" : s); return s.length > n ? s.slice(0, n - 1) + "…" : s; }
  function dims(d) { return d ? "[" + d.join(", ") + "]" : "–"; }
  function colorFor(name, palette) {
    if (!palette[name]) { palette[name] = COLORS[Object.keys(palette).length % COLORS.length]; }
    return palette[name];
  }
  var familyColors = {};

  var DATA = window.TRTMC_REPORT;
  function fail(msg) {
    var b = $("load-error");
    b.hidden = false;
    b.textContent = msg;
    finish();
  }
  function finish() {
    document.body.setAttribute("data-report-ready", "true");
    document.body.setAttribute("data-report-errors", String(errors.length));
    $("self-check").textContent = "ready errors=" + errors.length + " imgs=" + document.getElementsByTagName("img").length +
      (errors.length ? " first=" + errors[0] : "");
  }
  if (!DATA || !DATA.analysis || !Array.isArray(DATA.analysis.backends)) {
    fail("The report data (data.js) is missing or unreadable. Re-create the report with `trtmc-bench analyze package`.");
    return;
  }
  var A = DATA.analysis;
  var backends = A.backends;

  function current() { return backends[state.backend] || backends[0]; }
  function isTimed(b) { return b.layers.some(function (l) { return l.timing; }); }

  // ---------- header, tabs, summary ----------
  function renderHeader() {
    var name = A.model && A.model.name ? A.model.name : null;
    var comps = A.model && A.model.components && A.model.components.length ? " (" + A.model.components.join(", ") + ")" : "";
    $("title").textContent = (name ? name + comps + " — " : "") + runtimeTitle();
    document.title = $("title").textContent;
    var sub = [];
    if (name) { sub.push("model name: " + A.model.confidence + " confidence (" + A.model.evidence.join("; ") + ")"); } else { sub.push("model name not inferred with confidence"); }
    if (A.input && A.input.folder) { sub.push("inputs: " + A.input.folder); }
    $("subtitle").textContent = sub.join(" · ");
    var st = A.validation.status;
    var pill = $("overall-status");
    pill.className = "pill " + st;
    pill.textContent = st + ": " + A.validation.passed_count + "/" + A.validation.backend_count + " backends usable";
    $("footer").textContent = "Generated by " + A.generator.name + " " + A.generator.version + " · schema " + A.schema +
      ". The per-layer sum of averages is not end-to-end latency: profiling adds synchronization between layers.";
  }

  // "TensorRT analysis report", "tract analysis report", or the runtimes of a mixed package.
  function runtimeTitle() {
    var names = [];
    backends.forEach(function (b) {
      var n = b.runtime ? b.runtime.display_name : null;
      if (n && names.indexOf(n) < 0) { names.push(n); }
    });
    if (names.length === 1) { return names[0] + " analysis report"; }
    if (names.length > 1) { return "Layer profile analysis report (" + names.join(", ") + ")"; }
    return "Layer profile analysis report";
  }

  function renderTabs() {
    var nav = clear($("backend-tabs"));
    backends.forEach(function (b, i) {
      var cls = (i === state.backend ? "active " : "") + (b.validation.status === "failed" ? "failed" : "");
      nav.appendChild(el("button", { type: "button", class: cls, title: b.label, onclick: function () { selectBackend(i); } },
        b.label + (b.validation.status === "failed" ? " ✗" : "")));
    });
  }

  function modeText(b) { return b.validation.analysis_mode.replace("_", " "); }

  function renderSummary() {
    var box = clear($("summary"));
    var head = el("tr", null, ["backend", "status", "mode", "layers", "Σ avg per inference", "iterations", "largest layer", "model category"].map(function (h, i) {
      return el("th", { class: i === 3 || i === 4 ? "num" : null }, h);
    }));
    var rows = backends.map(function (b, i) {
      var top = b.hot_layers.length ? b.layers[b.hot_layers[0]] : null;
      var cat = b.model ? b.model.category + " (" + b.model.confidence + ")" : "–";
      return el("tr", { class: "clickable" + (i === state.backend ? " selected" : ""), onclick: function () { selectBackend(i); } }, [
        el("td", { class: "name" }, b.label),
        el("td", { class: "status-" + b.validation.status }, b.validation.status),
        el("td", null, modeText(b)),
        el("td", { class: "num" }, String(b.layer_count)),
        el("td", { class: "num" }, b.timing ? fmtMs(b.timing.average_inference_ms) : "–"),
        el("td", null, b.count ? b.count + " (" + b.count_source.replace(/_/g, " ") + ")" : "–"),
        el("td", { class: "name" }, top && top.timing ? short(top.name, 80) + " · " + fmtPct(top.timing.percentage) : "–"),
        el("td", null, cat)
      ]);
    });
    box.appendChild(el("table", { class: "grid" }, [el("thead", null, head), el("tbody", null, rows)]));
    A.validation.warnings.forEach(function (w) { box.appendChild(el("p", { class: "banner warn" }, w)); });
    var b = current();
    if (b.validation.status === "failed") {
      var first = b.validation.messages.filter(function (m) { return m.level === "error"; })[0];
      box.appendChild(el("p", { class: "banner error" }, "Backend " + b.label + " failed validation: " + (first ? first.message : "see Validation")));
    } else if (!b.validation.latency_interpretation) {
      box.appendChild(el("p", { class: "banner warn" }, "Backend " + b.label + " is " + modeText(b) + ": graph and layer inspection only; latency is not interpreted."));
    }
    if (b.end_to_end && b.end_to_end.latency_ms) {
      var e = b.end_to_end.latency_ms;
      box.appendChild(el("p", null, "End-to-end latency (--exportTimes, " + b.end_to_end.iterations + " iterations): mean " + fmtMs(e.mean) +
        ", median " + fmtMs(e.median) + ", p99 " + fmtMs(e.p99) + "."));
    }
    if (b.runtime) {
      box.appendChild(el("p", { class: "muted" }, "Runtime: " + b.runtime.display_name + " (" + b.runtime.evidence.join("; ") + ")"));
    }
    if (b.export && b.export.era) {
      var era = b.export.era;
      box.appendChild(el("p", { class: "muted" }, "Export era: " + era.label + (era.evidence.length ? " — from: " + era.evidence.join("; ") : "") +
        (era.set_aside.length ? " — " + era.set_aside.join("; ") : "")));
    }
  }

  // ---------- analyze.md ----------
  function renderMarkdown() {
    if (typeof DATA.analyze_md_html === "string" && DATA.analyze_md_html.length) {
      $("analysis-panel").hidden = false;
      // Produced by trtmc-bench from analyze.md with raw HTML escaped and unsafe links removed.
      $("analysis-md").innerHTML = DATA.analyze_md_html;
    }
  }

  // ---------- findings and validation ----------
  function renderFindings() {
    var b = current();
    var issues = clear($("issues"));
    if (!b.findings.issues.length) { issues.appendChild(el("li", { class: "muted" }, "No issues ranked for this backend.")); }
    b.findings.issues.forEach(function (i) {
      var ev = el("ul", null, i.evidence.map(function (e) { return el("li", null, e); }));
      var item = el("li", null, [
        el("span", { class: "issue-title" }, i.title),
        el("span", { class: "badge " + i.confidence }, i.confidence + " confidence"),
        el("span", { class: "badge" }, "score " + i.score.toFixed(1)),
        el("div", null, [el("span", { class: "label" }, "Evidence (facts)"), ev]),
        el("div", null, [el("span", { class: "label" }, "Hypothesis: "), i.hypothesis]),
        el("div", null, [el("span", { class: "label" }, "Next check: "), i.next_check])
      ]);
      if (i.layers && i.layers.length) {
        item.appendChild(el("button", { type: "button", onclick: function () { showLayerSet(i.layers, i.title); } }, "Show " + i.layers.length + " layer(s)"));
      }
      issues.appendChild(item);
    });
    fillList($("facts"), b.findings.facts, "No facts (the backend failed validation).");
    fillList($("positives"), b.findings.positives, "None.");
  }
  function fillList(node, items, empty) {
    clear(node);
    if (!items.length) { node.appendChild(el("li", { class: "muted" }, empty)); }
    items.forEach(function (t) { node.appendChild(el("li", null, t)); });
  }

  function renderValidation() {
    var b = current();
    var t = clear($("checks"));
    t.appendChild(el("tr", null, [el("th", null, "check"), el("th", null, "status"), el("th", null, "detail")]));
    b.validation.checks.forEach(function (c) {
      t.appendChild(el("tr", null, [el("td", null, c.name.replace(/_/g, " ")), el("td", { class: "status-" + c.status }, c.status), el("td", null, c.detail)]));
    });
    var m = clear($("messages"));
    if (!b.validation.messages.length) { m.appendChild(el("li", { class: "muted" }, "No messages.")); }
    b.validation.messages.forEach(function (x) { m.appendChild(el("li", { class: x.level }, x.level + ": " + x.message)); });
    var src = b.sources;
    m.appendChild(el("li", { class: "muted" }, "sources: layers " + (src.layers || "–") + "; profile " + (src.profile || "–") + (src.times ? "; times " + src.times : "")));
  }

  // ---------- charts ----------
  function renderTopLayers() {
    var b = current();
    var box = clear($("top-layers"));
    var top = b.hot_layers.slice(0, 15).map(function (i) { return b.layers[i]; }).filter(function (l) { return l && l.timing; });
    if (!top.length) { box.appendChild(el("p", { class: "muted" }, "No per-layer times for this backend.")); return; }
    var max = Math.max.apply(null, top.map(function (l) { return l.timing.percentage; })) || 1;
    top.forEach(function (l) {
      var fill = el("div", { class: "bar-fill" });
      fill.style.width = Math.max(0.5, 100 * l.timing.percentage / max) + "%";
      fill.style.background = colorFor(l.family, familyColors);
      box.appendChild(el("div", { class: "bar", title: l.name, onclick: function () { selectLayer(l.index); } }, [
        el("span", { class: "bar-name" }, l.name), el("div", { class: "bar-track" }, fill), el("span", { class: "bar-value" }, fmtPct(l.timing.percentage))
      ]));
    });
  }

  function renderBreakdown() {
    var b = current();
    var chart = clear($("breakdown-chart"));
    var table = clear($("breakdown-table"));
    var conc = clear($("concentration"));
    if (!b.breakdowns) { chart.appendChild(el("p", { class: "muted" }, "No breakdown for a failed backend.")); return; }
    var items = b.breakdowns[state.breakdownKey] || [];
    var timed = items.some(function (x) { return x.percentage !== null; });
    var total = items.reduce(function (s, x) { return s + (timed ? (x.percentage || 0) : x.count); }, 0) || 1;
    var palette = {};
    var stack = el("div", { class: "stack", role: "img", "aria-label": "breakdown chart" });
    items.forEach(function (x) {
      var v = timed ? (x.percentage || 0) : x.count;
      var part = el("span", { title: x.name + ": " + (timed ? fmtPct(x.percentage) : x.count + " layers") });
      part.style.width = (100 * v / total) + "%";
      part.style.background = colorFor(x.name, palette);
      stack.appendChild(part);
    });
    chart.appendChild(stack);
    table.appendChild(el("tr", null, [el("th", null, "name"), el("th", { class: "num" }, "layers"), el("th", { class: "num" }, "Σ avg"), el("th", { class: "num" }, "share")]));
    items.forEach(function (x) {
      table.appendChild(el("tr", { class: "clickable", onclick: function () { filterBy(state.breakdownKey, x.name); } }, [
        el("td", null, [el("span", { class: "swatch" }), x.name]),
        el("td", { class: "num" }, String(x.count)),
        el("td", { class: "num" }, fmtMs(x.avg_ms)),
        el("td", { class: "num" }, timed ? fmtPct(x.percentage) : (100 * x.count / total).toFixed(1) + "% of layers")
      ]));
      table.lastChild.querySelector(".swatch").style.background = colorFor(x.name, palette);
    });
    if (b.breakdowns.concentration.length) {
      conc.appendChild(el("tr", null, [el("th", null, "category"), el("th", { class: "num" }, "layers"), el("th", { class: "num" }, "share"), el("th", null, "flag")]));
      b.breakdowns.concentration.forEach(function (c) {
        conc.appendChild(el("tr", null, [el("td", null, c.category), el("td", { class: "num" }, String(c.count)), el("td", { class: "num" }, fmtPct(c.percentage)),
          el("td", { class: c.flagged ? "status-warning" : "status-skipped" }, c.flagged ? "≥ " + c.threshold + "%" : "below " + c.threshold + "%")]));
      });
    } else {
      conc.appendChild(el("tr", null, el("td", { class: "muted" }, "Needs a matching profile.")));
    }
  }

  // ---------- layer table ----------
  var filters = { text: "", type: "", family: "", precision: "", min: 0, only: null, onlyTitle: "" };

  function fillSelect(select, values, label) {
    clear(select);
    select.appendChild(el("option", { value: "" }, "all " + label));
    values.forEach(function (v) { select.appendChild(el("option", { value: v }, v)); });
  }
  function distinct(list) {
    var seen = {};
    list.forEach(function (v) { seen[v] = true; });
    return Object.keys(seen).sort();
  }

  function setupFilters() {
    var b = current();
    fillSelect($("filter-type"), distinct(b.layers.map(function (l) { return l.type; })), "types");
    fillSelect($("filter-family"), distinct(b.layers.map(function (l) { return l.family; })), "families");
    fillSelect($("filter-precision"), distinct(b.layers.map(function (l) { return l.precision || "unknown"; })), "precisions");
    $("filter-type").value = filters.type;
    $("filter-family").value = filters.family;
    $("filter-precision").value = filters.precision;
  }

  function matches(l) {
    if (filters.only && !filters.only[l.index]) { return false; }
    if (filters.type && l.type !== filters.type) { return false; }
    if (filters.family && l.family !== filters.family) { return false; }
    if (filters.precision && (l.precision || "unknown") !== filters.precision) { return false; }
    if (filters.min > 0 && (!l.timing || l.timing.percentage < filters.min)) { return false; }
    if (filters.text) {
      var hay = (l.name + " " + (l.tactic || "") + " " + l.origins.join(" ") + " " + l.type).toLowerCase();
      if (hay.indexOf(filters.text) < 0) { return false; }
    }
    return true;
  }

  var COLUMNS = [
    { key: "index", label: "#", num: true, get: function (l) { return l.index; } },
    { key: "name", label: "name", get: function (l) { return l.name; } },
    { key: "type", label: "type", get: function (l) { return l.type; } },
    { key: "precision", label: "precision", get: function (l) { return l.precision || ""; } },
    { key: "avg", label: "avg", num: true, get: function (l) { return l.timing ? l.timing.avg_ms : -1; } },
    { key: "median", label: "median", num: true, get: function (l) { return l.timing && l.timing.median_ms !== null ? l.timing.median_ms : -1; } },
    { key: "share", label: "share", num: true, get: function (l) { return l.timing ? l.timing.percentage : -1; } },
    { key: "tactic", label: "tactic", get: function (l) { return l.tactic || ""; } }
  ];

  function renderLayerTable() {
    var b = current();
    var t = clear($("layer-table"));
    var head = el("tr", null, COLUMNS.map(function (c) {
      var cls = (c.num ? "num " : "") + (state.sortKey === c.key ? "sorted" + (state.sortAsc ? " asc" : "") : "");
      return el("th", { class: cls, scope: "col", onclick: function () { sortBy(c.key); } }, c.label);
    }));
    t.appendChild(el("thead", null, head));
    var col = COLUMNS.filter(function (c) { return c.key === state.sortKey; })[0] || COLUMNS[0];
    var rows = b.layers.filter(matches);
    rows.sort(function (x, y) {
      var a = col.get(x), c = col.get(y);
      var r = a < c ? -1 : a > c ? 1 : x.index - y.index;
      return state.sortAsc ? r : -r;
    });
    var body = el("tbody");
    rows.slice(0, state.rowsShown).forEach(function (l) {
      body.appendChild(el("tr", { class: "clickable" + (state.selected === l.index ? " selected" : ""), "data-layer": l.index, onclick: function () { selectLayer(l.index); } }, [
        el("td", { class: "num" }, String(l.index)),
        el("td", { class: "name" }, l.name),
        el("td", null, l.type),
        el("td", null, l.precision || "–"),
        el("td", { class: "num" }, l.timing ? fmtMs(l.timing.avg_ms) : "–"),
        el("td", { class: "num" }, l.timing && l.timing.median_ms !== null ? fmtMs(l.timing.median_ms) : "–"),
        el("td", { class: "num" }, l.timing ? fmtPct(l.timing.percentage) : "–"),
        el("td", { class: "tactic" }, l.tactic || "–")
      ]));
    });
    t.appendChild(body);
    var shown = Math.min(rows.length, state.rowsShown);
    $("layer-count").textContent = "showing " + shown + " of " + rows.length + " matching (" + b.layers.length + " layers)" +
      (filters.only ? " · limited to: " + filters.onlyTitle : "");
    $("layer-more").hidden = rows.length <= state.rowsShown;
  }

  function sortBy(key) {
    if (state.sortKey === key) { state.sortAsc = !state.sortAsc; } else {
      state.sortKey = key;
      state.sortAsc = !(key === "avg" || key === "median" || key === "share");
    }
    renderLayerTable();
  }
  function filterBy(key, value) {
    filters.type = ""; filters.family = ""; filters.precision = "";
    if (key === "by_type") { filters.type = value; } else if (key === "by_family") { filters.family = value; } else if (key === "by_precision") { filters.precision = value; } else { filters.text = value.toLowerCase(); $("layer-search").value = value; }
    setupFilters();
    state.rowsShown = ROW_PAGE;
    renderLayerTable();
    $("layers-panel").scrollIntoView({ block: "start" });
  }
  function showLayerSet(indices, title) {
    filters.only = {};
    indices.forEach(function (i) { filters.only[i] = true; });
    filters.onlyTitle = title;
    state.rowsShown = ROW_PAGE;
    renderLayerTable();
    $("layers-panel").scrollIntoView({ block: "start" });
  }

  function wireFilters() {
    $("layer-search").addEventListener("input", function (e) { filters.text = e.target.value.trim().toLowerCase(); state.rowsShown = ROW_PAGE; renderLayerTable(); });
    $("filter-type").addEventListener("change", function (e) { filters.type = e.target.value; renderLayerTable(); });
    $("filter-family").addEventListener("change", function (e) { filters.family = e.target.value; renderLayerTable(); });
    $("filter-precision").addEventListener("change", function (e) { filters.precision = e.target.value; renderLayerTable(); });
    $("filter-min").addEventListener("input", function (e) { filters.min = parseFloat(e.target.value) || 0; renderLayerTable(); });
    $("filter-clear").addEventListener("click", function () {
      filters = { text: "", type: "", family: "", precision: "", min: 0, only: null, onlyTitle: "" };
      $("layer-search").value = ""; $("filter-min").value = "0";
      setupFilters(); renderLayerTable();
    });
    $("layer-more").addEventListener("click", function () { state.rowsShown += ROW_PAGE * 3; renderLayerTable(); });
    $("breakdown-key").addEventListener("change", function (e) { state.breakdownKey = e.target.value; renderBreakdown(); });
  }

  // ---------- details ----------
  function tensorTable(title, tensors) {
    if (!tensors.length) { return el("p", { class: "muted" }, title + ": none"); }
    return el("div", null, [el("h3", null, title), el("table", { class: "grid" }, [el("tr", null, [el("th", null, "tensor"), el("th", null, "dimensions"), el("th", null, "format")])].concat(
      tensors.map(function (t) { return el("tr", null, [el("td", { class: "name" }, t.name || "(unnamed)"), el("td", null, dims(t.dims)), el("td", null, t.format || "–")]); })))]);
  }
  function renderDetails() {
    var box = clear($("details"));
    var b = current();
    var l = state.selected === null ? null : b.layers[state.selected];
    if (!l) { box.className = "muted"; box.textContent = "Select a layer in the table, a chart or the graph."; return; }
    box.className = "";
    var kv = el("div", { class: "kv" });
    function row(k, v) { kv.appendChild(el("div", null, k)); kv.appendChild(el("div", null, v === null || v === undefined || v === "" ? "–" : String(v))); }
    row("name", l.name);
    row("index", l.index);
    row("type (raw)", l.type + (l.type !== l.raw_type ? " (" + l.raw_type + ")" : ""));
    row("family", l.family + (l.family_from_name ? " (guessed from the name)" : ""));
    row("parameter type", l.parameter_type);
    row("precision in → out", (l.precision || "?") + " → " + (l.output_precision || "?"));
    row("tactic", l.tactic);
    row("stream", l.stream);
    row("source nodes", l.origins.join(", "));
    row("tags", l.tags.join(", "));
    if (l.timing) { row("average / median", fmtMs(l.timing.avg_ms) + " / " + fmtMs(l.timing.median_ms)); row("share of time", fmtPct(l.timing.percentage)); row("total over iterations", fmtMs(l.timing.time_ms)); }
    box.appendChild(kv);
    box.appendChild(tensorTable("Inputs", l.inputs));
    box.appendChild(tensorTable("Outputs", l.outputs));
  }

  function selectLayer(index) {
    state.selected = index;
    renderDetails();
    var rows = $("layer-table").querySelectorAll("tr.selected");
    for (var i = 0; i < rows.length; i++) { rows[i].classList.remove("selected"); }
    var row = $("layer-table").querySelector('tr[data-layer="' + index + '"]');
    if (row) { row.classList.add("selected"); }
    if (graphInfo() && graphInfo().big) { state.graph.focus = index; renderGraph(); } else { highlightGraphNode(); }
  }

  // ---------- graph ----------
  var graphCache = {};
  function graphInfo() {
    var b = current();
    if (!b.graph) { return null; }
    if (graphCache[state.backend]) { return graphCache[state.backend]; }
    var n = b.layers.length, succ = [], pred = [];
    for (var i = 0; i < n; i++) { succ.push([]); pred.push([]); }
    b.graph.edges.forEach(function (e) { succ[e[0]].push(e[1]); pred[e[1]].push(e[0]); });
    graphCache[state.backend] = { succ: succ, pred: pred, big: n > FULL_GRAPH_LIMIT };
    return graphCache[state.backend];
  }

  function neighbourhood(g, center, radius) {
    var seen = {}; seen[center] = 0;
    var queue = [center], out = [center];
    while (queue.length && out.length < FULL_GRAPH_LIMIT) {
      var v = queue.shift();
      if (seen[v] >= radius) { continue; }
      g.succ[v].concat(g.pred[v]).forEach(function (w) {
        if (seen[w] === undefined && out.length < FULL_GRAPH_LIMIT) { seen[w] = seen[v] + 1; queue.push(w); out.push(w); }
      });
    }
    return out.sort(function (a, b) { return a - b; });
  }

  // Layered layout: longest-path ranks, then two barycentre sweeps to reduce crossings.
  function layout(nodes, g) {
    var inSet = {}; nodes.forEach(function (v) { inSet[v] = true; });
    var rank = {};
    nodes.forEach(function (v) {
      var r = 0;
      g.pred[v].forEach(function (p) { if (inSet[p] && p < v && rank[p] !== undefined) { r = Math.max(r, rank[p] + 1); } });
      rank[v] = r;
    });
    var ranks = [];
    nodes.forEach(function (v) { (ranks[rank[v]] = ranks[rank[v]] || []).push(v); });
    var pos = {};
    ranks.forEach(function (row) { row.forEach(function (v, i) { pos[v] = i; }); });
    for (var sweep = 0; sweep < 2; sweep++) {
      ranks.forEach(function (row, r) {
        if (r === 0) { return; }
        var bary = {};
        row.forEach(function (v) {
          var ps = g.pred[v].filter(function (p) { return inSet[p] && rank[p] < r; });
          bary[v] = ps.length ? ps.reduce(function (s, p) { return s + pos[p]; }, 0) / ps.length : pos[v];
        });
        row.sort(function (a, b) { return bary[a] - bary[b] || a - b; });
        row.forEach(function (v, i) { pos[v] = i; });
      });
    }
    var W = 170, H = 34, GX = 24, GY = 30, coords = {}, width = 0;
    ranks.forEach(function (row, r) {
      var rowWidth = row.length * (W + GX);
      width = Math.max(width, rowWidth);
      row.forEach(function (v, i) { coords[v] = { x: i * (W + GX), y: r * (H + GY), rowWidth: rowWidth }; });
    });
    nodes.forEach(function (v) { coords[v].x += (width - coords[v].rowWidth) / 2; });
    return { coords: coords, width: width, height: ranks.length * (H + GY), W: W, H: H, inSet: inSet };
  }

  function renderGraph() {
    var box = clear($("graph"));
    var legend = clear($("graph-legend"));
    var b = current();
    var g = graphInfo();
    if (!g) { box.appendChild(el("p", { class: "muted" }, "No graph: the export has no tensors (names only) or the backend failed.")); $("graph-status").textContent = ""; return; }
    var radius = parseInt($("graph-radius").value, 10);
    var nodes;
    if (!g.big && (radius === 0 || state.graph.focus === null)) {
      nodes = b.layers.map(function (l) { return l.index; });
      $("graph-status").textContent = "all " + nodes.length + " layers";
    } else {
      var center = state.graph.focus !== null ? state.graph.focus : (b.hot_layers[0] !== undefined ? b.hot_layers[0] : 0);
      nodes = neighbourhood(g, center, radius === 0 ? 1000000 : radius);
      $("graph-status").textContent = nodes.length + " of " + b.layers.length + " layers around " + short(b.layers[center].name, 60) +
        (g.big ? " (large graph: showing a neighbourhood; pick a layer or search to move)" : "");
    }
    var lay = layout(nodes, g);
    var root = svg("svg", { role: "img", "aria-label": "layer graph" });
    var view = svg("g", { class: "view" });
    root.appendChild(view);
    var edges = svg("g");
    nodes.forEach(function (v) {
      g.succ[v].forEach(function (w) {
        if (!lay.inSet[w]) { return; }
        var a = lay.coords[v], c = lay.coords[w];
        var x1 = a.x + lay.W / 2, y1 = a.y + lay.H, x2 = c.x + lay.W / 2, y2 = c.y, my = (y1 + y2) / 2;
        edges.appendChild(svg("path", { class: "edge", d: "M" + x1 + "," + y1 + " C" + x1 + "," + my + " " + x2 + "," + my + " " + x2 + "," + y2 }));
      });
    });
    view.appendChild(edges);
    var used = {};
    nodes.forEach(function (v) {
      var l = b.layers[v], c = lay.coords[v];
      used[l.family] = true;
      var node = svg("g", { class: "node" + (state.selected === v ? " selected" : ""), "data-layer": v, transform: "translate(" + c.x + "," + c.y + ")" });
      node.appendChild(svg("rect", { width: lay.W, height: lay.H, rx: 5, fill: colorFor(l.family, familyColors), "fill-opacity": 0.85 }));
      var label = svg("text", { x: 6, y: 14 });
      label.textContent = short(l.name, 26);
      var sub = svg("text", { x: 6, y: 28 });
      sub.textContent = short(l.type, 16) + (l.timing ? " · " + fmtPct(l.timing.percentage) : "");
      var title = svg("title");
      title.textContent = l.name + " (" + l.type + ")";
      node.appendChild(title); node.appendChild(label); node.appendChild(sub);
      node.addEventListener("click", function (e) { e.stopPropagation(); selectLayer(v); });
      view.appendChild(node);
    });
    box.appendChild(root);
    Object.keys(used).sort().forEach(function (f) {
      var sw = el("span", { class: "swatch" });
      sw.style.background = colorFor(f, familyColors);
      legend.appendChild(el("span", null, [sw, f]));
    });
    state.graph.layout = lay;
    fitGraph();
    wirePanZoom(root);
  }

  function applyTransform() {
    var view = $("graph").querySelector("g.view");
    if (view) { view.setAttribute("transform", "translate(" + state.graph.tx + "," + state.graph.ty + ") scale(" + state.graph.scale + ")"); }
  }
  function fitGraph() {
    var lay = state.graph.layout, box = $("graph");
    if (!lay) { return; }
    var w = box.clientWidth || 900, h = box.clientHeight || 500;
    // Whole graph when it fits legibly; otherwise start at the top, readable, and let the user pan.
    var s = Math.min(w / (lay.width + 40), h / (lay.height + 40), 1.2);
    state.graph.scale = Math.max(s, 0.35);
    state.graph.tx = Math.max(10, (w - lay.width * state.graph.scale) / 2);
    state.graph.ty = 20;
    applyTransform();
  }
  function zoom(f) { state.graph.scale = Math.min(Math.max(state.graph.scale * f, 0.02), 6); applyTransform(); }
  function wirePanZoom(root) {
    var drag = null;
    root.addEventListener("mousedown", function (e) { drag = { x: e.clientX, y: e.clientY, tx: state.graph.tx, ty: state.graph.ty }; });
    window.addEventListener("mouseup", function () { drag = null; });
    root.addEventListener("mousemove", function (e) {
      if (!drag) { return; }
      state.graph.tx = drag.tx + e.clientX - drag.x; state.graph.ty = drag.ty + e.clientY - drag.y; applyTransform();
    });
    root.addEventListener("wheel", function (e) { e.preventDefault(); zoom(e.deltaY < 0 ? 1.15 : 1 / 1.15); }, { passive: false });
  }
  function highlightGraphNode() {
    var nodes = $("graph").querySelectorAll("g.node");
    for (var i = 0; i < nodes.length; i++) {
      nodes[i].classList.toggle("selected", String(state.selected) === nodes[i].getAttribute("data-layer"));
    }
  }
  function wireGraph() {
    $("graph-zoom-in").addEventListener("click", function () { zoom(1.25); });
    $("graph-zoom-out").addEventListener("click", function () { zoom(0.8); });
    $("graph-fit").addEventListener("click", fitGraph);
    $("graph-radius").addEventListener("change", renderGraph);
    $("graph-search").addEventListener("change", function (e) {
      var q = e.target.value.trim().toLowerCase();
      if (!q) { return; }
      var hit = current().layers.filter(function (l) { return l.name.toLowerCase().indexOf(q) >= 0; })[0];
      if (hit) { state.graph.focus = hit.index; state.selected = hit.index; renderDetails(); renderGraph(); }
      else { $("graph-status").textContent = "no layer name contains that text"; }
    });
  }

  // ---------- comparison ----------
  function renderComparison() {
    var box = clear($("comparison"));
    var comps = A.comparisons || [];
    if (!comps.length) { box.appendChild(el("p", { class: "muted" }, "Comparison needs at least two usable backends or builds of one model.")); return; }
    comps.forEach(function (c) {
      box.appendChild(el("h3", null, (c.model ? c.model + ": " : "") + c.backends.length + " backends, baseline " + c.baseline));
      var totals = el("table", { class: "grid" }, el("tr", null, ["backend", "mode", "layers", "Σ avg", "Δ vs baseline", "speed-up", "precision mix"].map(function (h, i) {
        return el("th", { class: i >= 2 && i <= 5 ? "num" : null }, h);
      })));
      c.totals.forEach(function (t) {
        var mix = Object.keys(t.precision_mix).map(function (k) { return k + " " + t.precision_mix[k].toFixed(1) + "%"; }).join(", ");
        totals.appendChild(el("tr", null, [el("td", { class: "name" }, t.label), el("td", null, t.analysis_mode.replace("_", " ")), el("td", { class: "num" }, String(t.layer_count)),
          el("td", { class: "num" }, fmtMs(t.average_inference_ms)), el("td", { class: "num" }, t.delta_ms === null ? "–" : (t.delta_ms >= 0 ? "+" : "") + fmtMs(t.delta_ms)),
          el("td", { class: "num" }, t.speedup === null ? "–" : t.speedup.toFixed(2) + "×"), el("td", null, mix)]));
      });
      box.appendChild(totals);
      box.appendChild(el("h3", null, "Per type (count · Σ avg)"));
      var types = el("table", { class: "grid" }, el("tr", null, [el("th", null, "type")].concat(c.backends.map(function (l) { return el("th", { class: "num" }, short(l, 28)); }))));
      c.by_type.forEach(function (r) {
        types.appendChild(el("tr", null, [el("td", null, r.name)].concat(r.cells.map(function (cell) {
          return el("td", { class: "num" }, cell.count ? cell.count + " · " + fmtMs(cell.avg_ms) : "–");
        }))));
      });
      box.appendChild(types);
      c.pairs.forEach(function (p) { box.appendChild(pairView(p)); });
    });
  }

  function pairView(p) {
    var a = backendByLabel(p.a), b = backendByLabel(p.b);
    var wrap = el("div");
    wrap.appendChild(el("h3", null, p.a + " → " + p.b));
    wrap.appendChild(el("p", null, "aligned: " + p.matched_by_name + " by name, " + p.matched_by_origin + " by source nodes, " + p.matched_by_signature +
      " by type and shape; unmatched " + p.unmatched_a + " / " + p.unmatched_b + "; " + p.precision_changes + " precision and " + p.tactic_changes + " tactic changes"));
    if (p.changes.length) { wrap.appendChild(el("ul", null, p.changes.map(function (c) { return el("li", null, c); }))); }
    var sel = el("select", { "aria-label": "Aligned rows filter" }, [
      el("option", { value: "changed" }, "changed rows"), el("option", { value: "all" }, "all rows"), el("option", { value: "unmatched" }, "unmatched rows")]);
    var table = el("table", { class: "grid" });
    function draw() {
      clear(table);
      table.appendChild(el("tr", null, ["layer (" + short(p.a, 20) + ")", "layer (" + short(p.b, 20) + ")", "how", "precision", "avg a", "avg b", "Δ"].map(function (h) { return el("th", null, h); })));
      var rows = p.rows.filter(function (r) {
        return sel.value === "all" || (sel.value === "unmatched" ? r.method === "unmatched" : (r.precision_changed || r.tactic_changed || r.method === "unmatched"));
      });
      rows.slice(0, 400).forEach(function (r) {
        var la = r.a !== null && a ? a.layers[r.a] : null, lb = r.b !== null && b ? b.layers[r.b] : null;
        table.appendChild(el("tr", null, [
          el("td", { class: "name" }, la ? la.name : "–"), el("td", { class: "name" }, lb ? lb.name : "–"), el("td", null, r.method),
          el("td", null, (la && la.precision || "–") + (r.precision_changed ? " → " + (lb.precision || "?") : "")),
          el("td", { class: "num" }, la && la.timing ? fmtMs(la.timing.avg_ms) : "–"), el("td", { class: "num" }, lb && lb.timing ? fmtMs(lb.timing.avg_ms) : "–"),
          el("td", { class: "num" }, r.delta_ms === null ? "–" : (r.delta_ms >= 0 ? "+" : "") + fmtMs(r.delta_ms))]));
      });
      if (rows.length > 400) { table.appendChild(el("tr", null, el("td", { class: "muted" }, (rows.length - 400) + " more rows not shown"))); }
    }
    sel.addEventListener("change", draw);
    draw();
    wrap.appendChild(el("div", { class: "filters" }, ["show ", sel]));
    wrap.appendChild(el("div", { class: "scroll" }, table));
    return wrap;
  }
  function backendByLabel(label) { return backends.filter(function (b) { return b.label === label; })[0]; }

  // ---------- wiring ----------
  function selectBackend(i) {
    state.backend = i;
    state.selected = null;
    state.rowsShown = ROW_PAGE;
    state.graph.focus = null;
    filters.only = null;
    renderBackend();
  }
  function renderBackend() {
    renderTabs();
    renderSummary();
    renderFindings();
    renderValidation();
    renderTopLayers();
    renderBreakdown();
    setupFilters();
    var b = current();
    if (isTimed(b)) { state.sortKey = "share"; state.sortAsc = false; } else { state.sortKey = "index"; state.sortAsc = true; }
    renderLayerTable();
    renderDetails();
    renderGraph();
  }

  try {
    var params = new URLSearchParams(window.location.search);
    var wanted = params.get("backend");
    if (wanted !== null) { backends.forEach(function (b, i) { if (b.label === wanted) { state.backend = i; } }); }
    renderHeader();
    renderMarkdown();
    wireFilters();
    wireGraph();
    renderBackend();
    renderComparison();
  } catch (e) {
    errors.push(String(e && e.stack ? e.stack : e));
    fail("The report could not be rendered: " + e);
    return;
  }
  finish();
})();
