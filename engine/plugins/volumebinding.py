"""VolumeBinding: a pod's PersistentVolumeClaims, bound, to bind to an existing PV, or to
provision (upstream ``plugins/volumebinding/volume_binding.go`` and ``binder.go``, v1.28.0).

PreFilter sorts the pod's claims (``GetPodVolumeClaims``): bound ones, unbound ones of an
Immediate class (the PV controller binds those; the pod waits: UnschedulableAndUnresolvable)
and unbound ones of a WaitForFirstConsumer class, decided per node.  Filter
(``FindPodVolumes``) checks a bound claim's PV node affinity, looks for the smallest
available PV of the claim's class that fits the node (``FindMatchingVolume``), else whether
the class can provision there (its provisioner and ``allowedTopologies``).  Reserve assumes
the node's decisions in the binder's assume caches (``AssumePodVolumes``); Unreserve reverts
them; PreBind writes them (``BindPodVolumes``) and, in the simulator, the PV controller and
provisioner answer at once (``engine.volumes``).  Score is the VolumeCapacityPriority scorer,
an alpha feature gate off in v1.28: it scores 0.  Storage capacity tracking (CSIDriver,
CSIStorageCapacity) is not modelled: with no CSIDriver object upstream's
``hasEnoughCapacity`` answers "enough" too.
"""
from __future__ import annotations

from ..framework.interface import (ActionType, ClusterEvent, ClusterEventWithHint, Code, EnqueueExtensions,
                                   FilterPlugin, GVK, PreBindPlugin, PreFilterPlugin, PreFilterResult,
                                   ReservePlugin, ScorePlugin, Status)
from ..objects import ANN_BIND_COMPLETED, ANN_SELECTED_NODE, BINDING_WAIT_FOR_FIRST_CONSUMER, match_topology_selector_terms
from .nodeaffinity import node_selector_matches_on_table
from ..volumes import (bound_pv, check_node_affinity, claim_bound_to, claim_with_selected_node, is_volume_bound_to_claim,
                       pod_claim_names, provisioned_pv, volume_is_for_pod, with_status)

NAME = "VolumeBinding"
STATE_KEY = NAME

ErrReasonBindConflict = "node(s) didn't find available persistent volumes to bind"
ErrReasonNodeConflict = "node(s) had volume node affinity conflict"
ErrReasonNotEnoughSpace = "node(s) did not have enough free storage"
ErrReasonPVNotExist = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
NOT_SUPPORTED_PROVISIONER = "kubernetes.io/no-provisioner"   # volume.NotSupportedProvisioner
LABEL_HOSTNAME = "kubernetes.io/hostname"


class PodVolumeClaims:
    __slots__ = ("bound_claims", "unbound_claims_delay_binding", "unbound_claims_immediate",
                 "unbound_volumes_delay_binding")

    def __init__(self):
        self.bound_claims = []
        self.unbound_claims_delay_binding = []
        self.unbound_claims_immediate = []
        self.unbound_volumes_delay_binding = {}


class PodVolumes:
    """PodVolumes: a node's decisions: (pv, pvc) static bindings and claims to provision."""
    __slots__ = ("static_bindings", "dynamic_provisions")

    def __init__(self, static_bindings=None, dynamic_provisions=None):
        self.static_bindings = static_bindings
        self.dynamic_provisions = dynamic_provisions


class StateData:
    __slots__ = ("all_bound", "pod_volumes_by_node", "pod_volume_claims")

    def __init__(self, claims=None, by_node=None):
        self.all_bound = False
        self.pod_volumes_by_node = by_node
        self.pod_volume_claims = claims

    def clone(self):
        return self       # shared, as upstream's stateData.Clone


def is_pvc_fully_bound(pvc) -> bool:
    return bool(pvc.volume_name) and ANN_BIND_COMPLETED in pvc.annotations


def get_local_persistent_volume_node_names(pv) -> list:
    """util.GetLocalPersistentVolumeNodeNames: per term, the intersection of its
    ``kubernetes.io/hostname In`` values; the union over terms."""
    if pv is None or pv.node_affinity is None:
        return []
    result = set()
    for term in pv.node_affinity.terms:
        nodes = None
        for r in term.match_expressions:
            if r.key == LABEL_HOSTNAME and r.operator == "In":
                nodes = set(r.values) if nodes is None else nodes & set(r.values)
        result |= nodes or set()
    return sorted(result)


