// polygraph: the session timeline's behaviour (the HTML report and
// polygraph ui). Filters, deep links, and in the ui the live updates of
// a session being recorded and of the session list (server-sent events).
// No library, no eval, no inline handlers: it runs under a strict CSP.
"use strict";
(function () {
  // The filter state outlives a live update, which replaces the form.
  var state = null;

  function readState(form) {
    var sev = [];
    form.querySelectorAll('input[name="sev"]').forEach(function (i) { if (i.checked) sev.push(i.value); });
    return { sev: sev, rule: form.rule.value, kind: form.kind.value, call: form.call.value };
  }

  function writeState(form, s) {
    form.querySelectorAll('input[name="sev"]').forEach(function (i) { i.checked = s.sev.indexOf(i.value) >= 0; });
    ["rule", "kind", "call"].forEach(function (n) {
      var sel = form[n];
      sel.value = s[n];
      if (sel.value !== s[n]) sel.value = ""; // an option gone since
    });
  }

  function tokens(v) { return (v || "").split(" ").filter(Boolean); }

  // apply shows what the filters select: a finding by severity, rule,
  // kind and call; a row by kind, call and the rules of its findings.
  function apply() {
    var form = document.getElementById("filters");
    if (!form) return;
    var s = state = readState(form);
    var shown = 0, all = 0;
    document.querySelectorAll("[data-f]").forEach(function (el) {
      var d = el.dataset, ok;
      if (d.f === "finding") {
        ok = s.sev.indexOf(d.sev) >= 0 && (!s.rule || d.rule === s.rule) &&
          (!s.kind || d.kind === s.kind) && (!s.call || d.call === s.call);
        if (el.tagName === "ARTICLE") { all++; if (ok) shown++; }
      } else {
        ok = (!s.kind || d.kind === s.kind) && (!s.call || tokens(d.call).indexOf(s.call) >= 0) &&
          (!s.rule || tokens(d.rules).indexOf(s.rule) >= 0);
      }
      el.hidden = !ok;
    });
    var out = document.getElementById("shown");
    if (out) out.textContent = shown + " of " + all + " findings shown";
  }

  // target follows a deep link (#call-…, #finding-…, #proc-…): opens
  // what holds it and marks it.
  function target() {
    document.querySelectorAll(".targeted").forEach(function (el) { el.classList.remove("targeted"); });
    var id = decodeURIComponent(location.hash.slice(1));
    if (!id) return;
    var el = document.getElementById(id);
    if (!el) return;
    el.hidden = false;
    for (var p = el; p; p = p.parentElement) if (p.tagName === "DETAILS") p.open = true;
    var d = el.querySelector(":scope > details.detail");
    if (d) d.open = true;
    el.classList.add("targeted");
    el.scrollIntoView({ block: "start" });
  }

  function wire() {
    var form = document.getElementById("filters");
    if (form) {
      if (state) writeState(form, state);
      form.addEventListener("change", apply);
      form.addEventListener("submit", function (e) { e.preventDefault(); });
    }
    apply();
  }

  // replace swaps a region for new HTML from the server, keeping what
  // the reader opened and the filters.
  function replace(id, html) {
    var old = document.getElementById(id);
    if (!old) return;
    var open = [];
    old.querySelectorAll("details[open]").forEach(function (d) {
      var holder = d.id || (d.closest("[id]") || {}).id;
      if (holder && holder !== id) open.push(holder);
    });
    var box = document.createElement("div");
    box.innerHTML = html;
    var fresh = box.firstElementChild;
    if (!fresh) return;
    old.replaceWith(fresh);
    open.forEach(function (h) {
      var el = document.getElementById(h);
      if (!el) return;
      if (el.tagName === "DETAILS") el.open = true;
      else { var d = el.querySelector("details"); if (d) d.open = true; }
    });
    wire();
    if (location.hash) {
      var t = document.getElementById(decodeURIComponent(location.hash.slice(1)));
      if (t) t.classList.add("targeted");
    }
  }

  function follow(url, region, event) {
    var es = new EventSource(url);
    es.addEventListener(event, function (e) {
      replace(region, e.data);
      document.body.dataset.updated = String(Date.now());
    });
    es.addEventListener("end", function () { es.close(); });
  }

  // load fills a call's own view from the server the first time it is
  // opened (a server's page holds the timeline only).
  function load(d) {
    var src = d.dataset.src;
    if (!src || d.dataset.loaded) return;
    d.dataset.loaded = "1";
    var body = d.querySelector(".body");
    fetch(src, { credentials: "same-origin" }).then(function (r) {
      if (!r.ok) throw new Error(r.status + " " + r.statusText);
      return r.text();
    }).then(function (html) {
      body.innerHTML = html;
      apply();
    }).catch(function (e) {
      delete d.dataset.loaded;
      body.textContent = "could not load this call's view: " + e.message;
    });
  }
  document.addEventListener("toggle", function (e) {
    var d = e.target;
    if (d.tagName === "DETAILS" && d.open) load(d);
  }, true);

  document.addEventListener("DOMContentLoaded", function () {
    wire();
    target();
    window.addEventListener("hashchange", target);
    var b = document.body.dataset;
    if (b.stream) follow(b.stream, "session", "session");
    if (b.liststream) follow(b.liststream, "sessions", "list");
  });
})();
