"""NodeVolumeLimits: how many CSI volumes a node can attach (upstream
``plugins/nodevolumelimits/csi.go``, v1.28.0).

A volume counts under its CSI driver (``attachable-volumes-csi-<driver>``) with the limit
from the node's CSINode (``drivers[].allocatable.count``) or the node's allocatable of that
name.  In-tree PVs and inline disks (AWS EBS, GCE PD, Azure Disk) count under the CSI driver
they migrate to when the node's CSINode lists their in-tree plugin in
``storage.alpha.kubernetes.io/migrated-plugins`` (csi-translation-lib: volume handle as the
in-tree source names it).  The other in-tree sources are not translated.
"""
from __future__ import annotations

import hashlib

import numpy as np

from ..framework.interface import (ActionType, ClusterEvent, ClusterEventWithHint, Code, EnqueueExtensions,
                                   FilterPlugin, GVK, PreFilterPlugin, Status)
from ..objects import IN_TREE_SOURCES
from ..util import LIMIT
from ..volumes import pod_claim_names, volume_is_for_pod

NAME = "NodeVolumeLimits"
ErrReasonMaxVolumeCountExceeded = "node(s) exceed max volume count"
CSI_ATTACH_LIMIT_PREFIX = "attachable-volumes-csi-"
RESOURCE_NAME_LENGTH_LIMIT = 63
# upstream uses a random 32-character prefix for the handles of claims still to provision
RANDOM_VOLUME_ID_PREFIX = "x" * 32


def get_csi_attach_limit_key(driver: str) -> str:
    """volumeutil.GetCSIAttachLimitKey: from 63 characters on, the prefix, the driver name's
    first 23 characters and the first 16 hex digits of its SHA-1."""
    if len(CSI_ATTACH_LIMIT_PREFIX) + len(driver) >= RESOURCE_NAME_LENGTH_LIMIT:
        h = hashlib.sha1(driver.encode()).hexdigest()[:16]
        return CSI_ATTACH_LIMIT_PREFIX + driver[:23] + h
    return CSI_ATTACH_LIMIT_PREFIX + driver


def is_csi_migration_on(csi_node, plugin_name) -> bool:
    """isCSIMigrationOn: the migration of AWS EBS, GCE PD and Azure Disk is GA; the node must
    list the plugin as migrated."""
    return csi_node is not None and plugin_name in csi_node.migrated_plugins()


def _in_tree_plugin(kind):
    return IN_TREE_SOURCES.get(kind)


