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

  // What the server would refuse (visualizer.consumers.MAX_MESSAGE_BYTES; Daphne drops frames
  // over 1 MiB without a word) is not sent: the status panel says why.
  var MAX_MESSAGE_BYTES = 512 * 1024;
  function showStatus(title, problem) {
    var panel = document.getElementById("panel-status");
    if (!panel) { return; }
    panel.className = "panel-status panel-status--invalid";
    panel.setAttribute("data-status-kind", "invalid");
    panel.textContent = "";
    var p = document.createElement("p");
    p.className = "status-title";
    p.textContent = "✗ " + title;
    panel.appendChild(p);
    if (problem) {
      var ul = document.createElement("ul"), li = document.createElement("li");
      ul.className = "problems";
      li.setAttribute("data-problem", "");
      li.textContent = problem;
      ul.appendChild(li);
      panel.appendChild(ul);
    }
  }
  session.addEventListener("htmx:wsBeforeSend", function (ev) {
    var size = new Blob([ev.detail.message || ""]).size;
    if (size > MAX_MESSAGE_BYTES) {
      ev.preventDefault();
      showStatus("Not sent: the message is too large",
                 "it is " + size + " bytes; at most " + MAX_MESSAGE_BYTES + " (paste a smaller manifest)");
    }
  });

  session.addEventListener("htmx:wsOpen", function () { connection("open", "● live"); });
  session.addEventListener("htmx:wsClose", function (ev) {
    connection("closed", "○ reconnecting…");
    var code = ev.detail && ev.detail.event && ev.detail.event.code;
    if (code === 1009) { showStatus("The server refused a message that was too large", ""); }
  });
  session.addEventListener("htmx:wsAfterMessage", function () { readOnly(); scrollLog(); });
  readOnly();
  scrollLog();
})();
