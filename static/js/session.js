/* The session page: keyboard shortcuts, the connection indicator, read-only controls on a
   follower's page (the server refuses a follower's controls anyway), the view options
   (presentation mode, animated moves, the join code), copying the presenter link, and the
   View Transition that moves pods between queues, their cycle and the nodes. */
(function () {
  "use strict";
  var session = document.querySelector("[data-session]");
  if (!session) { return; }
  var follower = session.getAttribute("data-role") === "follower";
  var store = {
    get: function (key) { try { return window.localStorage.getItem(key); } catch (e) { return null; } },
    set: function (key, value) { try { window.localStorage.setItem(key, value); } catch (e) { /* private mode */ } }
  };

  function click(action) {
    var button = session.querySelector('[data-action="' + action + '"]');
    if (button && !button.disabled) { button.click(); return true; }
    return false;
  }

  document.addEventListener("keydown", function (ev) {
    if (follower || ev.ctrlKey || ev.metaKey || ev.altKey) { return; }
    var target = ev.target.closest ? ev.target : document.body;
    // Typing in a field never steps; a button focused from the keyboard keeps the shortcuts,
    // except space, which presses that button as usual.
    if (target.closest("input:not([type=checkbox]), textarea, select, [contenteditable]")) { return; }
    if (ev.key === " " && target.closest("button, summary, a, input")) { return; }
    // a focused scroll box (a wide table, the log) keeps its arrow keys and space for scrolling
    if ((ev.key === " " || ev.key === "ArrowLeft" || ev.key === "ArrowRight") &&
        target.closest("[role=region][tabindex], .table-wrap[tabindex], .log[tabindex]")) { return; }
    var keys = {ArrowRight: "step-event", e: "step-event", p: "step-point", c: "step-cycle",
                ArrowLeft: "back", b: "back"};
    var action = keys[ev.key];
    if (ev.key === " ") {
      action = session.querySelector("[data-playing]") ? "pause" : "play";
    }
    if (action && click(action)) { ev.preventDefault(); }
  });

  // A mouse click leaves no focus on a control, so `space` goes on playing and pausing as
  // documented instead of pressing the step button clicked last (a click from the keyboard
  // has detail 0 and keeps its focus).
  session.addEventListener("click", function (ev) {
    var button = ev.target.closest && ev.target.closest("[data-controls] button, [data-view-options] button");
    if (button && ev.detail > 0) { button.blur(); }
    var box = ev.target.closest && ev.target.closest("[data-view-options] label");
    if (box && ev.detail > 0) { window.setTimeout(function () { document.activeElement.blur(); }, 0); }
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

  // ------------------------------------------------------------------ view options

  function setPresent(on) {
    session.classList.toggle("session--present", on);
    document.documentElement.classList.toggle("presenting", on);
    var button = session.querySelector('[data-toggle="present"]');
    if (button) { button.setAttribute("aria-pressed", on ? "true" : "false"); }
    store.set("visualizer.present", on ? "1" : "0");
  }
  var params = new URLSearchParams(window.location.search);
  setPresent(params.has("present") ? params.get("present") !== "0" : store.get("visualizer.present") === "1");

  var reducedMotion = window.matchMedia ? window.matchMedia("(prefers-reduced-motion: reduce)") : null;
  var motionBox = session.querySelector('[data-toggle="motion"]');
  function motionWanted() { return !!(motionBox && motionBox.checked); }
  function setMotion(on) {
    if (motionBox) { motionBox.checked = on; }
    session.classList.toggle("session--still", !on);
    store.set("visualizer.motion", on ? "1" : "0");
  }
  var storedMotion = store.get("visualizer.motion");
  setMotion(storedMotion === null ? !(reducedMotion && reducedMotion.matches) : storedMotion === "1");
  if (motionBox) { motionBox.addEventListener("change", function () { setMotion(motionBox.checked); }); }

  function setShare(on) {
    session.classList.toggle("session--share", on);
    session.querySelectorAll('[data-toggle="share"][aria-pressed]').forEach(function (b) {
      b.setAttribute("aria-pressed", on ? "true" : "false");
    });
  }
  session.addEventListener("click", function (ev) {
    var toggle = ev.target.closest && ev.target.closest("button[data-toggle]");
    if (!toggle) { return; }
    var which = toggle.getAttribute("data-toggle");
    if (which === "present") { setPresent(!session.classList.contains("session--present")); }
    if (which === "share") { setShare(!session.classList.contains("session--share")); }
  });
  document.addEventListener("keydown", function (ev) {
    if (ev.key === "Escape" && session.classList.contains("session--share")) { setShare(false); }
  });

  // ------------------------------------------------------------------ the presenter link

  var copyButton = session.querySelector("[data-copy-presenter-link]");
  if (copyButton) {
    copyButton.addEventListener("click", function () {
      var url = window.location.origin + window.location.pathname;
      var result = session.querySelector("[data-copy-result]");
      function done(ok) {
        if (result) { result.textContent = ok ? "✓ copied" : "✗ copy failed: use the address bar"; }
      }
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(url).then(function () { done(true); }, function () { done(fallback(url)); });
      } else {
        done(fallback(url));
      }
    });
  }
  function fallback(text) {
    var area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.style.position = "fixed";
    area.style.opacity = "0";
    document.body.appendChild(area);
    area.select();
    var ok = false;
    try { ok = document.execCommand("copy"); } catch (e) { ok = false; }
    area.remove();
    return ok;
  }

  // ------------------------------------------------------------------ moving pods

  // Each pod's element carries a view-transition-name unique to the pod, so when a frame moves
  // it from one panel to another, the browser animates it from the old place to the new.
  // Frames are swapped inside document.startViewTransition; while playing fast, with the
  // option off, or with reduced motion asked for, they are swapped as they come.
  function animating() {
    if (!document.startViewTransition || !motionWanted()) { return false; }
    if (reducedMotion && reducedMotion.matches) { return false; }
    // A large cluster shows the node overview (no pod elements on nodes to move to), and a
    // View Transition over its thousands of cells costs more than the step itself.
    if (session.querySelector("[data-overview]")) { return false; }
    var header = session.querySelector("[data-playing]");
    if (header) {
      var speed = parseFloat(header.getAttribute("data-playing"));
      if (!speed || speed > 4) { return false; }
    }
    return true;
  }

  // A frame swapped inside a transition lands a moment later (the browser first captures the
  // old picture), so while one is under way the frames after it wait their turn: the page
  // always shows the frames in the order they came.
  var pending = null;
  function enqueue(job) {
    var done = (pending || Promise.resolve()).then(job).catch(function () { /* next frame */ });
    pending = done;
    done.then(function () { if (pending === done) { pending = null; } });
  }
  var HTMX_ATTRS = "[hx-get], [hx-post], [hx-vals], [hx-trigger], [hx-ext], [ws-send], [ws-connect], [hx-on], [hx-target], [hx-swap]";
  function parseFrame(message) {
    var template = document.createElement("template");
    template.innerHTML = message;
    return template.content;
  }
  // Where the pods are shown in a panel: each pod's transition name, the kind of its element and
  // the list it is in (a queue, a node, in flight or waiting), in page order.
  var NAMED_PODS = "[data-pod], [data-in-flight-pod], [data-waiting-pod]";
  function podPlaces(panel) {
    return Array.prototype.map.call(panel.querySelectorAll(NAMED_PODS), function (el) {
      var list = el.closest("[data-queue], [data-node], [data-between]");
      var where = list ? (list.getAttribute("data-queue") || list.getAttribute("data-node") || "between") : "";
      var kind = el.hasAttribute("data-pod") ? "pod" : el.hasAttribute("data-in-flight-pod") ? "flight" : "waiting";
      return el.getAttribute("style") + " " + kind + "@" + where;
    }).join("\n");
  }
  // Whether a frame moves a pod: a frame that leaves every pod where it is has nothing to
  // animate, and is swapped at once (a View Transition first captures the old picture, which
  // holds the frame back by a rendering frame or more).
  function podsMove(content) {
    return ["panel-queues", "panel-nodes"].some(function (id) {
      var fresh = content.getElementById(id), old = document.getElementById(id);
      return !!fresh && !!old && podPlaces(fresh) !== podPlaces(old);
    });
  }
  function swapFrame(content, message) {
    Array.prototype.slice.call(content.children).forEach(function (fresh) {
      var old = fresh.id && document.getElementById(fresh.id);
      if (!old) { return; }
      // scrolled boxes (the node overview, the Filter matrix) stay where the reader left them
      var scrolls = {};
      old.querySelectorAll("[data-keep-scroll]").forEach(function (el) {
        scrolls[el.getAttribute("data-keep-scroll")] = [el.scrollTop, el.scrollLeft];
      });
      // a focused scroll box inside (a table, the log) keeps the keyboard focus in its new copy
      var focused = document.activeElement, refocus = null;
      if (focused && focused !== document.body && old.contains(focused)) {
        if (focused.hasAttribute("data-keep-scroll")) {
          refocus = '[data-keep-scroll="' + focused.getAttribute("data-keep-scroll") + '"]';
        } else if (focused.id) {
          refocus = "#" + (window.CSS && CSS.escape ? CSS.escape(focused.id) : focused.id);
        } else if (focused.matches("[data-log]")) {
          refocus = "[data-log]";
        }
      }
      old.replaceWith(fresh);
      fresh.querySelectorAll("[data-keep-scroll]").forEach(function (el) {
        var at = scrolls[el.getAttribute("data-keep-scroll")];
        if (at) { el.scrollTop = at[0]; el.scrollLeft = at[1]; }
      });
      if (refocus) {
        var again = fresh.matches(refocus) ? fresh : fresh.querySelector(refocus);
        if (again && again.focus) { again.focus({preventScroll: true}); }
      }
      // only what has htmx attributes needs processing (a 5,000-cell overview has none)
      if (fresh.matches(HTMX_ATTRS) || fresh.querySelector(HTMX_ATTRS)) { window.htmx.process(fresh); }
    });
    // the same event as a frame htmx swaps itself: listeners see every frame either way
    session.dispatchEvent(new CustomEvent("htmx:wsAfterMessage", {bubbles: true, detail: {message: message}}));
  }

  session.addEventListener("htmx:wsBeforeMessage", function (ev) {
    var message = ev.detail.message;
    if (typeof message !== "string" || !window.htmx) { return; }
    var moves = message.indexOf('id="panel-queues"') !== -1 || message.indexOf('id="panel-nodes"') !== -1;
    var animate = moves && animating() && message.indexOf("data-overview") === -1;
    ev.preventDefault();
    // Swapped here, not by htmx: replacing each panel by its id is all a frame needs, and
    // htmx's own out-of-band swap and settling take about twice as long on a large frame
    // (a 5,000-node overview; docs/benchmarks.md).
    var content = parseFrame(message);
    if (!pending && !(animate && podsMove(content))) { swapFrame(content, message); return; }
    enqueue(function () {
      if (!animate || !animating() || !podsMove(content)) { swapFrame(content, message); return null; }
      return document.startViewTransition(function () { swapFrame(content, message); }).updateCallbackDone;
    });
  });

  // ------------------------------------------------------------------ this page's own view

  // Queue pages, the Filter matrix's page and outcome, and the node overview's search, label
  // filter, colour and selection are this page's own window onto the moment shown: sent as a
  // "view" message (visualizer.consumers), the server answers with the panels re-rendered.
  var viewForm = session.querySelector('[data-form="view"]');
  function sendView(fields) {
    if (!viewForm) { return; }
    viewForm.textContent = "";
    Object.keys(fields).forEach(function (key) {
      var input = document.createElement("input");
      input.type = "hidden";
      input.name = key;
      input.value = fields[key];
      viewForm.appendChild(input);
    });
    viewForm.requestSubmit();
  }
  var nodesMode = null;   // the nodes panel's Cards | Overview, once this page chose one
  var nodeForm = session.querySelector('[data-form="node-view"]');
  function selectNode(name) {
    var input = nodeForm && nodeForm.querySelector("[data-node-selected]");
    if (!input) { sendView({node: name}); return; }
    input.value = name;
    nodeForm.requestSubmit();
  }
  session.addEventListener("click", function (ev) {
    var t = ev.target;
    if (!t.closest) { return; }
    var set = t.closest("[data-view-set]");
    if (set && !set.disabled) {
      try {
        var fields = JSON.parse(set.getAttribute("data-view-set"));
        if (fields.nodes) { nodesMode = fields.nodes; }
        sendView(fields);
      } catch (e) { /* not JSON */ }
      return;
    }
    var pick = t.closest("[data-select-node]");
    if (pick) { selectNode(pick.getAttribute("data-select-node")); return; }
    var cell = t.closest("[data-heat] i[data-n]");
    if (cell) { selectNode(cell.getAttribute("data-n")); }
  });
  // a cell's figures on hover (one title set when needed keeps each frame small)
  var LEVELS = ["0–9%", "10–19%", "20–29%", "30–39%", "40–49%", "50–59%", "60–69%", "70–79%",
                "80–89%", "90–99%", "100%", "over allocatable"];
  session.addEventListener("mouseover", function (ev) {
    var cell = ev.target.closest && ev.target.closest("[data-heat] i[data-n]");
    if (!cell || cell.title) { return; }
    var overview = cell.closest("[data-node-overview]");
    var level = parseInt((cell.className.match(/\bh(\d+)\b/) || [0, 0])[1], 10);
    var notes = [];
    if (/\bc\b/.test(cell.className)) { notes.push("cordoned"); }
    if (/\bn\b/.test(cell.className)) { notes.push("nominated pods"); }
    if (/\bs\b/.test(cell.className)) { notes.push("selected"); }
    cell.title = cell.getAttribute("data-n") + ": " + (overview ? overview.getAttribute("data-colour") : "") +
      " " + LEVELS[level] + " requested" + (notes.length ? " · " + notes.join(", ") : "") + " (click for its card)";
  });
  // The names the injection, log-filter and node-search fields offer are not in the frames
  // (10,000 pods and 5,000 nodes are half a megabyte): the targets panel names their version,
  // and focusing such a field fetches them (visualizer.views._targets) once per version.
  var targetsAsked = null;
  function loadTargets() {
    var panel = document.getElementById("panel-targets");
    var version = panel && panel.getAttribute("data-targets");
    // a panel swapped in by a frame (even of the same version) has empty datalists again
    if (!version || panel.getAttribute("data-loaded") === version || version === targetsAsked) { return; }
    targetsAsked = version;
    var base = window.location.pathname.replace(/\/?$/, "/");
    fetch(base + "targets/?v=" + encodeURIComponent(version), {credentials: "same-origin"})
      .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
      .then(function (html) {
        var current = document.getElementById("panel-targets");
        if (!current || current.getAttribute("data-targets") !== version) { return; }  // moved on
        var template = document.createElement("template");
        template.innerHTML = html;
        ["pod-keys", "node-names"].forEach(function (id) {
          var fresh = template.content.getElementById(id), old = document.getElementById(id);
          if (fresh && old) { old.replaceWith(fresh); }
        });
        current.setAttribute("data-loaded", version);
      })
      .catch(function () {})
      .then(function () { if (targetsAsked === version) { targetsAsked = null; } });
  }
  function offersTargets(el) {
    var list = el && el.getAttribute && el.getAttribute("list");
    return list === "pod-keys" || list === "node-names";
  }
  document.addEventListener("focusin", function (ev) { if (offersTargets(ev.target)) { loadTargets(); } });

  // typing a node's whole name in "find node" selects it
  var find = session.querySelector("[data-node-find]");
  if (find) {
    find.addEventListener("change", function () {
      var name = find.value.trim();
      if (!name) { return; }
      // the node's cell in the overview, or its card; else the names fetched for the field
      var quoted = '"' + (window.CSS && CSS.escape ? CSS.escape(name) : name.replace(/["\\]/g, "\\$&")) + '"';
      var options = document.getElementById("node-names");
      var exact = !!session.querySelector("[data-n=" + quoted + "], [data-node=" + quoted + "]") ||
        (!!options && Array.prototype.some.call(options.options, function (o) { return o.value === name; }));
      var input = nodeForm.querySelector("[data-node-selected]");
      if (exact && input) { input.value = name; }
    }, true);
  }

  // a node just selected (a click, a search) is scrolled into the overview's view
  var shownSelection = null;
  function showSelection() {
    var heat = document.querySelector("[data-heat]");
    var cell = heat && heat.querySelector("i.s");
    var name = cell ? cell.getAttribute("data-n") : null;
    if (cell && name !== shownSelection) {
      heat.scrollTop = Math.max(0, cell.offsetTop - heat.clientHeight / 2);   // .heat is positioned
    }
    shownSelection = name;
  }

  // ------------------------------------------------------------------ the cued panel

  // In presentation mode a new cue brings the panel it is about on screen and marks it
  // panel--cued. The current cue names it in data-cue-panel (visualizer/panels/narrative.py):
  // queues, cycle, filter (the Filter matrix), scores (the score table), preemption, nodes,
  // metrics, log, or node:<name> (that node's card). When the cue (or its panel) changes, and
  // once more if what it names comes later (a cue at a time shows before its cycle's Filter
  // matrix: the cycle panel first, the matrix once there). Until the next cue, a frame that
  // grows the panel out of view brings it back, unless the presenter has scrolled since (a
  // wheel, a touch, a scroll key, a scrollbar): then the page stays where they put it. The mark
  // is put back on every frame (a frame replaces the panel's element). Smooth only when the
  // page's motion option is on (off by default under prefers-reduced-motion).
  var cuedKey = null, cuedExact = false, presenterScrolled = false;
  function scrolledByHand() { presenterScrolled = true; }
  session.addEventListener("wheel", scrolledByHand, {passive: true});
  session.addEventListener("touchmove", scrolledByHand, {passive: true});
  document.addEventListener("keydown", function (ev) {
    if (/^(PageUp|PageDown|ArrowUp|ArrowDown|Home|End)$/.test(ev.key)) { scrolledByHand(); }
  });
  document.addEventListener("pointerdown", function (ev) {   // on a scrollbar: beside the content
    var el = ev.target;
    if (el && el.clientWidth && (ev.offsetX > el.clientWidth || ev.offsetY > el.clientHeight)) { scrolledByHand(); }
  });
  function cuedTarget(panel, focus) {   // [the element, whether it is the one named (not its panel)]
    // a cue on the pick itself (PreemptionPick) is about the pickOneNodeForPreemption table,
    // which sits below the dry runs in a panel often taller than its column
    if (panel === "preemption" && focus === "pick") {
      var pick = session.querySelector("#panel-preemption [data-preemption-pick]");
      if (pick) { return [pick.closest(".table-wrap") || pick, true]; }
    }
    if (panel.indexOf("node:") === 0) {
      var name = panel.slice(5);
      var quoted = '"' + (window.CSS && CSS.escape ? CSS.escape(name) : name.replace(/["\\]/g, "\\$&")) + '"';
      var card = session.querySelector("#panel-nodes [data-node=" + quoted + "]");
      return [card || document.getElementById("panel-nodes"), !!card];
    }
    var table = {filter: "[data-filter-matrix]", scores: "[data-scores]"}[panel];
    if (table) {
      var cycle = document.getElementById("panel-cycle");
      var found = cycle && cycle.querySelector(table);
      return [found ? (found.closest(".table-wrap") || found) : cycle, !!found];
    }
    return [document.getElementById("panel-" + panel), true];
  }
  function showCuedPanel() {
    var presenting = session.classList.contains("session--present") ||
      document.documentElement.classList.contains("presenting");
    var cue = presenting ? session.querySelector("[data-cue-now][data-cue-panel]") : null;
    var panel = cue ? cue.getAttribute("data-cue-panel") : "";
    var found = panel ? cuedTarget(panel, cue.getAttribute("data-cue-focus")) : [null, false], target = found[0];
    session.querySelectorAll(".panel--cued").forEach(function (el) {
      if (el !== target) { el.classList.remove("panel--cued"); }
    });
    if (!target) { cuedKey = null; return; }
    target.classList.add("panel--cued");
    var key = cue.getAttribute("data-cue") + " " + panel;
    if (key === cuedKey && (cuedExact || !found[1])) {
      if (!presenterScrolled) { target.scrollIntoView({block: "nearest", inline: "nearest"}); }   // grown
      return;
    }
    if (key !== cuedKey) { presenterScrolled = false; }
    cuedKey = key;
    cuedExact = found[1];
    var smooth = motionWanted() && !(reducedMotion && reducedMotion.matches);
    target.scrollIntoView({block: "nearest", inline: "nearest", behavior: smooth ? "smooth" : "auto"});
  }

  function afterFrame() {
    readOnly(); scrollLog(); showSelection(); showCuedPanel();
    if (offersTargets(document.activeElement)) { loadTargets(); }   // a new version while typing
  }

  session.addEventListener("htmx:wsOpen", function () {
    connection("open", "● live");
    // a new socket starts with the default view: send this page's again
    if (nodeForm && Array.prototype.some.call(nodeForm.querySelectorAll("input"), function (i) { return i.value; })) {
      window.setTimeout(function () { nodeForm.requestSubmit(); }, 0);
    }
    if (nodesMode) { window.setTimeout(function () { sendView({nodes: nodesMode}); }, 0); }
  });
  session.addEventListener("htmx:wsClose", function (ev) {
    connection("closed", "○ reconnecting…");
    var code = ev.detail && ev.detail.event && ev.detail.event.code;
    if (code === 1009) { showStatus("The server refused a message that was too large", ""); }
  });
  session.addEventListener("htmx:wsAfterMessage", afterFrame);
  readOnly();
  scrollLog();
})();
