/* The session page: keyboard shortcuts, the connection indicator, and read-only controls
   on a follower's page (the server refuses a follower's controls anyway). */
(function () {
  "use strict";
  var session = document.querySelector("[data-session]");
  if (!session) { return; }
  var follower = session.getAttribute("data-role") === "follower";

  function click(action) {
    var button = session.querySelector('[data-action="' + action + '"]');
    if (button && !button.disabled) { button.click(); return true; }
    return false;
  }

  document.addEventListener("keydown", function (ev) {
    if (follower || ev.ctrlKey || ev.metaKey || ev.altKey) { return; }
    var target = ev.target.closest ? ev.target : document.body;
    // Typing in a field never steps; a focused button (the one just clicked, say) keeps the
    // shortcuts, except space, which presses that button as usual.
    if (target.closest("input, textarea, select, [contenteditable]")) { return; }
    if (ev.key === " " && target.closest("button, summary, a")) { return; }
    var keys = {ArrowRight: "step-event", e: "step-event", p: "step-point", c: "step-cycle",
                ArrowLeft: "back", b: "back"};
    var action = keys[ev.key];
    if (ev.key === " ") {
      action = session.querySelector("[data-playing]") ? "pause" : "play";
    }
    if (action && click(action)) { ev.preventDefault(); }
  });

  function readOnly() {
    if (!follower) { return; }
    session.querySelectorAll("[data-control]").forEach(function (el) {
      el.disabled = true;
      el.title = "Only the presenter controls the session";
    });
  }

  function scrollLog() {
    var log = document.querySelector("[data-log]");
    if (log) { log.scrollTop = log.scrollHeight; }
  }

  // A click on an event of the log travels to just after it, through the timeline form
  // (one ws-send form rather than one per row keeps each frame small).
  session.addEventListener("click", function (ev) {
    var jump = ev.target.closest && ev.target.closest("[data-jump]");
    if (!jump || jump.disabled) { return; }
    var form = session.querySelector('[data-form="jump"]');
    var input = form && form.querySelector('input[name="position"]');
    if (!input) { return; }
    input.value = jump.getAttribute("data-jump");
    form.requestSubmit();
  });

  var indicator = session.querySelector("[data-connection]");
  function connection(state, text) {
    if (!indicator) { return; }
    indicator.setAttribute("data-connection", state);
    indicator.textContent = text;
  }

  session.addEventListener("htmx:wsOpen", function () { connection("open", "● live"); });
  session.addEventListener("htmx:wsClose", function () { connection("closed", "○ reconnecting…"); });
  session.addEventListener("htmx:wsAfterMessage", function () { readOnly(); scrollLog(); });
  readOnly();
  scrollLog();
})();
