"""The API server's objects as the scheduler sees them, and what each change does to the cache
and the queue (upstream ``pkg/scheduler/eventhandlers.go``, v1.28: addPodToCache,
updatePodInCache, deletePodFromCache, addPodToSchedulingQueue, updatePodInSchedulingQueue,
deletePodFromSchedulingQueue, addNodeToCache, updateNodeInCache, deleteNodeFromCache,
preCheckForNode, nodeSchedulingPropertiesChange, buildEvtResHandler for custom resources and
volumes), with the API writes they answer: timeline actions and injected events, a pod's
graceful termination, priority admission, the pod garbage collector of a deleted node, the
disruption controller's ``disruptionsAllowed``, and the status patch of nominatedNodeName.

The loop it runs in gives it: the clock (``now``), ``_push`` (a termination due later),
``_next_rv`` (resource versions), the API objects (``pods``, ``nodes``, ``priority_classes``,
``namespaces``, ``pdbs``, ``custom_objects``, volumes), the cache, the queue, the frameworks (their waiting
pods), the trace, and one call: ``_wait_on_permit_returned(waiting_pod)`` (a deleted pod
waiting on Permit ends its binding cycle at once, engine/binding_cycle.py). It imports none of
the engine's other pieces.
"""
from __future__ import annotations

import copy

from .framework import interface as fw
from .framework.interface import Code
from .labels import find_untolerated_taint
from .objects import CustomObject
from .phases import PHASE_COMPLETION
from .quantity import US
from .scenario import SYSTEM_CLASS_NAMES


VOLUME_STORES = {"PersistentVolume": "pvs", "PersistentVolumeClaim": "pvcs", "StorageClass": "storage_classes",
                  "CSINode": "csi_nodes"}
VOLUME_EVENTS = {"PersistentVolume": (fw.GVK.PersistentVolume, "Pv"),
                  "PersistentVolumeClaim": (fw.GVK.PersistentVolumeClaim, "Pvc"),
                  "StorageClass": (fw.GVK.StorageClass, "StorageClass"), "CSINode": (fw.GVK.CSINode, "CSINode")}


def volume_key(o) -> str:
    return o.key if hasattr(o, "key") else o.name


