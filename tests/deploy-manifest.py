#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""deploy/kubernetes/affinityd.yaml against what the daemon needs, with no
cluster (kubectl validates only against a server's schema): a structural
check with PyYAML.

  deploy-manifest.py TOP              check; exit 1 naming each problem
  deploy-manifest.py TOP --config DIR write the ConfigMap's files as the pod
                                      sees them under /etc/affinityd into DIR
                                      (for affctl check and tests/container.sh)

What it holds the manifest to: a Namespace, a ConfigMap and an apps/v1
DaemonSet whose selector matches its pod labels; hostPID; not privileged;
all capabilities dropped and exactly those of affinityd.service's
CapabilityBoundingSet= added; a grace period at least the unit's
TimeoutStopSec= (the daemon restores on SIGTERM); the node's
/run/affinityd (journal, socket, lock: protocol.h's runtime directory),
/sys/fs/cgroup and the metrics directory of the ConfigMap's
MetricsTextfile= mounted from the host; every mount backed by a volume and
every ConfigMap item by a key; the image tagged with configure.ac's
version.
"""
import os
import re
import sys

import yaml

top = sys.argv[1]
problems = []


def bad(msg):
    problems.append(msg)


def read(rel):
    with open(os.path.join(top, rel)) as f:
        return f.read()


docs = [d for d in yaml.safe_load_all(read("deploy/kubernetes/affinityd.yaml")) if d]
by_kind = {d.get("kind"): d for d in docs}
for kind in ("Namespace", "ConfigMap", "DaemonSet"):
    if kind not in by_kind:
        sys.exit(f"FAIL: no {kind} in the manifest")
cm, ds = by_kind["ConfigMap"], by_kind["DaemonSet"]
ns = by_kind["Namespace"]["metadata"]["name"]
pod = ds["spec"]["template"]["spec"]
config_volume = next((v for v in pod.get("volumes", []) if "configMap" in v), None)

if len(sys.argv) == 4 and sys.argv[2] == "--config":
    for item in config_volume["configMap"]["items"]:
        path = os.path.join(sys.argv[3], item["path"])
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(cm["data"][item["key"]])
    sys.exit(0)

for d in docs:
    if d["kind"] != "Namespace" and d["metadata"].get("namespace") != ns:
        bad(f"{d['kind']} is not in namespace {ns}")
if ds.get("apiVersion") != "apps/v1":
    bad(f"DaemonSet apiVersion {ds.get('apiVersion')}, want apps/v1")
labels = ds["spec"]["template"]["metadata"].get("labels", {})
for k, v in ds["spec"]["selector"]["matchLabels"].items():
    if labels.get(k) != v:
        bad(f"selector {k}={v} does not match the pod's labels {labels}")
if pod.get("hostPID") is not True:
    bad("hostPID is not true: the daemon would see only its own pod")
if len(pod.get("containers", [])) != 1:
    bad("want one container")
c = pod["containers"][0]
sc = c.get("securityContext", {})
if sc.get("privileged"):
    bad("privileged: the capabilities below are enough")

# The unit's capabilities, and its stop timeout.
unit = read("unit-files/affinityd.service.in")
m = re.search(r"^CapabilityBoundingSet=(.*)$", unit, re.M)
want_caps = sorted(x.removeprefix("CAP_") for x in m.group(1).split())
caps = sc.get("capabilities", {})
if caps.get("drop") != ["ALL"]:
    bad(f"capabilities drop {caps.get('drop')}, want [ALL]")
if sorted(caps.get("add", [])) != want_caps:
    bad(f"capabilities add {sorted(caps.get('add', []))}, the unit's are {want_caps}")
m = re.search(r"^TimeoutStopSec=(\d+)s$", unit, re.M)
stop_s = int(m.group(1))
grace = pod.get("terminationGracePeriodSeconds", 30)
if grace < stop_s:
    bad(f"terminationGracePeriodSeconds {grace} < the unit's TimeoutStopSec={stop_s}s")

volumes = {v["name"]: v for v in pod.get("volumes", [])}
mounts = {}
for vm in c.get("volumeMounts", []):
    if vm["name"] not in volumes:
        bad(f"mount {vm['mountPath']}: no volume {vm['name']}")
        continue
    mounts[vm["mountPath"]] = volumes[vm["name"]]


def host_mount(path, why):
    v = mounts.get(path)
    if not v or v.get("hostPath", {}).get("path") != path:
        bad(f"{path} is not the node's {path} ({why})")


runtime_dir = re.search(r'^#define AFF_RUNTIME_DIR\s+"([^"]+)"', read("daemon/common/protocol.h"), re.M).group(1)
host_mount(runtime_dir, "the journal a killed pod leaves for the next one")
host_mount("/sys/fs/cgroup", "cgroup CPU weights")
textfile = re.search(r"^MetricsTextfile=(.*)$", "\n".join(cm["data"].values()), re.M)
if textfile:
    host_mount(os.path.dirname(textfile.group(1)), "node_exporter's textfile directory")
if not config_volume:
    bad("no ConfigMap volume")
else:
    if config_volume["configMap"]["name"] != cm["metadata"]["name"]:
        bad("the config volume names another ConfigMap")
    for item in config_volume["configMap"]["items"]:
        if item["key"] not in cm["data"]:
            bad(f"config item {item['key']}: no such key in the ConfigMap")
        if not re.match(r"^(policies\.d/.+\.policy|affinityd\.conf\.d/.+\.conf)$", item["path"]):
            bad(f"config item path {item['path']}: the daemon reads policies.d/*.policy and affinityd.conf.d/*.conf")
    if mounts.get("/etc/affinityd") is not config_volume:
        bad("the ConfigMap is not mounted at /etc/affinityd")

version = re.search(r"AC_INIT\(\[affinityd\], \[([^]]+)\]", read("configure.ac")).group(1)
if not c["image"].endswith(":" + version):
    bad(f"image {c['image']}: want the tag {version} (configure.ac; build-image.sh tags so)")

for p in problems:
    print("FAIL:", p)
if not problems:
    print(f"ok: {len(docs)} documents; DaemonSet hostPID, capabilities {','.join(want_caps)}, "
          f"grace {grace} s, {len(mounts)} mounts")
sys.exit(1 if problems else 0)
