// The pending-pods report (templates/visualizer/report.html): a pod's history opens beside the
// list (htmx swaps it into #report-history); its close button, or Escape, empties that box
// again and gives the focus back to the History button that opened it.
(function () {
  "use strict";
  function closeHistory() {
    var box = document.getElementById("report-history");
    if (!box || !box.querySelector("[data-pod-history]")) return false;
    box.innerHTML = '<p class="empty">Choose a pod\u2019s <strong>History</strong>: its scheduling cycles in this run appear here, kube-scheduler\u2019s summary first.</p>';
    var opener = document.querySelector("[data-open-history][aria-current]");
    if (opener) { opener.removeAttribute("aria-current"); opener.focus(); }
    return true;
  }
  document.addEventListener("keydown", function (ev) {
    if (ev.key === "Escape" && !ev.defaultPrevented && closeHistory()) ev.preventDefault();
  });
  document.addEventListener("click", function (ev) {
    var close = ev.target.closest("[data-history-close]");
    var box = document.getElementById("report-history");
    if (close && box && box.contains(close)) closeHistory();
    var open = ev.target.closest("[data-open-history]");
    if (open) {
      document.querySelectorAll("[data-open-history][aria-current]").forEach(function (a) { a.removeAttribute("aria-current"); });
      open.setAttribute("aria-current", "true");
    }
  });
  document.addEventListener("htmx:afterSwap", function (ev) {
    if (ev.target && ev.target.id === "report-history") {
      var head = ev.target.querySelector("h2");
      if (head) { head.setAttribute("tabindex", "-1"); head.focus({ preventScroll: true }); }
      if (window.matchMedia("(max-width: 900px)").matches) ev.target.scrollIntoView({ block: "start" });
    }
  });
})();
