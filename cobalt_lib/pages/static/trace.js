// An item's trace in its detail panel (pages.js calls window.cobaltTrace): the span tree on a timeline,
// each model call with its messages and token usage, each tool call with its arguments and result.
// Every value from the run is inserted as text (textContent / append of strings), never as HTML.
(function () {
  "use strict";
  var MESSAGE_KEYS = ["gen_ai.system_instructions", "gen_ai.input.messages", "gen_ai.output.messages"];

  function el(tag, cls) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    for (var i = 2; i < arguments.length; i++) {
      var child = arguments[i];
      if (child !== null && child !== undefined) node.append(typeof child === "object" ? child : String(child));
    }
    return node;
  }
  function parse(value) {
    if (typeof value === "string" && /^\s*[\[{]/.test(value)) { try { return JSON.parse(value); } catch (e) { /* text */ } }
    return value;
  }
  function text(value) {
    value = parse(value);
    return typeof value === "string" ? value : JSON.stringify(value, null, 1);
  }
  // pages.js's Numbers, the same rules as cobalt_lib/_numbers.py (it loads after this file: asked at call time)
  function ms(v) { return window.cobaltNumbers.ms(v); }
  function tokens(span) {
    var a = span.attributes || {};
    var input = a["gen_ai.usage.input_tokens"], output = a["gen_ai.usage.output_tokens"];
    if (input === undefined) input = a["gen_ai.usage.prompt_tokens"];
    if (output === undefined) output = a["gen_ai.usage.completion_tokens"];
    return input === undefined && output === undefined ? null : [input, output];
  }
  function messages(value) {
    value = parse(value);
    if (typeof value === "string") return [{role: "system", parts: [{type: "text", content: value}]}];
    if (!Array.isArray(value)) return [];
    if (value.length && value.every(function (v) { return v && !v.role && v.type; })) return [{role: "system", parts: value}];
    return value.filter(function (v) { return v && typeof v === "object"; });
  }
  function partNode(part) {
    if (!part || typeof part !== "object") return null;
    if (part.type === "text") return el("pre", "msg-text", text(part.content));
    if (part.type === "tool_call") return el("div", "msg-call", "tool call ", el("b", null, String(part.name)), " ", el("code", null, text(part.arguments)));
    if (part.type === "tool_call_response") return el("div", "msg-call", "tool result ", el("code", null, text(part.response !== undefined ? part.response : part.result)));
    return el("div", "muted", "[" + part.type + "]");
  }
  function messageNode(message) {
    var box = el("div", "msg role-" + String(message.role || "unknown").replace(/[^a-z_]/gi, ""), el("span", "role", String(message.role || "?")));
    var parts = message.parts || [];
    if (!parts.length && message.content !== undefined) box.append(el("pre", "msg-text", text(message.content)));
    parts.forEach(function (part) { var node = partNode(part); if (node) box.append(node); });
    return box;
  }
  function body(span) {
    var a = span.attributes || {};
    var box = el("div", "span-body");
    if (span.status === "error") box.append(el("p", "fail", "error" + (span.status_message ? ": " + span.status_message : "")));
    if (span.kind === "tool") {
      if ("gen_ai.tool.call.arguments" in a) box.append(el("h5", null, "Arguments"), el("pre", "tool-args", text(a["gen_ai.tool.call.arguments"])));
      if ("gen_ai.tool.call.result" in a) box.append(el("h5", null, "Result"), el("pre", "tool-result", text(a["gen_ai.tool.call.result"])));
    } else if (span.kind === "model" || span.kind === "embeddings") {
      MESSAGE_KEYS.forEach(function (key) { messages(a[key]).forEach(function (m) { box.append(messageNode(m)); }); });
    }
    var rest = {};
    Object.keys(a).forEach(function (key) { if (MESSAGE_KEYS.indexOf(key) < 0 && key.indexOf("gen_ai.tool.call.") !== 0) rest[key] = a[key]; });
    if (Object.keys(rest).length) box.append(el("details", "attrs", el("summary", null, "attributes"), el("pre", null, JSON.stringify(rest, null, 1))));
    return box;
  }
  function plural(n, noun) { return n + " " + noun + (n === 1 ? "" : "s"); }
  function tree(spans) {
    var byId = {}, roots = [];
    spans.forEach(function (s) { byId[s.span_id] = {span: s, children: []}; });
    spans.slice().sort(function (x, y) { return x.start_ns - y.start_ns; }).forEach(function (s) {
      var parent = s.parent_id && byId[s.parent_id];
      (parent && parent.span !== s ? parent.children : roots).push(byId[s.span_id]);
    });
    return roots;
  }

  window.cobaltTrace = function (spans) {
    var start = Math.min.apply(null, spans.map(function (s) { return s.start_ns; }));
    var end = Math.max.apply(null, spans.map(function (s) { return s.start_ns + (s.duration_ms || 0) * 1e6; }));
    var wall = Math.max(end - start, 1);
    var models = spans.filter(function (s) { return s.kind === "model"; });
    var used = models.map(tokens).filter(Boolean);
    var summary = plural(spans.length, "span") + " · " + plural(models.length, "model call") +
      (used.length ? " (" + used.reduce(function (n, t) { return n + (t[0] || 0); }, 0) + " in / " + used.reduce(function (n, t) { return n + (t[1] || 0); }, 0) + " out tokens)" : "") +
      " · " + plural(spans.filter(function (s) { return s.kind === "tool"; }).length, "tool call") + " · " + ms((end - start) / 1e6);
    var list = el("div", "trace-tree");
    (function walk(nodes, depth) {
      nodes.forEach(function (node) {
        var s = node.span, t = tokens(s);
        var bar = el("span", "bar kind-" + s.kind);
        bar.style.left = ((s.start_ns - start) / wall * 100).toFixed(2) + "%";
        bar.style.width = Math.max((s.duration_ms || 0) * 1e6 / wall * 100, 0.3).toFixed(2) + "%";
        var head = el("summary", "span-head" + (s.status === "error" ? " error" : ""),
          el("span", "span-name", s.name), " ", el("span", "badge kind kind-" + s.kind, s.kind),
          el("span", "span-time", "+" + ms((s.start_ns - start) / 1e6) + " · " + ms(s.duration_ms)),
          el("span", "span-tokens", t ? (t[0] === undefined ? "?" : t[0]) + " in / " + (t[1] === undefined ? "?" : t[1]) + " out" : ""),
          el("span", "timeline", bar));
        head.firstChild.style.paddingLeft = (depth * 18) + "px";  // the name is indented under its parent
        var row = el("details", "span-row", head, body(s));
        row.setAttribute("data-span", s.span_id);
        row.setAttribute("data-kind", s.kind);
        list.append(row);
        walk(node.children, depth + 1);
      });
    })(tree(spans), 0);
    return el("div", "trace", el("h4", null, "Trace ", el("span", "muted trace-summary", summary)), list);
  };
})();