def compute_disruptions_allowed(pdb, pods) -> int:
    """SPEC §1: expected = existing pods in the namespace the selector matches; healthy = those
    bound and not terminating; desired from minAvailable or expected - maxUnavailable
    (percentages of expected rounded up)."""
    sel = pdb.selector
    expected = healthy = 0
    for p in pods:
        if p.namespace != pdb.namespace or sel is None or sel.empty or not sel.matches(p.labels):
            continue
        expected += 1
        if p.node_name and p.deletion_timestamp is None:
            healthy += 1

    def scaled(v):
        if isinstance(v, str) and v.endswith("%"):
            pct = int(v[:-1])
            return -(-pct * expected // 100)
        return int(v)

    if pdb.max_unavailable is not None:
        desired = expected - scaled(pdb.max_unavailable)
    elif pdb.min_available is not None:
        desired = scaled(pdb.min_available)
    else:
        desired = 1
    return max(0, healthy - desired)


def node_scheduling_properties_change(new, old):
    """nodeSchedulingPropertiesChange: the first of these that changed, else None."""
    if new.unschedulable != old.unschedulable and not new.unschedulable:
        return fw.NodeSpecUnschedulableChange
    if new.allocatable != old.allocatable:
        return fw.NodeAllocatableChange
    if new.labels != old.labels:
        return fw.NodeLabelChange
    if new.taints != old.taints:
        return fw.NodeTaintChange
    if new.conditions != old.conditions:
        return fw.NodeConditionChange
    return None


def resolve_priority(loop, pod):
    """Priority admission: spec.priority, else the PriorityClass, else the global default."""
    pc = None
    if pod.priority_class_name:
        pc = loop.priority_classes.get(pod.priority_class_name)
    else:
        for c in loop.priority_classes.values():
            if c.global_default:
                pc = c
                break
    if pod.spec_priority is not None:
        pod.priority = pod.spec_priority
    elif pc is not None:
        pod.priority = pc.value
    if pod.preemption_policy is None and pc is not None:
        pod.preemption_policy = pc.preemption_policy


def responsible(loop, pod) -> bool:
    return pod.scheduler_name in loop.frameworks


def pod_create(loop, pod, action=None, restore=None):
    if pod.key in loop.pods:
        skip_action(loop, action, f"pod {pod.key} already exists")
        return
    pod = pod.copy()
    resolve_priority(loop, pod)
    pod.resource_version = loop._next_rv()
    loop._uid += 1
    pod.uid = f"uid-{loop._uid}"
    loop.deleted_pods.pop(pod.key, None)
    if pod.node_name:
        if pod.start_time is None:
            pod.start_time = loop.now
        loop.pods[pod.key] = pod
        loop.cache.add_pod(pod)
        loop.queue.assigned_pod_added(pod)
    else:
        loop.pods[pod.key] = pod
        if responsible(loop, pod):
            if restore is not None:
                loop.queue.restore(pod, **restore)
            else:
                loop.queue.add(pod)
            remember_pinfo(loop, pod.key)


def remember_pinfo(loop, key):
    pi = loop.queue.get(key)
    if pi is not None:
        loop.pinfos[key] = pi


def pod_update(loop, new, action=None):
    old = loop.pods.get(new.key)
    if old is None:
        skip_action(loop, action, f"pod {new.key} does not exist")
        return
    new = new.copy(uid=old.uid, priority=old.priority, spec_priority=old.spec_priority,
                   preemption_policy=old.preemption_policy if new.preemption_policy is None else new.preemption_policy,
                   node_name=old.node_name, nominated_node_name=old.nominated_node_name,
                   start_time=old.start_time if new.start_time is None else new.start_time,
                   deletion_timestamp=old.deletion_timestamp, disruption_target=old.disruption_target,
                   resource_version=loop._next_rv())
    replace_pod(loop, old, new)


def replace_pod(loop, old, new):
    """Store a new version of a pod and deliver the update as the informers would."""
    loop.pods[new.key] = new
    if old.node_name:
        loop.cache.update_pod(old, new)
        loop.queue.assigned_pod_updated(old, new)
        return
    if loop.cache.is_assumed_pod(new.key, new.uid):
        return  # updates of assumed pods are ignored (eventhandlers.go)
    if responsible(loop, new):
        loop.queue.update(old, new)
        remember_pinfo(loop, new.key)


def pod_delete(loop, key, action=None, reason="Deleted", preemptor=None):
    pod = loop.pods.get(key)
    if pod is None:
        skip_action(loop, action, f"pod {key} does not exist")
        return
    if pod.deletion_timestamp is not None:
        if reason == "Preempted" and not pod.disruption_target:
            # prepareCandidate marks every victim DisruptionTarget/PreemptionByScheduler and
            # deletes it, even one already terminating: it now terminates by preemption.
            loop.trace.emit("PodDeleted", pod=key, reason=reason, preemptor=preemptor,
                            gracePeriodSeconds=pod.termination_grace_period,
                            message="already terminating; marked as terminating by preemption")
            replace_pod(loop, pod, pod.copy(disruption_target=True, resource_version=loop._next_rv()))
            return
        skip_action(loop, action, f"pod {key} is already terminating")
        return
    loop.trace.emit("PodDeleted", pod=key, reason=reason, preemptor=preemptor,
                    gracePeriodSeconds=pod.termination_grace_period if pod.node_name else 0)
    if not pod.node_name:
        remove_pod(loop, pod, reason, preemptor)
        return
    new = pod.copy(deletion_timestamp=loop.now, disruption_target=(reason == "Preempted"),
                   resource_version=loop._next_rv())
    new._delete_reason = (reason, preemptor)
    replace_pod(loop, pod, new)
    end = loop.now + pod.termination_grace_period * US
    loop.terminating[key] = end
    loop._push(end, PHASE_COMPLETION, "termination", key)


def remove_pod(loop, pod, reason, preemptor):
    """The pod object is gone from the API."""
    key = pod.key
    del loop.pods[key]
    loop.deleted_pods[key] = {"deletedAt": loop.now / US, "reason": reason, "preemptor": preemptor}
    loop.terminating.pop(key, None)
    if pod.node_name:
        loop.cache.remove_pod(pod)
        loop.queue.move_all_to_active_or_backoff_queue(fw.AssignedPodDelete, pod, None, None)
    else:
        loop.queue.delete(pod)
        # deletePodFromSchedulingQueue: a pod waiting on Permit is rejected ("removed"), and
        # since it was assumed, its release is announced as an AssignedPodDelete
        fwk = loop.frameworks.get(pod.scheduler_name)
        wp = fwk.get_waiting_pod(pod.uid) if fwk is not None else None
        if wp is not None:
            # Its binding cycle takes the rejection at once (upstream's goroutine races the
            # handler; here it goes first), so the pod leaves its node in this same step.
            loop._taking_signal_now = wp
            try:
                fwk.reject_waiting_pod(pod.uid)
            finally:
                loop._taking_signal_now = None
            if wp.signal is not None and wp.signal.code != Code.Success:
                loop._wait_on_permit_returned(wp)
            loop.queue.move_all_to_active_or_backoff_queue(fw.AssignedPodDelete, pod, None, None)
    loop.pinfos.pop(key, None)


def finish_termination(loop, key):
    pod = loop.pods.get(key)
    if pod is None or loop.terminating.get(key) != loop.now:
        return
    reason, preemptor = getattr(pod, "_delete_reason", ("Deleted", None))
    loop.trace.emit("PodRemoved", pod=key, node=pod.node_name, reason=reason, preemptor=preemptor,
                    message=f"its grace period ended: the pod is gone and {pod.node_name} frees its resources")
    remove_pod(loop, pod, reason, preemptor)


def node_add(loop, node, action=None):
    if node.name in loop.nodes:
        skip_action(loop, action, f"node {node.name} already exists")
        return
    loop.nodes[node.name] = node
    ni = loop.cache.add_node(node)
    loop.queue.move_all_to_active_or_backoff_queue(fw.NodeAdd, None, node, pre_check_for_node(loop, ni))


def node_update(loop, new, action=None):
    old = loop.nodes.get(new.name)
    if old is None:
        skip_action(loop, action, f"node {new.name} does not exist")
        return
    loop.nodes[new.name] = new
    ni = loop.cache.update_node(old, new)
    event = node_scheduling_properties_change(new, old)
    if event is not None:
        loop.queue.move_all_to_active_or_backoff_queue(event, old, new, pre_check_for_node(loop, ni))


def node_delete(loop, name, action=None):
    node = loop.nodes.pop(name, None)
    if node is None:
        skip_action(loop, action, f"node {name} does not exist")
        return
    loop.cache.remove_node(node)
    # The pod garbage collector deletes the pods bound to a deleted node at once.
    for pod in [p for p in loop.pods.values() if p.node_name == name]:
        loop.trace.emit("PodDeleted", pod=pod.key, reason="Deleted", preemptor=None, gracePeriodSeconds=0,
                        message=f"its node {name} was deleted, so the pod garbage collector deletes it")
        remove_pod(loop, pod, "Deleted", None)


def pre_check_for_node(loop, node_info):
    """preCheckForNode: the pod would pass admission on the node (resources, node
    affinity/selector, nodeName, host ports) and tolerates its NoSchedule taints."""
    from .plugins.noderesources.fit import fits
    from .plugins.nodeaffinity import get_required_node_affinity, required_node_affinity_match
    node = node_info.node

    def check(pod):
        if fits(pod, node_info):
            return False
        if not required_node_affinity_match(get_required_node_affinity(pod), node):
            return False
        if pod.node_name and pod.node_name != node.name:
            return False
        for hp in pod.host_ports:
            if node_info.ports_conflict(hp.ip, hp.protocol, hp.port):
                return False
        return find_untolerated_taint(node.taints, pod.tolerations, ("NoSchedule",)) is None
    return check


def skip_action(loop, action, reason):
    if action is not None:
        loop.trace.emit("ActionSkipped", action=action.verb, kind=action.kind,
                        name=(f"{action.namespace}/{action.name}" if action.namespace else action.name),
                        reason=reason, place=action.place)


def apply_action(loop, a):
    verb, kind = a.verb, a.kind
    if isinstance(a.obj, CustomObject) or a.api_version:
        return custom_object_action(loop, a)
    if loop.trace.enabled:
        loop.trace.emit("Action", action=verb, kind=kind,
                        name=(f"{a.namespace}/{a.name}" if a.namespace else a.name), place=a.place)
    if kind == "Pod":
        if verb == "create":
            pod_create(loop, a.obj, a)
        elif verb == "update":
            pod_update(loop, a.obj, a)
        else:
            pod_delete(loop, f"{a.namespace}/{a.name}", a)
    elif kind == "Node":
        if verb == "create":
            node_add(loop, a.obj, a)
        elif verb == "update":
            node_update(loop, a.obj, a)
        else:
            node_delete(loop, a.name, a)
    elif kind == "PriorityClass":
        if verb == "delete":
            if a.name in SYSTEM_CLASS_NAMES:
                # pkg/registry/scheduling/priorityclass/storage: REST.Delete refuses.
                skip_action(loop, a, f"PriorityClass {a.name} is a system priority class and cannot be deleted")
            elif loop.priority_classes.pop(a.name, None) is None:
                skip_action(loop, a, f"PriorityClass {a.name} does not exist")
        elif verb == "create" and a.name in loop.priority_classes:
            skip_action(loop, a, f"PriorityClass {a.name} already exists")
        elif verb == "update" and a.name not in loop.priority_classes:
            skip_action(loop, a, f"PriorityClass {a.name} does not exist")
        else:
            loop.priority_classes[a.name] = a.obj
    elif kind == "Namespace":
        namespace_action(loop, a)
    elif kind == "PodDisruptionBudget":
        key = f"{a.namespace}/{a.name}"
        if verb == "delete":
            if loop.pdbs.pop(key, None) is None:
                skip_action(loop, a, f"PodDisruptionBudget {key} does not exist")
        elif verb == "create" and key in loop.pdbs:
            skip_action(loop, a, f"PodDisruptionBudget {key} already exists")
        elif verb == "update" and key not in loop.pdbs:
            skip_action(loop, a, f"PodDisruptionBudget {key} does not exist")
        else:
            loop.pdbs[key] = a.obj
    elif kind in VOLUME_STORES:
        volume_action(loop, a)


def namespace_action(loop, a):
    """Create, update or delete a Namespace in the namespace lister. Nothing else happens:
    the v1.28 scheduler has no namespace event handler (eventhandlers.go
    addAllEventHandlers) and no plugin registers a Namespace event, so no pod moves;
    InterPodAffinity reads the lister at its next PreFilter or PreScore. An implicit
    namespace (one the scenario does not name) exists: an injected create replaces it,
    an injected update or delete finds it."""
    store = loop.namespaces.namespaces
    exists = store.get(a.name) is not None or a.name not in store
    if a.verb == "create" and store.get(a.name) is not None:
        skip_action(loop, a, f"Namespace {a.name} already exists")
    elif a.verb != "create" and not exists:
        skip_action(loop, a, f"Namespace {a.name} does not exist")
    else:
        store[a.name] = a.obj if a.verb != "delete" else None


def custom_object_action(loop, a):
    """Create, update or delete a custom resource; the dynamic informer's handler then
    moves pods if a plugin registered the object's GVK for that action
    (eventhandlers.go addAllEventHandlers, buildEvtResHandler)."""
    api = a.obj.api_version if a.obj is not None else a.api_version
    loop.has_custom_objects = True     # an injected one shows the state's customObjects from now on
    type_key = f"{api}/{a.kind}"
    key = f"{a.namespace}/{a.name}"
    store = loop.custom_objects.setdefault(type_key, {})
    old = store.get(key)

    def announce():
        # the object is stored before its Action event, so whoever looks at the engine
        # when the event is emitted (the page) sees the action carried out, as it says
        if loop.trace.enabled:
            loop.trace.emit("Action", action=a.verb, kind=a.kind, name=key, place=a.place)
    if (a.verb == "create") == (old is not None):
        announce()
    if a.verb == "create" and old is not None:
        return skip_action(loop, a, f"{a.kind} {key} already exists")
    if a.verb != "create" and old is None:
        return skip_action(loop, a, f"{a.kind} {key} does not exist")
    if a.verb == "delete":
        del store[key]
        new = None
        action, label = fw.ActionType.Delete, "Delete"
    else:
        new = CustomObject(a.obj.api_version, a.obj.kind, a.obj.namespace, a.obj.name, a.obj.manifest,
                           loop._next_rv())
        store[key] = new
        action, label = (fw.ActionType.Add, "Add") if a.verb == "create" else (fw.ActionType.Update, "Update")
    announce()
    gvk = (new or old).gvk
    if loop.custom_gvk_actions.get(gvk, 0) & int(action):
        resource = gvk.split(".", 1)[0]
        event = fw.ClusterEvent(gvk, action, f"{resource[:1].upper()}{resource[1:]}{label}")
        loop.queue.move_all_to_active_or_backoff_queue(
            event, old.manifest if old is not None else None, new.manifest if new is not None else None, None)


def get_object(loop, api_version, kind, namespace, name):
    """The manifest of a custom resource (a copy), or None."""
    o = loop.custom_objects.get(f"{api_version}/{kind}", {}).get(f"{namespace}/{name}")
    return copy.deepcopy(o.manifest) if o is not None else None


def list_objects(loop, api_version, kind, namespace=None) -> list:
    """The manifests (copies) of a custom resource's kind, in namespace/name order."""
    store = loop.custom_objects.get(f"{api_version}/{kind}", {})
    return [copy.deepcopy(o.manifest) for k, o in sorted(store.items())
            if namespace is None or o.namespace == namespace]


def volume_store(loop, kind) -> dict:
    return getattr(loop, VOLUME_STORES[kind])


def stamp_volume(loop, kind, o):
    """A new version of a volume object (a claim gets a uid the first time, as the API
    server gives it)."""
    if kind == "PersistentVolumeClaim" and not o.uid:
        # a UUID as the API server gives, derived from the claim and the resource version
        # (deterministic; a provisioned PV is named pvc-<uid>)
        import uuid
        o = o.copy(uid=str(uuid.uuid5(uuid.NAMESPACE_OID, f"{o.key}#{loop._rv + 1}")))
    if kind in ("PersistentVolume", "PersistentVolumeClaim"):
        o = o.copy(resource_version=loop._next_rv())
    return o


def volume_action(loop, a):
    kind, verb = a.kind, a.verb
    store = volume_store(loop, kind)
    key = f"{a.namespace}/{a.name}" if kind == "PersistentVolumeClaim" else a.name
    if verb == "delete":
        if store.pop(key, None) is None:
            skip_action(loop, a, f"{kind} {key} does not exist")
        volume_cache_changed(loop, kind, key)
        return        # no volume plugin registers a Delete event
    old = store.get(key)
    if verb == "create" and old is not None:
        skip_action(loop, a, f"{kind} {key} already exists")
        return
    if verb == "update" and old is None:
        skip_action(loop, a, f"{kind} {key} does not exist")
        return
    new = a.obj
    if kind == "PersistentVolumeClaim" and old is not None and not new.uid:
        new = new.copy(uid=old.uid)
    volume_write(loop, kind, key, new, old)


def volume_cache_changed(loop, kind, key):
    if kind == "PersistentVolume":
        loop.pv_cache.on_api_change(key)
    elif kind == "PersistentVolumeClaim":
        loop.pvc_cache.on_api_change(key)


def volume_write(loop, kind, key, new, old=None):
    """An API create/update of a volume object, from an action or from the binder's
    PreBind (and the controllers that answer it): store it, refresh the assume cache and
    send the cluster event its informer would (eventhandlers.go: PvAdd, PvUpdate, PvcAdd,
    PvcUpdate, StorageClassAdd (WaitForFirstConsumer classes only), StorageClassUpdate,
    CSINodeAdd, CSINodeUpdate), if some plugin registered for the resource."""
    new = stamp_volume(loop, kind, new)
    volume_store(loop, kind)[key] = new
    volume_cache_changed(loop, kind, key)
    gvk, short = VOLUME_EVENTS[kind]
    if old is None and kind == "StorageClass" and new.volume_binding_mode != "WaitForFirstConsumer":
        return
    if not gvk_registered(loop, gvk):
        return
    action = fw.ActionType.Add if old is None else fw.ActionType.Update
    event = fw.ClusterEvent(gvk, action, f"{short}{'Add' if old is None else 'Update'}")
    loop.queue.move_all_to_active_or_backoff_queue(event, old, new, None)


def gvk_registered(loop, gvk) -> bool:
    for f in loop.frameworks.values():
        for ev, _plugins in f.hint_map():
            if ev.resource == gvk:
                return True
    return False


def pdb_list(loop):
    """The PDBs with disruptionsAllowed as the disruption controller would compute it."""
    out = []
    for pdb in loop.pdbs.values():
        if pdb.fixed_disruptions_allowed is not None:
            pdb.disruptions_allowed = pdb.fixed_disruptions_allowed
        else:
            pdb.disruptions_allowed = compute_disruptions_allowed(pdb, loop.pods.values())
        out.append(pdb)
    return out


def set_nominated_node_name(loop, pod, node_name):
    """A status patch of nominatedNodeName (an unassigned-pod update event)."""
    current = loop.pods.get(pod.key)
    if current is None or current.node_name or current.nominated_node_name == node_name:
        return
    new = current.copy(nominated_node_name=node_name, resource_version=loop._next_rv())
    loop.trace.emit("Nomination", pod=pod.key, node=node_name or None)
    replace_pod(loop, current, new)