class _Error(Exception):
    pass


class VolumeBinding(PreFilterPlugin, FilterPlugin, ScorePlugin, ReservePlugin, PreBindPlugin, EnqueueExtensions):
    name = NAME

    def __init__(self, handle):
        self.handle = handle

    # ---------------------------------------------------------------- listers

    @property
    def _host(self):
        return self.handle.host

    def _class(self, name):
        return self._host.storage_classes.get(name)

    def is_delay_binding_mode(self, pvc) -> bool:
        """volume.IsDelayBindingMode: a missing class is not delayed."""
        name = pvc.class_name
        if not name:
            return False
        sc = self._class(name)
        return sc is not None and sc.volume_binding_mode == BINDING_WAIT_FOR_FIRST_CONSUMER

    # ---------------------------------------------------------------- PreFilter

    def pod_has_pvcs(self, pod):
        """podHasPVCs: (has a claim, error message or None), from the claim lister."""
        has = False
        for _v, name, ephemeral in pod_claim_names(pod):
            has = True
            pvc = self._host.pvcs.get(f"{pod.namespace}/{name}")
            if pvc is None:
                if ephemeral:
                    return has, f'waiting for ephemeral volume controller to create the persistentvolumeclaim "{name}"'
                return has, f'persistentvolumeclaim "{name}" not found'
            if pvc.phase == "Lost":
                return has, f'persistentvolumeclaim "{pvc.name}" bound to non-existent persistentvolume "{pvc.volume_name}"'
            if pvc.deleting:
                return has, f'persistentvolumeclaim "{pvc.name}" is being deleted'
            if ephemeral:
                err = volume_is_for_pod(pod, pvc)
                if err:
                    return has, err
        return has, None

    def get_pod_volume_claims(self, pod) -> PodVolumeClaims:
        """GetPodVolumeClaims, from the assume cache."""
        c = PodVolumeClaims()
        for _v, name, ephemeral in pod_claim_names(pod):
            key = f"{pod.namespace}/{name}"
            pvc = self._host.pvc_cache.get(key)
            if pvc is None:
                raise _Error(f'error getting PVC "{key}": not found')
            if ephemeral:
                err = volume_is_for_pod(pod, pvc)
                if err:
                    raise _Error(err)
            if is_pvc_fully_bound(pvc):
                c.bound_claims.append(pvc)
            elif self.is_delay_binding_mode(pvc) and not pvc.volume_name:
                c.unbound_claims_delay_binding.append(pvc)
            else:
                c.unbound_claims_immediate.append(pvc)
        for pvc in c.unbound_claims_delay_binding:
            cls = pvc.class_name
            c.unbound_volumes_delay_binding[cls] = [pv for pv in self._host.pv_cache.list()
                                                    if pv.storage_class_name == cls]
        return c

    def get_eligible_nodes(self, bound_claims):
        """GetEligibleNodes: the nodes named by the bound PVs' local (hostname) affinity."""
        if not bound_claims:
            return None
        eligible = None
        for pvc in bound_claims:
            pv = self._host.pv_cache.get(pvc.volume_name)
            if pv is None:
                return None
            names = get_local_persistent_volume_node_names(pv)
            if names:
                eligible = set(names) if eligible is None else eligible & set(names)
        return eligible

    def pre_filter(self, state, pod):
        has, err = self.pod_has_pvcs(pod)
        if err is not None:
            return None, Status(Code.UnschedulableAndUnresolvable, err)
        if not has:
            state.write(STATE_KEY, StateData())
            return None, Status(Code.Skip)
        try:
            claims = self.get_pod_volume_claims(pod)
        except _Error as e:
            return None, Status.error(str(e))
        if claims.unbound_claims_immediate:
            return None, Status(Code.UnschedulableAndUnresolvable, "pod has unbound immediate PersistentVolumeClaims")
        result = None
        eligible = self.get_eligible_nodes(claims.bound_claims)
        if eligible is not None:
            result = PreFilterResult(eligible)
        state.write(STATE_KEY, StateData(claims, {}))
        return result, None

    def pre_filter_extensions(self):
        return None

    # ---------------------------------------------------------------- Filter

    def find_pod_volumes(self, pod, claims, node):
        """FindPodVolumes: (PodVolumes, reasons)."""
        pv_ = PodVolumes()
        unbound_ok = bound_ok = storage_ok = pvs_found = True
        static, dynamic = [], []
        if claims.bound_claims:
            bound_ok, pvs_found = self.check_bound_claims(claims.bound_claims, node)
        if claims.unbound_claims_delay_binding and bound_ok and pvs_found:
            pass
        if claims.unbound_claims_delay_binding:
            to_match, to_provision = [], []
            early = False
            for claim in claims.unbound_claims_delay_binding:
                sel = claim.annotations.get(ANN_SELECTED_NODE)
                if sel is not None:
                    if sel != node.name:
                        unbound_ok = False
                        early = True
                        break
                    to_provision.append(claim)
                else:
                    to_match.append(claim)
            if not early:
                if to_match:
                    unbound_ok, static, unbound = self.find_matching_volumes(to_match, claims.unbound_volumes_delay_binding, node)
                    to_provision.extend(unbound)
                if to_provision:
                    unbound_ok, storage_ok, dynamic = self.check_volume_provisions(to_provision, node)
        pv_.static_bindings = static or None
        pv_.dynamic_provisions = dynamic or None
        reasons = []
        if not bound_ok:
            reasons.append(ErrReasonNodeConflict)
        if not unbound_ok:
            reasons.append(ErrReasonBindConflict)
        if not storage_ok:
            reasons.append(ErrReasonNotEnoughSpace)
        if not pvs_found:
            reasons.append(ErrReasonPVNotExist)
        return pv_, reasons

    def check_bound_claims(self, claims, node):
        """checkBoundClaims: (node affinity satisfied, every PV found).  In-tree PVs are not
        translated to CSI (their node affinity is read as written)."""
        for pvc in claims:
            pv = self._host.pv_cache.get(pvc.volume_name)
            if pv is None:
                return True, False
            if not check_node_affinity(pv, node.labels):
                return False, True
        return True, True

    def find_matching_volumes(self, claims, volumes_by_class, node):
        """findMatchingVolumes: claims by increasing request; each takes the smallest fitting
        PV not chosen yet."""
        chosen = set()
        found = True
        bindings, unbound = [], []
        for pvc in sorted(claims, key=lambda c: c.request):
            pv = find_matching_volume(pvc, volumes_by_class.get(pvc.class_name, []), node, chosen, True)
            if pv is None:
                unbound.append(pvc)
                found = False
                continue
            chosen.add(pv.name)
            bindings.append((pv, pvc))
        return found, bindings, unbound

    def check_volume_provisions(self, claims, node):
        """checkVolumeProvisions: (provision satisfied, sufficient storage, claims)."""
        out = []
        for claim in claims:
            cls = claim.class_name
            if not cls:
                raise _Error(f'no class for claim "{claim.key}"')
            sc = self._class(cls)
            if sc is None:
                raise _Error(f'failed to find storage class "{cls}"')
            if not sc.provisioner or sc.provisioner == NOT_SUPPORTED_PROVISIONER:
                return False, True, []
            if not match_topology_selector_terms(sc.allowed_topologies, node.labels):
                return False, True, []
            out.append(claim)
        return True, True, out

    def filter(self, state, pod, node_info):
        node = node_info.node
        s = state.get(STATE_KEY)
        if s is None:
            return Status.error(f'reading "{STATE_KEY}" from cycleState: not found')
        try:
            pod_volumes, reasons = self.find_pod_volumes(pod, s.pod_volume_claims, node)
        except _Error as e:
            return Status.error(str(e))
        if reasons:
            return Status(Code.UnschedulableAndUnresolvable, reasons)
        s.pod_volumes_by_node[node.name] = pod_volumes
        return None

    def _filter_node_only(self, state, pod, table):
        """Whether Filter reads the node and the pod only in this cycle (engine.resourcefit):
        when its screen can screen, every claim bound (the PVs' node affinity against the
        node's labels)."""
        return self._filter_suspects(state, pod, table) is not False

    def _filter_suspects(self, state, pod, table):
        """The nodes Filter rejects (Framework.filter_suspects) when every claim of the pod
        is bound (checkBoundClaims): those a bound PV's node affinity does not match, from the
        label columns. False (cannot screen) for unbound claims (findMatchingVolumes and
        checkVolumeProvisions per node), a PV not found, a node affinity term with
        matchFields, or a recorded CycleState.

        A node not evaluated gets no ``pod_volumes_by_node`` entry. With bound claims only, a
        node's entry has neither static bindings nor provisions, and Reserve, Unreserve and
        PreBind do with such an entry what they do without one: Reserve sets ``all_bound``
        either way (are_pod_volumes_bound is true, unless a claim changed since PreFilter, and
        then PreBind has nothing to write), Unreserve and PreBind write nothing."""
        s = state.get(STATE_KEY)
        if s is None or s.pod_volume_claims is None or state.recorder is not None:
            return False
        claims = s.pod_volume_claims
        if claims.unbound_claims_delay_binding or claims.unbound_claims_immediate:
            return False
        ok = None
        for pvc in claims.bound_claims:
            pv = self._host.pv_cache.get(pvc.volume_name)
            if pv is None:
                return False
            if pv.node_affinity is None:
                continue
            m = node_selector_matches_on_table(pv.node_affinity, table)
            if m is None:
                return False
            ok = m if ok is None else (ok & m)
        if ok is None or ok.all():
            return None
        return ~ok

    # ---------------------------------------------------------------- Score

    def score(self, state, pod, node_name):
        """Score: VolumeCapacityPriority is an alpha gate, off: no scorer, 0."""
        return 0, None

    def score_extensions(self):
        return None

    # ---------------------------------------------------------------- Reserve / PreBind

    def are_pod_volumes_bound(self, pod) -> bool:
        for _v, name, _e in pod_claim_names(pod):
            pvc = self._host.pvc_cache.get(f"{pod.namespace}/{name}")
            if pvc is None or not is_pvc_fully_bound(pvc):
                return False
        return True

    def reserve(self, state, pod, node_name):
        """Reserve: AssumePodVolumes (the PVs with their claimRef, the claims to provision
        with the selected node) into the assume caches."""
        s = state.get(STATE_KEY)
        if s is None:
            return Status.error(f'reading "{STATE_KEY}" from cycleState: not found')
        pv_ = (s.pod_volumes_by_node or {}).get(node_name)
        if pv_ is None:
            s.all_bound = True
            return None
        if self.are_pod_volumes_bound(pod):
            s.all_bound = True
            return None
        host = self._host
        new_bindings = []
        for pv, pvc in pv_.static_bindings or []:
            new_pv = bound_pv(pv, pvc)
            host.pv_cache.assume(new_pv.name, new_pv)
            new_bindings.append((new_pv, pvc))
        new_claims = []
        for claim in pv_.dynamic_provisions or []:
            c = claim_with_selected_node(claim, node_name)
            host.pvc_cache.assume(c.key, c)
            new_claims.append(c)
        pv_.static_bindings = new_bindings
        pv_.dynamic_provisions = new_claims
        s.all_bound = False
        return None

    def unreserve(self, state, pod, node_name):
        """Unreserve: RevertAssumedPodVolumes."""
        s = state.get(STATE_KEY)
        if s is None:
            return
        pv_ = (s.pod_volumes_by_node or {}).get(node_name)
        if pv_ is None:
            return
        for pv, _pvc in pv_.static_bindings or []:
            self._host.pv_cache.restore(pv.name)
        for c in pv_.dynamic_provisions or []:
            self._host.pvc_cache.restore(c.key)

    def pre_bind(self, state, pod, node_name):
        """PreBind: BindPodVolumes: write the assumed PVs and claims (bindAPIUpdate); the PV
        controller and the provisioner answer at once (engine.volumes); checkBindings."""
        s = state.get(STATE_KEY)
        if s is None:
            return Status.error(f'reading "{STATE_KEY}" from cycleState: not found')
        if s.all_bound:
            return None
        pv_ = (s.pod_volumes_by_node or {}).get(node_name)
        if pv_ is None:
            return Status.error(f'no pod volumes found for node "{node_name}"')
        host = self._host
        for pv, pvc in pv_.static_bindings or []:
            if host.pvs.get(pv.name) is None:
                return Status.error(f'binding volumes: pv "{pv.name}" not found')
            host.volume_write("PersistentVolume", pv.name, pv, host.pvs[pv.name])
        for c in pv_.dynamic_provisions or []:
            if host.pvcs.get(c.key) is None:
                return Status.error(f'binding volumes: pvc "{c.key}" not found')
            host.volume_write("PersistentVolumeClaim", c.key, c, host.pvcs[c.key])
        # the PV controller binds each claim to its PV; the provisioner creates the PVs
        for pv, pvc in pv_.static_bindings or []:
            cur_pv, cur_pvc = host.pvs[pv.name], host.pvcs.get(pvc.key)
            if cur_pvc is None:
                return Status.error(f'binding volumes: pvc "{pvc.key}" not found')
            host.volume_write("PersistentVolume", pv.name, with_status(cur_pv, "Bound"), cur_pv)
            host.volume_write("PersistentVolumeClaim", pvc.key, claim_bound_to(cur_pvc, pv.name), cur_pvc)
        node = host.nodes.get(node_name)
        for c in pv_.dynamic_provisions or []:
            cur = host.pvcs[c.key]
            sc = host.storage_classes.get(cur.class_name)
            if sc is None or node is None:
                return Status.error(f'binding volumes: provisioning failed for PVC "{cur.name}"')
            new_pv = provisioned_pv(cur, sc, node, host.csi_nodes.get(node_name), cur.uid)
            if new_pv.name not in host.pvs:
                host.volume_write("PersistentVolume", new_pv.name, new_pv, None)
            host.volume_write("PersistentVolumeClaim", c.key, claim_bound_to(cur, new_pv.name), cur)
        return None

    def events_to_register(self) -> list:
        """StorageClass, PersistentVolumeClaim, PersistentVolume: Add|Update; Node:
        Add|UpdateNodeLabel; CSINode, CSIDriver, CSIStorageCapacity: Add|Update."""
        au = ActionType.Add | ActionType.Update
        return [
            ClusterEventWithHint(ClusterEvent(GVK.StorageClass, au)),
            ClusterEventWithHint(ClusterEvent(GVK.PersistentVolumeClaim, au)),
            ClusterEventWithHint(ClusterEvent(GVK.PersistentVolume, au)),
            ClusterEventWithHint(ClusterEvent(GVK.Node, ActionType.Add | ActionType.UpdateNodeLabel)),
            ClusterEventWithHint(ClusterEvent(GVK.CSINode, au)),
            ClusterEventWithHint(ClusterEvent(GVK.CSIDriver, au)),
            ClusterEventWithHint(ClusterEvent(GVK.CSIStorageCapacity, au)),
        ]


