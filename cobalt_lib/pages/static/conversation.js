// cobalt's pages: a conversation item drawn as its transcript, each assistant answer with its per-turn scores.
// pages.js asks `window.cobaltConversation.transcript(item)` for the item detail's output; null: not a conversation.
(function () {
  "use strict";

  function el(tag, attrs) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (key) { node.setAttribute(key, attrs[key]); });
    for (var i = 2; i < arguments.length; i++) {
      var child = arguments[i];
      if (child === null || child === undefined) continue;
      node.append(child instanceof Node ? child : String(child));  // text, never HTML
    }
    return node;
  }
  // pages.js's Numbers, the same rules as cobalt_lib/_numbers.py (it loads after this file: asked at call time)
  function ms(v) { return window.cobaltNumbers.ms(v); }
  function fmt(score) { return window.cobaltNumbers.score(score); }

  function isTranscript(item) {
    var meta = item.metadata && item.metadata.conversation;
    return !!meta && typeof meta === "object" && Array.isArray(item.output) &&
      item.output.every(function (m) { return m && typeof m === "object" && "role" in m; });
  }
  // {turn: [[evaluator, turnScore], ...]} from every evaluation that kept per-turn verdicts.
  function scoresByTurn(item) {
    var byTurn = {};
    Object.keys(item.evaluations || {}).forEach(function (name) {
      (item.evaluations[name].turns || []).forEach(function (t) { (byTurn[t.turn] = byTurn[t.turn] || []).push([name, t]); });
    });
    return byTurn;
  }
  function chip(name, t) {
    var state = t.status !== "ok" ? "error" : t.passed === false ? "fail" : t.passed === true ? "pass" : "";
    var value = t.status !== "ok" ? "eval-error" : fmt(t.score);
    return el("span", {class: "turn-score " + state, "data-evaluator": name, title: t.reason || t.error || ""},
      name + " " + value + (t.passed === false ? " ✗" : ""));
  }
  function message(m) {
    return el("div", {class: "message " + (m.role === "assistant" ? "assistant" : "user")},
      el("span", {class: "role"}, m.role), el("div", {class: "content"}, typeof m.content === "string" ? m.content : JSON.stringify(m.content)));
  }
  function transcript(item) {
    if (!isTranscript(item)) return null;
    var meta = item.metadata.conversation;
    var records = {};
    (meta.turns || []).forEach(function (r) { records[r.turn] = r; });
    var byTurn = scoresByTurn(item);
    var turns = Math.ceil(item.output.length / 2);
    var root = el("div", {class: "transcript", "data-turns": turns},
      el("p", {class: "muted"}, (meta.kind || "scripted") + " conversation · " + turns + (turns === 1 ? " turn" : " turns") +
        " · stopped: " + (meta.stopped || "–")));
    for (var turn = 1; turn <= turns; turn++) {
      var record = records[turn] || {};
      var block = el("div", {class: "turn", "data-turn": turn},
        el("div", {class: "turn-head"}, el("strong", {}, "turn " + turn), el("span", {class: "muted"}, " " + ms(record.latency_ms))));
      item.output.slice(2 * (turn - 1), 2 * turn).forEach(function (m) { block.append(message(m)); });
      var scores = byTurn[turn] || [];
      if (scores.length) block.append(el.apply(null, ["div", {class: "turn-scores"}].concat(scores.map(function (s) { return chip(s[0], s[1]); }))));
      root.append(block);
    }
    var sim = meta.simulator;
    if (sim) root.append(el("p", {class: "muted simulator"}, "simulated user " + sim.model + ": " + sim.turns + " turns asked, " +
      sim.cached + " from the cache, " + sim.calls + " model calls"));
    return root;
  }

  // The item table's output cell: `2 turns · last answer: ...`; null: not a conversation.
  function summary(item) {
    if (!isTranscript(item)) return null;
    var turns = Math.ceil(item.output.length / 2);
    var last = item.output.filter(function (m) { return m.role === "assistant"; }).pop();
    return turns + (turns === 1 ? " turn" : " turns") + " · " + (last ? "last answer: " + last.content : "no answer");
  }

  window.cobaltConversation = {transcript: transcript, summary: summary};
})();