class CSILimits(PreFilterPlugin, FilterPlugin, EnqueueExtensions):
    name = NAME

    def __init__(self, handle):
        self.handle = handle
        self._limits = None      # (node table, CSINodes, min_limits column) of the last screen

    def pre_filter(self, state, pod):
        """PreFilter: Skip unless the pod has a claim, an ephemeral volume or a migratable
        inline disk."""
        for v in pod.volumes:
            if v.kind in ("persistentVolumeClaim", "ephemeral") or _in_tree_plugin(v.kind):
                return None, None
        return None, Status(Code.Skip)

    def pre_filter_extensions(self):
        return None

    def filter(self, state, pod, node_info):
        if not pod.volumes:
            return None
        node = node_info.node
        csi_node = self.handle.host.csi_nodes.get(node.name)
        new_volumes = {}
        err = self.filter_attachable_volumes(pod, csi_node, True, new_volumes)
        if err:
            return Status.error(err)
        if not new_volumes:
            return None
        limits = get_volume_limits(node_info, csi_node)
        if not limits:
            return None
        attached = {}
        for ep in node_info.pods:
            err = self.filter_attachable_volumes(ep, csi_node, False, attached)
            if err:
                return Status.error(err)
        attached_count = {}
        for unique, key in attached.items():
            new_volumes.pop(unique, None)
            attached_count[key] = attached_count.get(key, 0) + 1
        new_count = {}
        for key in new_volumes.values():
            new_count[key] = new_count.get(key, 0) + 1
        for key, count in new_count.items():
            if key in limits and attached_count.get(key, 0) + count > limits[key]:
                return Status(Code.Unschedulable, ErrReasonMaxVolumeCountExceeded)
        return None

    def _filter_suspects(self, state, pod, table):
        """The nodes Filter might reject (Framework.filter_suspects): those with a volume
        limit (getVolumeLimits) below the number of volumes their pods declare plus the pod's
        (bounds of the attached count and of the new count under any limit key), and those
        with a pod with an ephemeral volume (whose claim Filter checks). False (cannot screen)
        when the pod's own volumes make Filter fail, which it does on every node."""
        vols = pod.volumes
        if not vols:
            return None
        if self.filter_attachable_volumes(pod, None, True, {}):
            return False        # the errors do not depend on the node's CSINode
        refs, eph = table.volume_refs()
        m = (refs + len(vols) > self.min_limits(table)) | eph
        return m if m.any() else None

    def _filter_node_only(self, state, pod, table):
        """Whether Filter reads the node and the pod only in this cycle (engine.resourcefit):
        when no node has a volume limit Filter returns before reading the node's pods, and
        passes, unless the pod's own volumes make it fail."""
        return not pod.volumes or (not self.filter_attachable_volumes(pod, None, True, {})
                and bool((self.min_limits(table) == LIMIT).all()))

    def min_limits(self, table):
        """Each node's smallest volume limit (getVolumeLimits), LIMIT for none, kept for the
        node table (its nodes' allocatable) and the CSINodes (replaced when they change)."""
        csi_nodes = self.handle.host.csi_nodes
        c = self._limits
        if c is None or c[0] is not table or c[1] != csi_nodes:
            col = np.array([min(min(get_volume_limits(ni, csi_nodes.get(ni.name)).values(), default=LIMIT), LIMIT)
                            for ni in table.node_infos], dtype=np.int64)
            c = self._limits = (table, dict(csi_nodes), col)
        return c[2]

    def filter_attachable_volumes(self, pod, csi_node, new_pod, result):
        host = self.handle.host
        claims = {v.name: (name, eph) for v, name, eph in pod_claim_names(pod)}
        for v in pod.volumes:
            if v.name not in claims:
                self.check_attachable_inline_volume(v, csi_node, result)
                continue
            name, eph = claims[v.name]
            pvc = host.pvcs.get(f"{pod.namespace}/{name}")
            if pvc is None:
                if new_pod:
                    return (f'looking up PVC {pod.namespace}/{name}: persistentvolumeclaim "{name}" not found')
                continue
            if eph:
                err = volume_is_for_pod(pod, pvc)
                if err:
                    return err
            driver, handle = self.get_csi_driver_info(csi_node, pvc)
            if not driver or not handle:
                continue
            result[f"{driver}/{handle}"] = get_csi_attach_limit_key(driver)
        return None

    def check_attachable_inline_volume(self, v, csi_node, result):
        it = _in_tree_plugin(v.kind)
        if it is None:
            return
        plugin, driver, handle_field = it
        if not is_csi_migration_on(csi_node, plugin):
            return
        result[f"{driver}/{v.get(handle_field)}"] = get_csi_attach_limit_key(driver)

    def get_csi_driver_info(self, csi_node, pvc):
        host = self.handle.host
        if not pvc.volume_name:
            return self.get_csi_driver_info_from_sc(csi_node, pvc)
        pv = host.pvs.get(pvc.volume_name)
        if pv is None:
            return self.get_csi_driver_info_from_sc(csi_node, pvc)
        if pv.csi is not None:
            return pv.csi
        if pv.in_tree is None:
            return "", ""
        plugin, driver, handle_field = IN_TREE_SOURCES[pv.in_tree[0]]
        if not is_csi_migration_on(csi_node, plugin):
            return "", ""
        return driver, str(pv.in_tree[1].get(handle_field, ""))

    def get_csi_driver_info_from_sc(self, csi_node, pvc):
        sc_name = pvc.class_name
        if not sc_name:
            return "", ""
        sc = self.handle.host.storage_classes.get(sc_name)
        if sc is None:
            return "", ""
        handle = f"{RANDOM_VOLUME_ID_PREFIX}-{pvc.namespace}/{pvc.name}"
        for plugin, driver, _f in IN_TREE_SOURCES.values():
            if sc.provisioner == plugin:
                if not is_csi_migration_on(csi_node, plugin):
                    return "", ""
                return driver, handle
        return sc.provisioner, handle

    def events_to_register(self) -> list:
        """CSINode/Add, Pod/Delete."""
        return [
            ClusterEventWithHint(ClusterEvent(GVK.CSINode, ActionType.Add)),
            ClusterEventWithHint(ClusterEvent(GVK.Pod, ActionType.Delete)),
        ]


def get_volume_limits(node_info, csi_node) -> dict:
    """getVolumeLimits: the node's attachable-volumes-* allocatable, overridden by the
    CSINode drivers' allocatable counts."""
    limits = {k: v for k, v in node_info.allocatable.items() if k.startswith("attachable-volumes-")}
    if csi_node is not None:
        for name, count, _keys in csi_node.drivers:
            if count is not None:
                limits[get_csi_attach_limit_key(name)] = count
    return limits


def new(args, handle):
    return CSILimits(handle)
