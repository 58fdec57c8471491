/* The colour theme of every page: "light" (the default) or "projector" (dark, high contrast,
   larger type; docs/ui-tour.md). Loaded in <head>, before the page is drawn, so a page never
   flashes the other theme; any button with data-toggle="theme" switches it, and the choice is
   remembered in this browser (a follower picks it on a phone, the presenter on the laptop). */
(function () {
  "use strict";
  var KEY = "visualizer.theme";
  var root = document.documentElement;
  function stored() { try { return window.localStorage.getItem(KEY); } catch (e) { return null; } }
  function apply(theme) {
    if (theme === "projector") { root.setAttribute("data-theme", "projector"); }
    else { root.removeAttribute("data-theme"); }
    document.querySelectorAll('[data-toggle="theme"]').forEach(function (b) {
      b.setAttribute("aria-pressed", theme === "projector" ? "true" : "false");
    });
  }
  var params = new URLSearchParams(window.location.search);
  var asked = params.get("theme");
  var theme = asked === "projector" || asked === "light" ? asked : stored();
  apply(theme);
  document.addEventListener("DOMContentLoaded", function () { apply(root.getAttribute("data-theme") || "light"); });
  document.addEventListener("click", function (ev) {
    var button = ev.target.closest && ev.target.closest('[data-toggle="theme"]');
    if (!button) { return; }
    var next = root.getAttribute("data-theme") === "projector" ? "light" : "projector";
    apply(next);
    try { window.localStorage.setItem(KEY, next); } catch (e) { /* private mode */ }
    if (ev.detail > 0) { button.blur(); }
  });
})();
