"""The session page's panels, one module per panel, each beside the partial template it fills
(templates/visualizer/partials/): ``visualizer.presenters`` assembles them into the page and
its WebSocket frames.

=====================  =============================================  ==========================
module                 builds                                         template
=====================  =============================================  ==========================
``header``             the title bar: clock, cycle counters, gates    ``_header.html``
``timeline``           the position slider and the injections on it   ``_timeline.html``
``queues``             the three queues, the pod in flight, the pods  ``_queues.html``
                       waiting on Permit
``nodes``              the node cards, the node overview (search,     ``_nodes.html``,
                       label filter, colour), the custom objects      ``_node_card.html``
``cycle``              the current scheduling cycle (extension        ``_cycle.html``,
                       points, results, outcome, plugin errors)       ``_cycle_errors.html``
``filter_matrix``      the Filter matrix: rows, cells, outcome        ``_filter_matrix.html``
                       filter and pages
``score_table``        the score table (raw, normalised, weighted)    ``_score_table.html``
``preemption``         the latest preemption (DefaultPreemption)      ``_preemption.html``
``log``                the event log and each event's one-line        ``_log.html``
                       summary
``metrics``            the metrics and the pending-pods chart         ``_metrics.html``
``narrative``          the scenario's description and reached cues    ``_narrative.html``
``targets``            the pod and node names the fields offer        ``_targets.html``
``common``             below them all: the trace index, a page's own  (none)
                       view, the pager, quantities, a plugin call's
                       result, the shared constants
=====================  =============================================  ==========================

The panels import ``common`` (and one another, downwards), never ``visualizer.presenters``.
"""
