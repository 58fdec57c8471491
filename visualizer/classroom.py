"""Class mode (``bash scripts/run.sh --class``): the machine's own addresses, the hosts the
server then accepts, and a join link that phones on the same network can reach.

Nothing here sends a packet. The interfaces' addresses come from ``ip -j addr show`` (a netlink
query of the kernel), the host name's from ``socket.getaddrinfo``, and the default route's
source address from ``connect`` on a UDP socket, which only chooses a route (UDP sends nothing
until something is written; the probe addresses are the documentation ranges of RFC 5737 and
RFC 3849).

Only the standard library is imported here: ``visualizer.settings`` uses this module.
"""
import ipaddress
import json
import shutil
import socket
import subprocess
from dataclasses import dataclass, field

# connect() on a UDP socket to these picks the source address of the default route; no packet
ROUTE_PROBES = ((socket.AF_INET, ("192.0.2.1", 9)), (socket.AF_INET6, ("2001:db8::1", 9)))
SESSION_KEY = "class_join_host"      # the presenter's choice of address, in the Django session


@dataclass
class Machine:
    """What class mode knows of this machine: its host name and its usable addresses
    (no loopback, no link-local; the default route's first, IPv4 before IPv6)."""
    hostname: str = ""
    addresses: list = field(default_factory=list)


# ---------------------------------------------------------------------- the system calls

def hostname() -> str:
    try:
        return socket.gethostname()
    except OSError:
        return ""


def resolved_addresses(name: str) -> list:
    """The addresses ``name`` resolves to (the resolver's answer; /etc/hosts first)."""
    if not name:
        return []
    try:
        infos = socket.getaddrinfo(name, None)
    except (OSError, UnicodeError):
        return []
    return [info[4][0] for info in infos if info and len(info) > 4 and info[4]]


def default_route_addresses() -> list:
    """The source address of the default route, IPv4 then IPv6, where there is one."""
    found = []
    for family, probe in ROUTE_PROBES:
        try:
            with socket.socket(family, socket.SOCK_DGRAM) as sock:
                sock.connect(probe)          # chooses a route; sends nothing
                found.append(sock.getsockname()[0])
        except (OSError, IndexError, TypeError):
            continue
    return found


def interface_addresses() -> list:
    """The addresses of the interfaces that are up, from ``ip -j addr show`` (Linux; none
    elsewhere or when ``ip`` fails)."""
    ip = shutil.which("ip")
    if not ip:
        return []
    try:
        result = subprocess.run([ip, "-j", "addr", "show"], capture_output=True, text=True,
                                timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return []
    if result.returncode != 0:
        return []
    return parse_ip_addr(result.stdout)


def parse_ip_addr(text: str) -> list:
    """The ``local`` addresses of the links that are up in ``ip -j addr`` output; anything
    malformed is skipped, never an error."""
    try:
        links = json.loads(text)
    except ValueError:
        return []
    if not isinstance(links, list):
        return []
    found = []
    for link in links:
        if not isinstance(link, dict):
            continue
        flags = link.get("flags")
        if not isinstance(flags, list) or "UP" not in flags:
            continue
        infos = link.get("addr_info")
        for info in infos if isinstance(infos, list) else []:
            if isinstance(info, dict) and isinstance(info.get("local"), str):
                found.append(info["local"])
    return found


# ---------------------------------------------------------------------- what they mean

def usable(address: str):
    """``address`` in canonical form if a phone on the network could use it, else None
    (not an address, loopback, link-local, unspecified or multicast)."""
    if not isinstance(address, str):
        return None
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0].strip())
    except ValueError:
        return None
    if ip.is_loopback or ip.is_link_local or ip.is_unspecified or ip.is_multicast:
        return None
    if ip.version == 6 and ip.ipv4_mapped:
        return usable(str(ip.ipv4_mapped))
    return str(ip)


def discover() -> Machine:
    """This machine's host name and usable addresses: the default route's source first (the
    address other machines most likely reach), then the interfaces' and the host name's; IPv4
    before IPv6, each once."""
    name = hostname()
    candidates = [*default_route_addresses(), *interface_addresses(), *resolved_addresses(name)]
    seen = []
    for address in candidates:
        address = usable(address)
        if address and address not in seen:
            seen.append(address)
    seen.sort(key=lambda a: ipaddress.ip_address(a).version)   # stable: keeps the order within v4, v6
    return Machine(hostname=name, addresses=seen)


def url_host(host: str) -> str:
    """``host`` as it appears in a URL or a Host header (IPv6 in brackets)."""
    try:
        return f"[{host}]" if ipaddress.ip_address(host).version == 6 else host
    except ValueError:
        return host


def allowed_hosts(base, machine: Machine, class_host: str = "") -> list:
    """ALLOWED_HOSTS in class mode: ``base`` (loopback by default) and this machine's host
    name, addresses and ``class_host``: nothing wider."""
    hosts = []
    for host in [*base, machine.hostname, *(url_host(a) for a in machine.addresses),
                 url_host(class_host.strip("[]")) if class_host else ""]:
        host = (host or "").strip().lower()
        if host and host not in hosts:
            hosts.append(host)
    return hosts


def join_choices(machine: Machine, class_host: str = "") -> list:
    """The addresses the presenter may pick for the join link: ``class_host`` first if set,
    then the machine's addresses."""
    choices = []
    for host in [class_host.strip().strip("[]"), *machine.addresses]:
        if host and host not in choices:
            choices.append(host)
    return choices


def split_host(host: str):
    """``(name, port)`` of a Host header: ``"[fd00::2]:8000"`` -> ``("fd00::2", "8000")``."""
    host = host.strip()
    if host.startswith("["):
        name, _, rest = host[1:].partition("]")
        return name, rest[1:] if rest.startswith(":") else ""
    if host.count(":") == 1:
        name, _, port = host.partition(":")
        return name, port
    return host, ""


def is_loopback_host(name: str) -> bool:
    """Whether a host name only this machine reaches: localhost or a loopback address."""
    name = name.strip("[]").lower().rstrip(".")
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def join_host(request_host: str, choices, chosen=None):
    """The host (without port) followers should use, or None to keep the page's own: the
    presenter's ``chosen`` one if it is among ``choices``; else, when the page was opened by a
    loopback name no phone reaches, the first choice; else the page's own host."""
    if chosen and chosen in choices:
        return chosen
    name, _ = split_host(request_host)
    if is_loopback_host(name) and choices:
        return choices[0]
    return None


def join_url(scheme: str, request_host: str, path: str, host) -> str:
    """``path`` on ``host`` with the page's own port (``host`` None: on the page's own host)."""
    if host is None:
        return f"{scheme}://{request_host}{path}"
    _, port = split_host(request_host)
    return f"{scheme}://{url_host(host)}{':' + port if port else ''}{path}"


if __name__ == "__main__":   # scripts/run.sh --class prints what phones may use
    found = discover()
    print(", ".join(found.addresses) or "none found (set CLASS_HOST)")
