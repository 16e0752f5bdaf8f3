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
    graph: { scale: 1, tx: 0, ty: 0, focus: null },
    // ?fold=noops starts with NoOps folded (the Chromium test reads the table that way).
    foldNoops: /(^|&)fold=noops(&|$)/.test(window.location.search.slice(1)) };

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
  function fmtBytes(v) {
    if (v === null || v === undefined || !isFinite(v)) { return "–"; }
    if (v >= 1048576) { return (v / 1048576).toFixed(2) + " MiB"; }
    if (v >= 1024) { return (v / 1024).toFixed(1) + " KiB"; }
    return v + " B";
  }
  function fmtPct(v) { return v === null || v === undefined || !isFinite(v) ? "–" : v.toFixed(2) + "%"; }
  function short(s, n) { s = String(s === undefined || s === null ? "" : s); return s.length > n ? s.slice(0, n - 1) + "…" : s; }
  function dims(d) { return d ? "[" + d.join(", ") + "]" : "–"; }
  function colorFor(name, palette) {
    if (!palette[name]) { palette[name] = COLORS[Object.keys(palette).length % COLORS.length]; }
    return palette[name];
  }

  var DATA = window.TRTMC_REPORT;

  // data.js packs each backend's layer records into columns over one string table (see
  // crates/analyze/src/pack.rs); this rebuilds exactly the records that analysis.json holds.
  function unpackLayers(p) {
    var S = p.strings, out = new Array(p.count), t = 0;
    var dimsById = {};
    function str(i) { return i < 0 ? null : S[i]; }
    function dims(i) {
      if (i < 0) { return null; }
      if (!dimsById[i]) { dimsById[i] = S[i] === "" ? [] : S[i].split(",").map(Number); }
      return dimsById[i].slice();
    }
    function tensors(ids) {
      var list = [];
      for (var k = 0; k + 2 < ids.length; k += 3) { list.push({ name: S[ids[k]], dims: dims(ids[k + 1]), format: str(ids[k + 2]) }); }
      return list;
    }
    for (var i = 0; i < p.count; i++) {
      var name = S[p.name[i]], origins = p.origins[i];
      var l = {
        index: p.index ? p.index[i] : i, name: name, raw_type: S[p.raw_type[i]], type: S[p.type[i]], family: S[p.family[i]],
        family_from_name: p.family_from_name ? p.family_from_name.charAt(i) === "1" : false,
        parameter_type: str(p.parameter_type[i]), precision: str(p.precision[i]), output_precision: str(p.output_precision[i]),
        tactic: str(p.tactic[i]), stream: p.stream ? p.stream[i] : null
      };
      if (p.subgraph && p.subgraph[i] !== null) { l.subgraph = p.subgraph[i]; }
      l.origins = origins === 0 ? name.split(" + ") : origins.map(function (x) { return S[x]; });
      l.inputs = tensors(p.inputs[i]);
      l.outputs = tensors(p.outputs[i]);
      l.tags = p.tags[i] < 0 ? [] : S[p.tags[i]].split("\u001f");
      l.timing = null;
      if (p.timed.charAt(i) === "1") {
        l.timing = { time_ms: p.time_ms[t], avg_ms: p.avg_ms[t], median_ms: p.median_ms[t], percentage: p.percentage[t] };
        t++;
      }
      out[i] = l;
    }
    return out;
  }

  function fail(msg) {
    var b = $("load-error");
    b.hidden = false;
    b.textContent = msg;
    finish();
  }
  function finish() {
    // Milliseconds from navigation start until the first render is laid out (docs/performance.md).
    void document.body.offsetHeight;
    document.body.setAttribute("data-report-ms", String(Math.round(performance.now())));
    document.body.setAttribute("data-report-ready", "true");
    document.body.setAttribute("data-report-errors", String(errors.length));
    $("self-check").textContent = "ready errors=" + errors.length + " imgs=" + document.getElementsByTagName("img").length +
      (errors.length ? " first=" + errors[0] : "");
  }
  if (!DATA || !DATA.analysis || !Array.isArray(DATA.analysis.backends)) {
    fail("The report data (data.js) is missing or unreadable. Re-create the report with `trtmc-bench analyze package`.");
    return;
  }
  try {
    DATA.analysis.backends.forEach(function (b) { if (b.layers && b.layers.packed === 1) { b.layers = unpackLayers(b.layers); } });
  } catch (e) {
    errors.push(String(e && e.stack ? e.stack : e));
    fail("The report data (data.js) could not be unpacked: " + e + ". Re-create the report with `trtmc-bench analyze package`.");
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
    var head = el("tr", null, ["backend", "status", "mode", "layers", "Σ avg per inference", "iterations", "largest layer", "model category", "export era"].map(function (h, i) {
      return el("th", { class: i === 3 || i === 4 ? "num" : null }, h);
    }));
    var rows = backends.map(function (b, i) {
      var top = b.hot_layers.length ? b.layers[b.hot_layers[0]] : null;
      var cat = b.model ? b.model.category + " (" + b.model.confidence + ")" : "–";
      // Every build's era in its own row: builds compared side by side may come from different
      // TensorRT versions.
      var era = b.export && b.export.era;
      var eraCell = era ? el("td", { title: era.evidence.join("; ") }, era.label + (era.conflict ? " (conflicting evidence)" : "")) :
        el("td", { class: "muted" }, b.runtime && b.runtime.name !== "tensorrt" ? b.runtime.display_name : "–");
      return el("tr", { class: "clickable" + (i === state.backend ? " selected" : ""), onclick: function () { selectBackend(i); } }, [
        el("td", { class: "name" }, b.label),
        el("td", { class: "status-" + b.validation.status }, b.validation.status),
        el("td", null, modeText(b)),
        el("td", { class: "num" }, String(b.layer_count)),
        el("td", { class: "num" }, b.timing ? fmtMs(b.timing.average_inference_ms) : "–"),
        el("td", null, b.count ? b.count + " (" + b.count_source.replace(/_/g, " ") + ")" : "–"),
        el("td", { class: "name" }, top && top.timing ? short(top.name, 80) + " · " + fmtPct(top.timing.percentage) : "–"),
        el("td", null, cat),
        eraCell
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
      box.appendChild(el("p", { class: "muted" }, "Export era of " + b.label + ": " + era.label + (era.evidence.length ? " — from: " + era.evidence.join("; ") : "") +
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
      fill.style.background = familyColor(l.family);
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
      part.style.background = breakdownColor(x.name, palette);
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
      table.lastChild.querySelector(".swatch").style.background = breakdownColor(x.name, palette);
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

  // NoOps folded as TREx folds them: each NoOp row is hidden and its times are added to the
  // computing layer that writes its input (else the one that reads its output), so every sum over
  // the table stays the same. Returns {hidden: {index: true}, extra: {index: timing}, count}.
  var foldCache = { backend: null, fold: null };
  function noopFold(b) {
    if (foldCache.backend === b) { return foldCache.fold; }
    var preds = {}, succs = {}, hidden = {}, extra = {}, count = 0;
    ((b.graph && b.graph.edges) || []).forEach(function (e) {
      (preds[e[1]] = preds[e[1]] || []).push(e[0]);
      (succs[e[0]] = succs[e[0]] || []).push(e[1]);
    });
    function isNoop(i) { return b.layers[i].raw_type === "NoOp"; }
    function reach(start, adj) {
      var seen = {}, stack = (adj[start] || []).slice();
      while (stack.length) {
        var v = stack.shift();
        if (seen[v]) { continue; }
        seen[v] = true;
        if (!isNoop(v)) { return v; }
        stack = stack.concat(adj[v] || []);
      }
      return null;
    }
    b.layers.forEach(function (l) {
      if (!isNoop(l.index)) { return; }
      var into = reach(l.index, preds);
      if (into === null) { into = reach(l.index, succs); }
      if (into === null) { return; }
      hidden[l.index] = true;
      count++;
      if (l.timing) {
        var x = extra[into] = extra[into] || { time_ms: 0, avg_ms: 0, median_ms: 0, percentage: 0, noops: 0 };
        x.time_ms += l.timing.time_ms; x.avg_ms += l.timing.avg_ms; x.percentage += l.timing.percentage;
        x.median_ms += l.timing.median_ms === null ? 0 : l.timing.median_ms;
        x.noops++;
      }
    });
    foldCache = { backend: b, fold: { hidden: hidden, extra: extra, count: count } };
    return foldCache.fold;
  }
  // A layer's timing as the table shows it: with the folded NoOps' times when folding.
  function shownTiming(l) {
    if (!state.foldNoops || !l.timing) { return l.timing; }
    var x = noopFold(current()).extra[l.index];
    if (!x) { return l.timing; }
    return { time_ms: l.timing.time_ms + x.time_ms, avg_ms: l.timing.avg_ms + x.avg_ms, percentage: l.timing.percentage + x.percentage,
      median_ms: l.timing.median_ms === null ? null : l.timing.median_ms + x.median_ms };
  }
  function memoryOf(l, key) {
    var m = current().memory;
    return m && m[key][l.index] !== null && m[key][l.index] !== undefined ? m[key][l.index] : null;
  }
  var COLUMNS = [
    { key: "index", label: "#", num: true, get: function (l) { return l.index; } },
    { key: "name", label: "name", get: function (l) { return l.name; } },
    { key: "type", label: "type", get: function (l) { return l.type; } },
    { key: "precision", label: "precision", get: function (l) { return l.precision || ""; } },
    { key: "avg", label: "avg", num: true, get: function (l) { var t = shownTiming(l); return t ? t.avg_ms : -1; } },
    { key: "median", label: "median", num: true, get: function (l) { var t = shownTiming(l); return t && t.median_ms !== null ? t.median_ms : -1; } },
    { key: "share", label: "share", num: true, get: function (l) { var t = shownTiming(l); return t ? t.percentage : -1; } },
    { key: "weights", label: "weights", num: true, memory: true, get: function (l) { var v = memoryOf(l, "weights_bytes"); return v === null ? -1 : v; } },
    { key: "activations", label: "activations", num: true, memory: true, get: function (l) { var v = memoryOf(l, "activation_bytes"); return v === null ? -1 : v; } },
    { key: "tactic", label: "tactic", get: function (l) { return l.tactic || ""; } }
  ];

  function renderLayerTable() {
    var b = current();
    var t = clear($("layer-table"));
    // The memory columns exist where the export lists weights or tensor sizes.
    var columns = COLUMNS.filter(function (c) { return !c.memory || b.memory; });
    var fold = state.foldNoops ? noopFold(b) : null;
    var head = el("tr", null, columns.map(function (c) {
      var cls = (c.num ? "num " : "") + (state.sortKey === c.key ? "sorted" + (state.sortAsc ? " asc" : "") : "");
      return el("th", { class: cls, scope: "col", onclick: function () { sortBy(c.key); } }, c.label);
    }));
    t.appendChild(el("thead", null, head));
    var col = columns.filter(function (c) { return c.key === state.sortKey; })[0] || columns[0];
    var rows = b.layers.filter(function (l) { return !(fold && fold.hidden[l.index]) && matches(l); });
    rows.sort(function (x, y) {
      var a = col.get(x), c = col.get(y);
      var r = a < c ? -1 : a > c ? 1 : x.index - y.index;
      return state.sortAsc ? r : -r;
    });
    var body = el("tbody");
    rows.slice(0, state.rowsShown).forEach(function (l) {
      var tm = shownTiming(l), folded = fold && fold.extra[l.index];
      var cells = [
        el("td", { class: "num" }, String(l.index)),
        el("td", { class: "name" }, folded ? [l.name, el("span", { class: "muted" }, " (+" + folded.noops + " NoOp)")] : l.name),
        el("td", null, l.type),
        el("td", null, l.precision || "–"),
        el("td", { class: "num" }, tm ? fmtMs(tm.avg_ms) : "–"),
        el("td", { class: "num" }, tm && tm.median_ms !== null ? fmtMs(tm.median_ms) : "–"),
        el("td", { class: "num" }, tm ? fmtPct(tm.percentage) : "–")
      ];
      if (b.memory) {
        cells.push(el("td", { class: "num" }, fmtBytes(memoryOf(l, "weights_bytes"))));
        cells.push(el("td", { class: "num" }, fmtBytes(memoryOf(l, "activation_bytes"))));
      }
      cells.push(el("td", { class: "tactic" }, l.tactic || "–"));
      body.appendChild(el("tr", { class: "clickable" + (state.selected === l.index ? " selected" : ""), "data-layer": l.index, onclick: function () { selectLayer(l.index); } }, cells));
    });
    t.appendChild(body);
    var shown = Math.min(rows.length, state.rowsShown);
    $("layer-count").textContent = "showing " + shown + " of " + rows.length + " matching (" + b.layers.length + " layers" +
      (fold ? ", " + fold.count + " NoOp" + (fold.count === 1 ? "" : "s") + " folded" : "") + ")" +
      (filters.only ? " · limited to: " + filters.onlyTitle : "");
    // The sums over every matching row (not only those shown): folding NoOps leaves them unchanged.
    var sumAvg = 0, sumPct = 0, timed = 0;
    rows.forEach(function (l) { var tm = shownTiming(l); if (tm) { sumAvg += tm.avg_ms; sumPct += tm.percentage; timed++; } });
    var sum = $("layer-sum");
    sum.textContent = timed ? "Σ over the " + rows.length + " matching layers: " + fmtMs(sumAvg) + " average, " + fmtPct(sumPct) + " of time" : "";
    sum.setAttribute("data-rows", String(rows.length));
    sum.setAttribute("data-sum-avg", String(sumAvg));
    sum.setAttribute("data-sum-pct", String(sumPct));
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
    $("fold-noops").checked = state.foldNoops;
    $("fold-noops").addEventListener("change", function (e) { state.foldNoops = e.target.checked; renderLayerTable(); });
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
    if (graphInfo() && graphInfo().big) { state.graph.focus = index; drawGraphWhenSeen(); } else { highlightGraphNode(); }
  }

  // ---------- graph ----------
  // One colour per family in every report: fixed for the families trtmc-analyze names (classify.rs
  // `Family`, plus ONNX operator families), derived from a hash of the name for any other. Never
  // from the order families appear in: that gave a family another colour in the next report.
  var FAMILY_COLORS = {
    convolution: "#6fa8dc", gemm: "#8e7cc3", matmul: "#8e7cc3", attention: "#c27ba0", pooling: "#76b7b2",
    pointwise: "#f6b26b", elementwise: "#f6b26b", activation: "#f9cb9c", reduction: "#d9a441", softmax: "#e06666",
    normalization: "#93c47d", reformat: "#c9b79c", quant_dequant: "#ffd966", shuffle: "#a4c2f4", shape: "#d5a6bd",
    reshape: "#d5a6bd", cast: "#b4a7d6", gather: "#76a5af", copy: "#cfc7bb", resize: "#9fc5e8", constant: "#e8e3d5",
    noop: "#dddddd", myelin: "#d4a373", kgen: "#a2c4c9", plugin: "#ea9999", train_station: "#b0b8c4", sync: "#a9a9a9",
    other: "#c4c4c4"
  };
  function breakdownColor(name, palette) { return state.breakdownKey === "by_family" ? familyColor(name) : colorFor(name, palette); }
  function familyColor(name) {
    var key = String(name || "other").toLowerCase();
    if (Object.prototype.hasOwnProperty.call(FAMILY_COLORS, key)) { return FAMILY_COLORS[key]; }
    var h = 2166136261; // FNV-1a: the same name gives the same colour in every report
    for (var i = 0; i < key.length; i++) { h = Math.imul(h ^ key.charCodeAt(i), 16777619) >>> 0; }
    // Light tones only, so the dark node labels stay readable in both themes.
    return "hsl(" + (h % 360) + ", 55%, " + (62 + (h >>> 9) % 12) + "%)";
  }

  // Level of detail: two-line nodes (name; type and share) when the whole graph fits readably with
  // them, else one-line nodes with a shortened name, as wide as the view allows (the full name is in
  // the tooltip and the details). Label sizes are those of styles.css (.graph svg text.layer-name / .layer-sub).
  var NODE_STYLES = [
    { name: "full", W: 184, H: 36, gap: 14, minScale: 0.96 }, // keeps the 10.5 px second line >= 10 px
    { name: "compact", W: 220, H: 18, gap: 9, minScale: 0.86 }, // keeps the 12 px names >= 10 px
    { name: "compact", W: 170, H: 18, gap: 9, minScale: 0.86 },
    { name: "compact", W: 128, H: 18, gap: 9, minScale: 0 }
  ];
  var LABEL_FONT = '12px system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif';
  var MAX_SCALE = 1.2, DUMMY_W = 14, COL_GAP = 44, TURN = 16, SKIP_PORT = 14;
  // Skips over more ranks than this get no lane of their own (a lane per rank would widen every
  // column); they are drawn as dashed arcs beside the nodes instead.
  var SKIP_LANE_LIMIT = 16;

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

  // Layered layout of the nodes (ascending layer indices): longest-path ranks, then each layer pulled
  // down next to its first consumer; an edge that jumps
  // ranks (a residual connection) runs through one thin dummy item per rank it passes, so it gets a
  // lane beside the main line instead of being drawn over it; two barycentre sweeps order each rank.
  // The ranks are then cut into columns that run alternately down and up (a snake), the number of
  // columns chosen so the whole graph fits the view at the largest scale. Upward columns are
  // mirrored (main line on the right), so at each turn the skip lanes nest inside or around the main
  // line's U-turn instead of crossing it.
  function layout(nodes, g, availW, availH) {
    var inSet = {}, rankOf = {}, rankCount = 0;
    nodes.forEach(function (v) { inSet[v] = true; });
    nodes.forEach(function (v) {
      var r = 0;
      g.pred[v].forEach(function (p) { if (inSet[p] && p < v) { r = Math.max(r, rankOf[p] + 1); } });
      rankOf[v] = r;
      rankCount = Math.max(rankCount, r + 1);
    });
    // Then each layer as late as its consumers allow: a side input (a constant, an embedding's
    // projection) sits beside the layer it feeds, not in an ever wider first rank.
    for (var ni = nodes.length - 1; ni >= 0; ni--) {
      var v = nodes[ni], latest = Infinity;
      g.succ[v].forEach(function (w) { if (inSet[w] && w > v) { latest = Math.min(latest, rankOf[w] - 1); } });
      if (latest !== Infinity && latest > rankOf[v]) { rankOf[v] = latest; }
    }
    var rows = [], items = {}, serial = 0;
    for (var r = 0; r < rankCount; r++) { rows.push([]); }
    function addItem(layer, rank) {
      var it = { layer: layer, rank: rank, dummy: layer === null, serial: serial++, preds: [], pos: 0 };
      rows[rank].push(it);
      return it;
    }
    nodes.forEach(function (v) { items[v] = addItem(v, rankOf[v]); });
    var edges = [], seenEdge = {};
    nodes.forEach(function (v) {
      g.succ[v].forEach(function (w) {
        var key = v + ">" + w;
        if (!inSet[w] || w === v || seenEdge[key]) { return; }
        seenEdge[key] = true;
        var span = rankOf[w] - rankOf[v], e = { from: v, to: w, span: span, via: [] };
        if (w < v || span > SKIP_LANE_LIMIT) {
          e.kind = "long";
        } else {
          e.kind = span === 1 ? "main" : "skip";
          var prev = items[v];
          for (var k = rankOf[v] + 1; k < rankOf[w]; k++) {
            var d = addItem(null, k);
            d.preds.push(prev);
            e.via.push(d);
            prev = d;
          }
          items[w].preds.push(prev);
        }
        edges.push(e);
      });
    });
    rows.forEach(function (row) { row.forEach(function (it, i) { it.pos = i; }); });
    for (var sweep = 0; sweep < 2; sweep++) {
      rows.forEach(function (row, rank) {
        if (rank === 0) { return; }
        row.forEach(function (it) {
          it.bary = it.preds.length ? it.preds.reduce(function (s, p) { return s + p.pos; }, 0) / it.preds.length : it.pos;
        });
        // Ties go to real layers, so the main line keeps the first lane and skips run beside it.
        row.sort(function (a, b) { return a.bary - b.bary || (a.dummy - b.dummy) || a.serial - b.serial; });
        row.forEach(function (it, i) { it.pos = i; });
      });
    }

    function place(style) {
      function widthOf(it) { return it.dummy ? DUMMY_W : style.W; }
      var pitch = style.H + style.gap;
      function columnsFor(k) {
        var per = Math.ceil(rankCount / k), cols = [];
        for (var c = 0; c * per < rankCount; c++) {
          var lanes = [];
          for (var rr = c * per; rr < Math.min(rankCount, (c + 1) * per); rr++) {
            rows[rr].forEach(function (it) { lanes[it.pos] = Math.max(lanes[it.pos] || 0, widthOf(it)); });
          }
          cols.push(lanes);
        }
        var width = cols.reduce(function (s, lanes) { return s + lanes.reduce(function (a, x) { return a + (x || 0); }, 0); }, 0) + (cols.length - 1) * COL_GAP;
        return { per: per, cols: cols, width: width, height: per * pitch - style.gap + 2 * TURN };
      }
      // Only column counts that change the ranks per column are worth trying (about 2√ranks).
      var best = null, k = 1;
      while (true) {
        var cand = columnsFor(k);
        cand.scale = Math.min(availW / cand.width, availH / cand.height, MAX_SCALE);
        if (!best || cand.scale > best.scale + 1e-9) { best = cand; }
        if (cand.per <= 1) { break; }
        k = Math.ceil(rankCount / (cand.per - 1));
      }
      best.style = style;
      best.pitch = pitch;
      return best;
    }
    var plan = null;
    for (var si = 0; si < NODE_STYLES.length; si++) {
      plan = place(NODE_STYLES[si]);
      if (plan.scale >= NODE_STYLES[si].minScale) { break; }
    }
    var st = plan.style, colX = [], x0 = 0;
    plan.cols.forEach(function (lanes) {
      var offsets = [], acc = 0;
      lanes.forEach(function (w, i) { offsets[i] = acc; acc += w || 0; });
      colX.push({ x: x0, offsets: offsets, lanes: lanes, width: acc });
      x0 += acc + COL_GAP;
    });
    rows.forEach(function (row, rank) {
      var c = Math.floor(rank / plan.per), i = rank - c * plan.per;
      var down = c % 2 === 0, line = down ? i : plan.per - 1 - i;
      row.forEach(function (it) {
        var col = colX[c], start = col.x + col.offsets[it.pos], w = it.dummy ? DUMMY_W : st.W;
        it.column = c; it.down = down;
        // A dummy sits at the side of its lane nearer the main line.
        it.x = down ? start : col.x + col.width - col.offsets[it.pos] - (it.dummy ? w : col.lanes[it.pos]);
        it.y = TURN + line * plan.pitch;
      });
    });
    return { items: items, edges: edges, inSet: inSet, width: plan.width, height: plan.height, W: st.W, H: st.H, style: st,
      columns: plan.cols.length, ranks: rankCount };
  }

  // Where an edge leaves or enters an item: the side facing the column's direction; skips use a
  // port near the edge on the lanes' side, so they leave the node apart from the main line.
  function port(lay, it, out, skip) {
    var skipX = it.down ? lay.W - SKIP_PORT : SKIP_PORT;
    var x = it.dummy ? it.x + DUMMY_W / 2 : it.x + (skip ? skipX : lay.W / 2);
    return { x: x, y: it.y + (out === it.down ? lay.H : 0) };
  }
  function segment(lay, a, b, skip) {
    var p = port(lay, a, true, skip), q = port(lay, b, false, skip);
    if (a.column === b.column) {
      var my = (p.y + q.y) / 2;
      return " C" + p.x + "," + my + " " + q.x + "," + my + " " + q.x + "," + q.y;
    }
    // Into the next column: a U-turn below (or above) the end of the column, deeper the wider it is,
    // so the nested turns of the main line and its skips never cross.
    var t = (a.down ? 1 : -1) * TURN * (0.55 + 0.7 * Math.min(1, Math.abs(q.x - p.x) / (2 * lay.W + 2 * COL_GAP)));
    return " C" + p.x + "," + (p.y + t) + " " + q.x + "," + (q.y + t) + " " + q.x + "," + q.y;
  }
  function edgePath(lay, e) {
    var a = lay.items[e.from], b = lay.items[e.to];
    if (e.kind === "long") {
      // Beside the nodes, out of the right edge and back into it.
      var x1 = a.x + lay.W, y1 = a.y + lay.H / 2, x2 = b.x + lay.W, y2 = b.y + lay.H / 2, bulge = 36 + Math.min(60, Math.abs(y2 - y1) / 8);
      return "M" + x1 + "," + y1 + " C" + (x1 + bulge) + "," + y1 + " " + (x2 + bulge) + "," + y2 + " " + x2 + "," + y2;
    }
    var skip = e.kind === "skip", start = port(lay, a, true, skip), d = "M" + start.x + "," + start.y, prev = a;
    e.via.forEach(function (it) {
      d += segment(lay, prev, it, skip);
      // Straight through the rank the skip passes.
      var out = port(lay, it, true, skip);
      d += " L" + out.x + "," + out.y;
      prev = it;
    });
    return d + segment(lay, prev, b, skip);
  }

  // A layer name that fits `width` pixels of the label font: reformat copies by the layer they feed
  // (→) or read (←), paths by their last parts, anything else cut at the end.
  var measureCtx = null;
  function textWidth(t) {
    if (!measureCtx) {
      measureCtx = document.createElement("canvas").getContext("2d");
      if (measureCtx) { measureCtx.font = LABEL_FONT; }
    }
    return measureCtx ? measureCtx.measureText(t).width : t.length * 7.2;
  }
  function fitText(t, width) {
    if (t.length * 12 <= width) { return t; } // no glyph is wider than 1 em: fits unmeasured
    var full = textWidth(t);
    if (full <= width) { return t; }
    // Start from the proportional cut and step: two or three measurements instead of a search.
    var n = Math.max(1, Math.floor(t.length * width / full));
    while (n > 1 && textWidth(t.slice(0, n) + "…") > width) { n--; }
    while (n + 1 < t.length && textWidth(t.slice(0, n + 1) + "…") <= width) { n++; }
    return t.slice(0, n) + "…";
  }
  // A reformat copy's name as `reformat→X` (input of X) or `reformat←X` (output of X): the prefix
  // and the rest, so that shortening the rest never drops the prefix.
  function splitReformat(name) {
    var m = /^Reformatting CopyNode for (Input|Output) Tensor (\d+) to (.*)$/.exec(name);
    if (!m) { return { prefix: "", rest: name }; }
    return { prefix: "reformat" + (m[2] === "0" ? "" : m[2]) + (m[1] === "Input" ? "→" : "←"), rest: m[3] };
  }
  // Labels that tell the drawn layers apart (nodes: layer indexes; returns index → label). Each is
  // the shortest tail of the name's `/` path that no other drawn layer's label ends with, the
  // reformat prefix kept; layers whose whole names agree get their index. A label cut to fit
  // `width` that meets another one after the cut starts with the layer index instead.
  function distinctLabels(nodes, layers, width) {
    var split = {}, tails = {}, labels = {};
    function tail(v, k) {
      var s = split[v], parts = s.parts;
      return s.prefix + (k < parts.length ? "…/" : "") + parts.slice(parts.length - k).join("/");
    }
    nodes.forEach(function (v) {
      var r = splitReformat(layers[v].name);
      var parts = r.rest.split("/").filter(function (p) { return p; });
      if (!parts.length) { parts = [r.rest]; }
      split[v] = { prefix: r.prefix, parts: parts };
      for (var k = 1; k <= parts.length; k++) { var t = tail(v, k); tails[t] = (tails[t] || 0) + 1; }
    });
    nodes.forEach(function (v) {
      var n = split[v].parts.length, k = 1;
      while (k < n && tails[tail(v, k)] > 1) { k++; }
      var t = tail(v, k);
      labels[v] = tails[t] > 1 ? t + " #" + v : t;
    });
    var fitted = {}, seen = {};
    nodes.forEach(function (v) { fitted[v] = fitText(labels[v], width); seen[fitted[v]] = (seen[fitted[v]] || 0) + 1; });
    nodes.forEach(function (v) {
      if (seen[fitted[v]] > 1) {
        var tag = "#" + v + " ";
        fitted[v] = tag + fitText(labels[v], Math.max(1, width - textWidth(tag)));
      }
    });
    return fitted;
  }

  function renderGraph() {
    var box = clear($("graph"));
    var legend = clear($("graph-legend"));
    var b = current();
    var g = graphInfo();
    if (!g) { box.appendChild(el("p", { class: "muted" }, "No graph: the export has no tensors (names only) or the backend failed.")); $("graph-status").textContent = ""; return; }
    var radius = parseInt($("graph-radius").value, 10);
    var nodes, status;
    if (!g.big && (radius === 0 || state.graph.focus === null)) {
      nodes = b.layers.map(function (l) { return l.index; });
      status = "all " + nodes.length + " layers";
    } else {
      var center = state.graph.focus !== null ? state.graph.focus : (b.hot_layers[0] !== undefined ? b.hot_layers[0] : 0);
      nodes = neighbourhood(g, center, radius === 0 ? 1000000 : radius);
      status = nodes.length + " of " + b.layers.length + " layers around " + short(b.layers[center].name, 60) +
        (g.big ? " (large graph: showing a neighbourhood; pick a layer or search to move)" : "");
    }
    if (!nodes.length) { box.appendChild(el("p", { class: "muted" }, "No layers to draw.")); $("graph-status").textContent = ""; return; }
    var lay = layout(nodes, g, (box.clientWidth || 900) - 40, (box.clientHeight || 500) - 40);
    $("graph-status").textContent = status + " · " + lay.columns + (lay.columns === 1 ? " column" : " columns, alternately down and up") +
      (lay.style.name === "compact" ? " · short names (hover or select a layer for the full name)" : "");
    var root = svg("svg", { role: "img", "aria-label": "layer graph" });
    var defs = svg("defs");
    var marker = svg("marker", { id: "graph-arrow", viewBox: "0 0 8 8", refX: 7, refY: 4, markerWidth: 7, markerHeight: 7, orient: "auto" });
    marker.appendChild(svg("path", { d: "M0,0 L8,4 L0,8 z", class: "arrow" }));
    defs.appendChild(marker);
    root.appendChild(defs);
    var view = svg("g", { class: "view" });
    root.appendChild(view);
    var edges = svg("g");
    // Main edges first, skips above them, so a crossing never hides a skip.
    var order = { main: 0, long: 1, skip: 2 };
    lay.edges.slice().sort(function (x, y) { return order[x.kind] - order[y.kind]; }).forEach(function (e) {
      edges.appendChild(svg("path", { class: "edge " + e.kind + (e.kind === "long" ? " skip" : ""), d: edgePath(lay, e), "marker-end": "url(#graph-arrow)",
        "data-from": e.from, "data-to": e.to }));
    });
    view.appendChild(edges);
    var used = {}, maxShare = 0;
    nodes.forEach(function (v) { var t = b.layers[v].timing; if (t && t.percentage > maxShare) { maxShare = t.percentage; } });
    var labels = distinctLabels(nodes, b.layers, lay.W - 10);
    nodes.forEach(function (v) {
      var l = b.layers[v], it = lay.items[v];
      used[l.family] = true;
      var node = svg("g", { class: "node" + (state.selected === v ? " selected" : ""), "data-layer": v, "data-family": l.family, transform: "translate(" + it.x + "," + it.y + ")" });
      node.appendChild(svg("rect", { width: lay.W, height: lay.H, rx: 4, fill: familyColor(l.family) }));
      if (l.timing && maxShare > 0) {
        // The layer's share of time as a bar along the node's foot.
        node.appendChild(svg("rect", { class: "share", y: lay.H - 3, width: Math.max(1, lay.W * l.timing.percentage / maxShare), height: 3 }));
      }
      var label = svg("text", { class: "layer-name", x: 5, y: lay.style.name === "full" ? 14 : 13 });
      label.textContent = labels[v];
      var title = svg("title");
      title.textContent = l.name + " (" + l.type + (l.timing ? ", " + fmtPct(l.timing.percentage) : "") + ")";
      node.appendChild(title); node.appendChild(label);
      if (lay.style.name === "full") {
        var sub = svg("text", { class: "layer-sub", x: 5, y: 29 });
        sub.textContent = short(l.type, 16) + (l.timing ? " · " + fmtPct(l.timing.percentage) : "");
        node.appendChild(sub);
      }
      node.addEventListener("click", function (e) { e.stopPropagation(); selectLayer(v); });
      view.appendChild(node);
    });
    box.appendChild(root);
    Object.keys(used).sort().forEach(function (f) {
      var sw = el("span", { class: "swatch" });
      sw.style.background = familyColor(f);
      legend.appendChild(el("span", { "data-family": f }, [sw, f]));
    });
    if (lay.edges.some(function (e) { return e.kind === "skip"; })) {
      legend.appendChild(el("span", { class: "muted" }, [el("span", { class: "swatch edge-skip" }), "skip connection, in a lane beside the main line"]));
    }
    if (lay.edges.some(function (e) { return e.kind === "long"; })) {
      legend.appendChild(el("span", { class: "muted" }, [el("span", { class: "swatch edge-long" }), "long-range or backward edge"]));
    }
    state.graph.layout = lay;
    fitGraph();
    wirePanZoom(root);
    if (/(^|&)check=graph(&|$)/.test(window.location.search.slice(1))) { recordGraphMetrics(); }
  }

  // Test hook (?check=graph): measures the drawn graph in screen pixels and records the numbers on
  // #graph, for the Chromium test: the smallest label size, nodes outside the view, and skip edges
  // that run over a main edge or through a layer that is not their end.
  function recordGraphMetrics() {
    var box = $("graph"), area = box.getBoundingClientRect(), lay = state.graph.layout, root = box.querySelector("svg");
    var minPx = Infinity, offscreen = 0, rects = {};
    var nodeEls = box.querySelectorAll("g.node");
    for (var i = 0; i < nodeEls.length; i++) {
      var r = nodeEls[i].querySelector("rect").getBoundingClientRect();
      rects[nodeEls[i].getAttribute("data-layer")] = r;
      if (r.left < area.left - 0.5 || r.top < area.top - 0.5 || r.right > area.right + 0.5 || r.bottom > area.bottom + 0.5) { offscreen++; }
      var texts = nodeEls[i].querySelectorAll("text");
      for (var j = 0; j < texts.length; j++) {
        var m = texts[j].getScreenCTM();
        if (!m || root.classList.contains("no-labels")) { minPx = 0; continue; }
        minPx = Math.min(minPx, parseFloat(window.getComputedStyle(texts[j]).fontSize) * Math.sqrt(m.a * m.a + m.b * m.b));
      }
    }
    function samples(path) {
      var m = path.getScreenCTM(), len = path.getTotalLength(), pts = [];
      for (var d = 0; d <= len; d += 1.5) {
        var p = path.getPointAtLength(d);
        pts.push({ x: m.a * p.x + m.c * p.y + m.e, y: m.b * p.x + m.d * p.y + m.f });
      }
      return pts;
    }
    // Main edges as short screen segments in an 8 px grid.
    var grid = {}, CELL = 8, TOL = 1.5;
    var mains = box.querySelectorAll("path.edge.main");
    for (i = 0; i < mains.length; i++) {
      var pts = samples(mains[i]);
      for (j = 1; j < pts.length; j++) {
        var key = Math.floor(pts[j].x / CELL) + "," + Math.floor(pts[j].y / CELL);
        (grid[key] = grid[key] || []).push([pts[j - 1], pts[j]]);
      }
    }
    function nearMain(p) {
      for (var gx = Math.floor(p.x / CELL) - 1; gx <= Math.floor(p.x / CELL) + 1; gx++) {
        for (var gy = Math.floor(p.y / CELL) - 1; gy <= Math.floor(p.y / CELL) + 1; gy++) {
          var segs = grid[gx + "," + gy] || [];
          for (var s = 0; s < segs.length; s++) { if (distToSegment(p, segs[s][0], segs[s][1]) < TOL) { return true; } }
        }
      }
      return false;
    }
    function inside(p, r, pad) { return p.x > r.left - pad && p.x < r.right + pad && p.y > r.top - pad && p.y < r.bottom + pad; }
    var skips = box.querySelectorAll("path.edge.skip"), overlapping = 0, badList = [];
    for (i = 0; i < skips.length; i++) {
      var from = rects[skips[i].getAttribute("data-from")], to = rects[skips[i].getAttribute("data-to")];
      var bad = samples(skips[i]).some(function (p) {
        if (inside(p, from, 4) || inside(p, to, 4)) { return false; }
        if (nearMain(p)) { return true; }
        return Object.keys(rects).some(function (k) { return inside(p, rects[k], 0); });
      });
      if (bad) { overlapping++; badList.push(skips[i].getAttribute("data-from") + ">" + skips[i].getAttribute("data-to")); }
    }
    // Labels shown more than once among the drawn nodes (the graph must tell layers apart).
    var byText = {}, duplicates = [];
    for (i = 0; i < nodeEls.length; i++) {
      var name = nodeEls[i].querySelector("text.layer-name"), text = name ? name.textContent : "";
      if (byText[text] !== undefined) { duplicates.push(text); }
      byText[text] = true;
    }
    box.setAttribute("data-duplicate-labels", String(duplicates.length));
    box.setAttribute("data-duplicate-label-list", duplicates.slice(0, 5).join(" | "));
    box.setAttribute("data-label-px", minPx.toFixed(2));
    box.setAttribute("data-offscreen", String(offscreen));
    box.setAttribute("data-nodes", String(nodeEls.length));
    box.setAttribute("data-skip-edges", String(skips.length));
    box.setAttribute("data-skip-overlaps", String(overlapping));
    box.setAttribute("data-skip-overlap-edges", badList.join(" "));
    box.setAttribute("data-columns", String(lay.columns));
    box.setAttribute("data-detail", lay.style.name);
    box.setAttribute("data-page-top", String(Math.round(area.top + window.scrollY)));
  }
  function distToSegment(p, a, b) {
    var dx = b.x - a.x, dy = b.y - a.y, len2 = dx * dx + dy * dy;
    var t = len2 ? Math.max(0, Math.min(1, ((p.x - a.x) * dx + (p.y - a.y) * dy) / len2)) : 0;
    var x = a.x + t * dx - p.x, y = a.y + t * dy - p.y;
    return Math.sqrt(x * x + y * y);
  }

  // Labels smaller than this on screen are a grey smear: they are hidden until the user zooms in.
  var LABEL_MIN_PX = 6;
  function applyTransform() {
    var root = $("graph").querySelector("svg"), view = root && root.querySelector("g.view");
    if (!view) { return; }
    view.setAttribute("transform", "translate(" + state.graph.tx + "," + state.graph.ty + ") scale(" + state.graph.scale + ")");
    root.classList.toggle("no-labels", 12 * state.graph.scale < LABEL_MIN_PX);
  }
  function fitGraph() {
    var lay = state.graph.layout, box = $("graph");
    if (!lay) { return; }
    var w = box.clientWidth || 900, h = box.clientHeight || 500;
    // The layout chose its columns for this view; past the floor (a neighbourhood of a huge graph)
    // start at the top, and let the user pan.
    var s = Math.min((w - 40) / lay.width, (h - 40) / lay.height, MAX_SCALE);
    state.graph.scale = Math.max(s, 0.35);
    state.graph.tx = Math.max(10, (w - lay.width * state.graph.scale) / 2);
    state.graph.ty = Math.max(10, (h - lay.height * state.graph.scale) / 2);
    applyTransform();
  }
  // Zooms about a point of the view (the pointer, or the middle for the buttons), which stays put.
  function zoom(f, cx, cy) {
    var box = $("graph"), g = state.graph;
    if (cx === undefined) { cx = (box.clientWidth || 900) / 2; cy = (box.clientHeight || 500) / 2; }
    var s = Math.min(Math.max(g.scale * f, 0.02), 6);
    g.tx = cx - (cx - g.tx) * s / g.scale;
    g.ty = cy - (cy - g.ty) * s / g.scale;
    g.scale = s;
    applyTransform();
  }
  function wirePanZoom(root) {
    root.addEventListener("mousedown", function (e) { state.graph.drag = { x: e.clientX, y: e.clientY, tx: state.graph.tx, ty: state.graph.ty }; });
    root.addEventListener("mousemove", function (e) {
      var drag = state.graph.drag;
      if (!drag) { return; }
      state.graph.tx = drag.tx + e.clientX - drag.x; state.graph.ty = drag.ty + e.clientY - drag.y; applyTransform();
    });
    root.addEventListener("wheel", function (e) {
      e.preventDefault();
      var r = root.getBoundingClientRect();
      zoom(e.deltaY < 0 ? 1.15 : 1 / 1.15, e.clientX - r.left, e.clientY - r.top);
    }, { passive: false });
  }
  // Marks the selected layer and, when it is outside the view, pans to it.
  function highlightGraphNode() {
    var box = $("graph"), nodes = box.querySelectorAll("g.node"), hit = null;
    for (var i = 0; i < nodes.length; i++) {
      var on = String(state.selected) === nodes[i].getAttribute("data-layer");
      nodes[i].classList.toggle("selected", on);
      if (on) { hit = nodes[i]; }
    }
    if (!hit) { return; }
    var area = box.getBoundingClientRect(), r = hit.getBoundingClientRect();
    if (r.left < area.left || r.right > area.right || r.top < area.top || r.bottom > area.bottom) {
      state.graph.tx += area.left + area.width / 2 - (r.left + r.width / 2);
      state.graph.ty += area.top + area.height / 2 - (r.top + r.height / 2);
      applyTransform();
    }
  }
  function wireGraph() {
    window.addEventListener("mouseup", function () { state.graph.drag = null; });
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
      box.appendChild(el("h3", null, (c.model ? c.model + ": " : "") + c.backends.length + " backends, baseline " + c.baseline +
        (c.baseline_reason ? " (" + c.baseline_reason + ")" : "")));
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
    var ambiguous = (p.ambiguous_a || 0) + (p.ambiguous_b || 0);
    wrap.appendChild(el("p", null, "aligned: " + p.matched_by_name + " by name, " + p.matched_by_origin + " by source nodes, " + (p.matched_by_position || 0) +
      " by graph position, " + p.matched_by_signature + " by type and shape; unmatched " + p.unmatched_a + " / " + p.unmatched_b +
      (ambiguous ? " (" + ambiguous + " ambiguous)" : "") + "; " + p.precision_changes + " precision and " + p.tactic_changes + " tactic changes"));
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
          el("td", { class: "name" }, la ? la.name : "–"), el("td", { class: "name" }, lb ? lb.name : "–"), howCell(r),
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
  // An unmatched row says why: "unmatched: ambiguous" (several equally good candidates) or
  // "unmatched: no counterpart", with the detail as a tooltip and below.
  function howCell(r) {
    if (r.method !== "unmatched" || !r.reason) {
      return el("td", { title: r.evidence || "" }, r.evidence ? [el("span", null, r.method), el("div", { class: "muted" }, r.evidence)] : r.method);
    }
    var code = r.reason.code.replace("_", " ");
    return el("td", { title: r.reason.detail }, [el("span", null, "unmatched: " + code), el("div", { class: "muted" }, r.reason.detail)]);
  }
  function backendByLabel(label) { return backends.filter(function (b) { return b.label === label; })[0]; }

  // ---------- wiring ----------
  // A large backend's graph is the costliest panel to draw and sits far below the fold: it is drawn
  // when the panel comes near the viewport, not as part of the first render (docs/performance.md).
  var LAZY_GRAPH_LAYERS = 1000;
  var graphSeen = typeof IntersectionObserver !== "function";
  var graphWaiting = false;
  function drawGraphWhenSeen() {
    if (graphSeen || current().layers.length <= LAZY_GRAPH_LAYERS) { renderGraph(); return; }
    if (graphWaiting) { return; }
    graphWaiting = true;
    clear($("graph")).appendChild(el("p", { class: "muted" }, "The graph is drawn when this panel is scrolled into view."));
    var observer = new IntersectionObserver(function (entries) {
      if (!entries.some(function (e) { return e.isIntersecting; })) { return; }
      observer.disconnect();
      graphSeen = true;
      graphWaiting = false;
      renderGraph();
    }, { rootMargin: "300px" });
    observer.observe($("graph-panel"));
  }
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
    drawGraphWhenSeen();
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
