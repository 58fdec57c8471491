/* A pod's history, one click away: a click on a pod (a queue card, a pod on a node card, the
   current cycle's pod, an event of the log) loads that pod's history with htmx into the dock
   beside the page. The dock lies outside the panels the WebSocket replaces, so it stays open
   while the session moves, and it is fetched again when the position changes.
   Also keeps open the <details> and popovers (a plugin error's traceback) a reader opened,
   across the frames that replace the panels; Escape closes the traceback, then the history. */
(function () {
  "use strict";
  var session = document.querySelector("[data-session]");
  if (!session || !window.htmx) { return; }
  var url = session.getAttribute("data-history-url");
  var dock = session.querySelector("[data-pod-history-dock]");
  var current = null;     // the pod shown
  var loading = false;
  var POD = "[data-pod], [data-nominated-pod], [data-history-pod]";

  function podOf(el) {
    return el.getAttribute("data-history-pod") || el.getAttribute("data-pod") ||
      el.getAttribute("data-nominated-pod");
  }

  function position() {
    var header = document.getElementById("panel-header");
    return header ? header.getAttribute("data-position") : null;
  }

  function load(pod) {
    if (!url || !dock || !pod) { return; }
    current = pod;
    loading = true;
    dock.hidden = false;
    document.body.classList.add("history-open");
    htmx.ajax("GET", url + "?pod=" + encodeURIComponent(pod), {target: "#pod-history", swap: "outerHTML"})
      .finally(function () { loading = false; reopen(); });
  }

  function close() {
    current = null;
    if (dock) {
      dock.hidden = true;
      document.body.classList.remove("history-open");
      var panel = document.getElementById("pod-history");
      if (panel) { panel.replaceWith(Object.assign(document.createElement("div"), {id: "pod-history"})); }
    }
  }

  session.addEventListener("click", function (ev) {
    var t = ev.target;
    if (!t.closest) { return; }
    if (t.closest("[data-history-close]")) { close(); return; }
    if (t.closest("button, a, input, select, textarea, summary, form")) { return; }
    var el = t.closest(POD);
    // inside a <details> (a traceback, a menu) only a pod listed there opens a history (the
    // pods of another scheduler are listed in one)
    var details = t.closest("details");
    if (details && !(el && details.contains(el))) { return; }
    if (el && session.contains(el)) { load(podOf(el)); }
  });

  document.addEventListener("keydown", function (ev) {
    if (ev.key === "Escape") {
      var pops = document.querySelectorAll(".plugin-error-pop:popover-open");
      if (pops.length) { pops.forEach(function (p) { p.hidePopover(); }); return; }
      if (current) { close(); return; }
    }
    if (ev.key !== "Enter") { return; }
    var el = ev.target.closest && ev.target.closest(POD);
    if (el && el === ev.target) { ev.preventDefault(); load(podOf(el)); }
  });

  // pods are focusable and say what a click does
  function mark() {
    session.querySelectorAll(POD).forEach(function (el) {
      if (el.closest("button, a, form") || el.hasAttribute("tabindex")) { return; }
      el.setAttribute("tabindex", "0");
      el.classList.add("pod-link");
      if (!el.title) { el.title = "Click: the history of " + podOf(el); }
    });
  }

  // <details> and popovers kept open across the frames that replace them, by data-keep-open
  var open = new Set();
  document.addEventListener("toggle", function (ev) {
    var el = ev.target;
    if (!el.getAttribute || !el.hasAttribute("data-keep-open")) { return; }
    var key = el.getAttribute("data-keep-open");
    var isOpen = el.tagName === "DETAILS" ? el.open : ev.newState === "open";
    if (isOpen) { open.add(key); } else { open.delete(key); }
    if (isOpen && el.tagName !== "DETAILS") {   // one traceback card at a time
      document.querySelectorAll(".plugin-error-pop:popover-open").forEach(function (other) {
        if (other !== el) { other.hidePopover(); }
      });
    }
  }, true);
  function reopen() {
    open.forEach(function (key) {
      document.querySelectorAll('[data-keep-open="' + CSS.escape(key) + '"]').forEach(function (el) {
        if (el.tagName === "DETAILS") { el.open = true; }
        else if (el.showPopover && !el.matches(":popover-open")) {
          try { el.showPopover(); } catch (e) { /* not connected any more */ }
        }
      });
    });
  }

  // follow the session: fetch the history again when the position changed, at most once a
  // second (playing at full speed sends ten frames a second)
  var lastLoad = 0;
  var timer = null;
  function refresh() {
    var panel = document.getElementById("pod-history");
    if (!current || loading || !panel || panel.getAttribute("data-position") === position()) { return; }
    var wait = 1000 - (Date.now() - lastLoad);
    if (wait > 0) {
      if (!timer) { timer = setTimeout(function () { timer = null; refresh(); }, wait); }
      return;
    }
    lastLoad = Date.now();
    load(current);
  }

  session.addEventListener("htmx:wsAfterMessage", function () {
    mark();
    reopen();
    refresh();
  });
  mark();
})();
