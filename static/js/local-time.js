/* <time datetime="..." data-local-time> elements (visualizer/templatetags/changes_tags.py) show
   the time in the browser's own time zone; the server's UTC text stays as the title, and is
   what a page without scripts shows. */
(function () {
  "use strict";
  function pad(n) { return (n < 10 ? "0" : "") + n; }
  function localise(root) {
    var months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    (root || document).querySelectorAll("time[data-local-time]:not([data-localised])").forEach(function (el) {
      var d = new Date(el.getAttribute("datetime"));
      if (isNaN(d.getTime())) return;
      var zone = "";
      try { zone = Intl.DateTimeFormat().resolvedOptions().timeZone || ""; } catch (e) { zone = ""; }
      el.textContent = pad(d.getHours()) + ":" + pad(d.getMinutes()) + ":" + pad(d.getSeconds()) +
        (zone ? " " + zone : " local time") + ", " + d.getDate() + " " + months[d.getMonth()] + " " + d.getFullYear();
      el.setAttribute("data-localised", "");
    });
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () { localise(); });
  } else {
    localise();
  }
})();