def check_access_modes(claim, volume) -> bool:
    return all(m in volume.access_modes for m in claim.access_modes)


def find_matching_volume(claim, volumes, node, excluded, delay_binding):
    """volume.FindMatchingVolume: a PV already bound to the claim (if its node affinity fits),
    else the smallest Available PV of the claim's class, big enough, of the same volume mode,
    matching the claim's selector, access modes and the node."""
    smallest = None
    req = claim.request
    for pv in volumes:
        if pv.name in excluded:
            continue
        if pv.claim_ref is not None and not is_volume_bound_to_claim(pv, claim):
            continue
        if (pv.capacity or 0) < req:
            continue
        if pv.volume_mode != claim.volume_mode:
            continue
        if pv.deleting:
            continue
        affinity_ok = True if node is None else check_node_affinity(pv, node.labels)
        if is_volume_bound_to_claim(pv, claim):
            return pv if affinity_ok else None
        if node is None and delay_binding:
            continue
        if pv.phase != "Available":
            continue
        if claim.selector is not None and not claim.selector.matches(pv.labels):
            continue
        if pv.storage_class_name != claim.class_name:
            continue
        if not affinity_ok:
            continue
        if node is not None and not check_access_modes(claim, pv):
            continue
        if smallest is None or (smallest.capacity or 0) > (pv.capacity or 0):
            smallest = pv
    return smallest


def new(args, handle):
    return VolumeBinding(handle)
