"""Loading YAML (and JSON, which is YAML) from untrusted hands, in bounded time and memory.

``yaml.safe_load`` builds only plain values, but it does not bound the *size* of what it
builds: aliases share one node, so a few hundred bytes (``a: &a [x, x, ...]``,
``b: &b [*a, *a, ...]``, ...) describe a document of billions of nodes that every later walk
over it (validation, ``json.dumps``, an error message quoting it) expands; an alias may also
point into its own unfinished anchor and make a recursive value; and nesting is limited only by
Python's recursion limit (``RecursionError`` deep inside PyYAML). ``load`` refuses all three
while composing, before anything is constructed:

- ``MAX_NODES``: the document's node count *with every alias expanded* (an alias counts as the
  whole subtree it names), so anything built from the result is bounded too;
- ``MAX_DEPTH``: how deep collections nest;
- an alias to an anchor that is not finished yet (a recursive structure).

It also turns the constructors' own failures (a 5,000-digit integer, a timestamp out of range)
into ``YAMLLoadError`` with the place of the node, and keeps the composed node tree so that a
schema error can name the line and column of the node it is about (``mark_for``).
"""
from __future__ import annotations

import json
import re

import yaml
from yaml.events import (AliasEvent, DocumentEndEvent, MappingEndEvent, MappingStartEvent, ScalarEvent,
                         SequenceEndEvent, SequenceStartEvent)
from yaml.nodes import ScalarNode

MAX_NODES = 2_000_000       # nodes of the document with aliases expanded
MAX_DEPTH = 100             # nesting of sequences and mappings
MAX_BYTES = 32 * 1024 * 1024   # size of a scenario's text


class YAMLLoadError(ValueError):
    """The text is not YAML the engine accepts; ``where`` is "line L, column C" (or "YAML")."""

    def __init__(self, where: str, problem: str):
        self.where = where
        self.problem = problem
        super().__init__(f"{where}: {problem}")


def where(mark) -> str:
    return f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else "YAML"


class BoundedSafeLoader(yaml.SafeLoader):
    """PyYAML's SafeLoader, counting expanded nodes and depth while composing."""

    def __init__(self, stream, max_nodes=MAX_NODES, max_depth=MAX_DEPTH):
        super().__init__(stream)
        self._max_nodes = max_nodes
        self._max_depth = max_depth
        self._depth = 0
        self._total = 0            # expanded nodes composed so far
        self._sizes = {}           # id(node) -> expanded size of the finished node
        self._open = set()         # ids of collection nodes still being composed

    def _count(self, n, mark):
        self._total += n
        if self._total > self._max_nodes:
            raise YAMLLoadError(where(mark), f"the document is too large: more than {self._max_nodes:,} "
                                "values once its aliases (*name) are expanded")

    def fetch_flow_collection_start(self, TokenClass):
        # The scanner looks ahead through every open flow collection for each token (work
        # grows with the square of the nesting): stop at the limit while scanning.
        if self.flow_level >= self._max_depth:
            raise YAMLLoadError(where(self.get_mark()), f"values are nested more than {self._max_depth} levels deep")
        super().fetch_flow_collection_start(TokenClass)

    def compose_node(self, parent, index):
        if self.check_event(AliasEvent):
            event = self.peek_event()
            node = self.anchors.get(event.anchor)
            if node is not None and id(node) in self._open:
                raise YAMLLoadError(where(event.start_mark),
                                    f"the alias *{event.anchor} refers to a value that contains it "
                                    "(a recursive structure)")
            node = super().compose_node(parent, index)
            self._count(self._sizes.get(id(node), 1), event.start_mark)
            return node
        event = self.peek_event()
        self._depth += 1
        if self._depth > self._max_depth:
            raise YAMLLoadError(where(event.start_mark),
                                f"values are nested more than {self._max_depth} levels deep")
        before = self._total
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        self._count(1, event.start_mark)
        self._sizes[id(node)] = self._total - before
        return node

    # PyYAML's compose_sequence_node / compose_mapping_node, marking the node unfinished
    # while its children are composed (an alias to it from inside is then refused).
    def compose_sequence_node(self, anchor):
        start_event = self.get_event()
        tag = start_event.tag
        if tag is None or tag == "!":
            tag = self.resolve(yaml.SequenceNode, None, start_event.implicit)
        node = yaml.SequenceNode(tag, [], start_event.start_mark, None, flow_style=start_event.flow_style)
        if anchor is not None:
            self.anchors[anchor] = node
        self._open.add(id(node))
        index = 0
        while not self.check_event(SequenceEndEvent):
            node.value.append(self.compose_node(node, index))
            index += 1
        node.end_mark = self.get_event().end_mark
        self._open.discard(id(node))
        return node

    def compose_mapping_node(self, anchor):
        start_event = self.get_event()
        tag = start_event.tag
        if tag is None or tag == "!":
            tag = self.resolve(yaml.MappingNode, None, start_event.implicit)
        node = yaml.MappingNode(tag, [], start_event.start_mark, None, flow_style=start_event.flow_style)
        if anchor is not None:
            self.anchors[anchor] = node
        self._open.add(id(node))
        while not self.check_event(MappingEndEvent):
            item_key = self.compose_node(node, None)
            item_value = self.compose_node(node, item_key)
            node.value.append((item_key, item_value))
        node.end_mark = self.get_event().end_mark
        self._open.discard(id(node))
        return node

    def construct_object(self, node, deep=False):
        try:
            return super().construct_object(node, deep)
        except YAMLLoadError:
            raise
        except yaml.YAMLError:
            raise
        except (ValueError, OverflowError, TypeError) as e:
            text = str(e)
            if "int_max_str_digits" in text or "digits" in text and "integer" in text:
                text = "the number has too many digits"
            raise YAMLLoadError(where(node.start_mark), f"cannot read this value ({text[:200]})") from None


_CLOADER = getattr(yaml, "CSafeLoader", None)     # PyYAML's binding to libyaml, when built with it
# where libyaml and PyYAML's own parser were found to read a text differently (tabs as
# separators, which PyYAML refuses; a byte order mark inside the text; tags, e.g. a bare "!";
# the line breaks NEL, LS and PS; "..." inside a multi-line plain scalar): such texts are read
# by the bounded loader only
_LIBYAML_DIFFERS = re.compile("[\t\ufeff!\x85\u2028\u2029]|\\.\\.\\.")


class _NotHere(Exception):
    """A text ``_libyaml_documents`` leaves to the loaders that can say what is wrong, and where."""


# the implicit resolvers of a plain scalar by its first character (wildcard ones after), as
# Resolver.resolve looks them up
_RESOLVERS = yaml.resolver.Resolver.yaml_implicit_resolvers
_RESOLVE_BY_FIRST = {c: tuple(r) + tuple(_RESOLVERS.get(None, ())) for c, r in _RESOLVERS.items() if c is not None}
_RESOLVE_WILDCARD = tuple(_RESOLVERS.get(None, ()))
_STR_TAG = "tag:yaml.org,2002:str"
_NOT_HERE_TAGS = frozenset({"tag:yaml.org,2002:merge", "tag:yaml.org,2002:value"})   # "<<" and "="
_SCALARS = yaml.constructor.SafeConstructor()      # its scalar constructors keep no state
_NO_KEY = object()


def _libyaml_documents(text: str, max_nodes: int, max_depth: int) -> list | None:
    """Every document of ``text`` (an empty one as None) built straight from libyaml's parser
    events, as PyYAML's safe loader builds it, or None when the stream passes a bound
    BoundedSafeLoader enforces (the node count with every alias expanded, the nesting depth, an
    alias to an unfinished anchor). One pass, nothing composed: about six times faster than
    ``yaml.load(text, Loader=CSafeLoader)`` (a 5,000-node, 6,000-pod import of 4.8 MB in 0.8 s
    instead of 4.7 s), which builds a node object per value in C and then constructs the data
    from the nodes in Python.

    What it builds is what Composer + SafeConstructor build: a plain scalar's tag from the same
    implicit resolvers (``Resolver.resolve``), its value from SafeConstructor's constructor of
    that tag; a quoted or block scalar a string; mappings filled in document order (a repeated
    key: the last value); an alias the very object its anchor built. Raises ``_NotHere`` for
    what it leaves to the loaders that say what is wrong and where: a merge key (``<<``) or
    ``=``, a collection as a key, a value the constructor refuses; the callers take the
    bounded loader then. Texts with explicit tags never come here (``_LIBYAML_DIFFERS``)."""
    docs = []
    total = depth = 0
    sizes = {}          # anchor -> expanded size of its finished node
    anchors = {}        # anchor -> the object it built
    stack = []          # (the enclosing collection, its pending key, anchor, total before)
    cur = key = None
    by_first, wildcard = _RESOLVE_BY_FIRST.get, _RESOLVE_WILDCARD
    for ev in yaml.parse(text, Loader=_CLOADER):
        t = type(ev)
        if t is ScalarEvent:
            total += 1
            if depth + 1 > max_depth:           # a scalar is a level too, as in compose_node
                return None
            obj = ev.value
            if ev.implicit[0]:                  # plain: resolved (a quoted one stays a string)
                for tag, regexp in by_first(obj[:1], wildcard):
                    if regexp.match(obj):
                        break
                else:
                    tag = _STR_TAG
                if tag != _STR_TAG:
                    if tag in _NOT_HERE_TAGS:
                        raise _NotHere(tag)
                    try:
                        obj = _SCALARS.yaml_constructors[tag](_SCALARS, ScalarNode(tag, obj))
                    except Exception as e:      # noqa: BLE001 - the bounded loader says what, and where
                        raise _NotHere(tag) from e
            if ev.anchor is not None:
                sizes[ev.anchor] = 1
                anchors[ev.anchor] = obj
        elif t is MappingStartEvent or t is SequenceStartEvent:
            depth += 1
            if depth > max_depth:
                return None
            if ev.anchor is not None:
                sizes.pop(ev.anchor, None)      # redefined: unfinished until it ends
            stack.append((cur, key, ev.anchor, total))
            cur, key = ({} if t is MappingStartEvent else []), _NO_KEY
            continue
        elif t is MappingEndEvent or t is SequenceEndEvent:
            depth -= 1
            obj = cur
            cur, key, anchor, before = stack.pop()
            total += 1
            if anchor is not None:
                sizes[anchor] = total - before
                anchors[anchor] = obj
        elif t is AliasEvent:
            size = sizes.get(ev.anchor)
            if size is None:                    # unknown, or its own unfinished anchor
                return None
            total += size
            obj = anchors[ev.anchor]
        elif t is DocumentEndEvent:
            docs.append(cur)
            cur = None
            continue
        else:
            continue
        if total > max_nodes:
            return None
        c = cur.__class__
        if c is list:
            cur.append(obj)
        elif c is dict:
            if key is _NO_KEY:
                if obj.__class__ is dict or obj.__class__ is list:
                    raise _NotHere("a collection as a key")
                key = obj
            else:
                cur[key] = obj
                key = _NO_KEY
        else:
            cur = obj                           # the document's root
    return docs


def _libyaml_read(text: str, max_nodes: int, max_depth: int) -> list | None:
    """``_libyaml_documents``, or None for a text the bounded loader must read (libyaml
    missing or reading it otherwise, a bound passed, ``_NotHere``, libyaml's own error)."""
    if _CLOADER is None or _LIBYAML_DIFFERS.search(text):
        return None
    try:
        return _libyaml_documents(text, max_nodes, max_depth)
    except MemoryError:
        raise                   # not a problem of the text: the bounded loader would need more
    except Exception:       # noqa: BLE001 - the bounded loader says what is wrong, and where
        return None


# JSON that PyYAML reads otherwise than the json module, besides _LIBYAML_DIFFERS: "\/"
# escapes, escaped surrogates (json pairs them, PyYAML keeps each), and characters PyYAML's
# reader refuses (C1 controls, DEL, raw surrogates, U+FFFE/U+FFFF)
_JSON_DIFFERS = re.compile(r"\\/|\\u[dD][89a-fA-F]|[\x7f-\x84\x86-\x9f\ud800-\udfff\ufffe\uffff]")
_JSON_START = re.compile(r"[ \n\r]*[\[{]")
# the floats PyYAML (YAML 1.1) resolves among JSON's numbers: a dot, and a signed exponent
_YAML_FLOAT = re.compile(r"-?[0-9]+\.[0-9]*(?:[eE][-+][0-9]+)?")


def _yaml_float(s: str):
    """A JSON number with a fraction or an exponent as PyYAML reads it: a float, or the
    text itself where YAML 1.1 sees no number (``1e3``, ``1.5E3``)."""
    return float(s) if _YAML_FLOAT.fullmatch(s) else s


def _not_yaml(name):
    raise ValueError(name)      # NaN, Infinity: PyYAML reads them as strings; the slow way


# a key PyYAML refuses as a "simple key": its ":" on another line, or far from its start (1024
# characters); keys longer than _KEY_MAX characters (6 times that escaped) go the YAML way too
_FAR_COLON = re.compile(r'"\s*\n\s*:|"[ \t\r]{100,}:')
_KEY_MAX = 100


def _mapping(pairs):
    """A JSON object as a dict; ValueError for one the YAML way must read: a repeated key
    (the dict keeps one value, while the YAML loader counts every node of both against its
    bounds) or a long key."""
    d = dict(pairs)
    if len(d) != len(pairs) or (pairs and max(map(len, d)) > _KEY_MAX):
        raise ValueError("read as YAML")
    return d


MAX_DOCUMENTS = 100_000     # documents in one stream (an import may hold one object a document)


def _walk_bounds(data, max_nodes: int, max_depth: int) -> str | None:
    """What is wrong with already-built data as ``_libyaml_documents`` counts it (nodes, depth), or
    None; iterative, so a deep value cannot exhaust the stack."""
    total = 0
    stack = [(data, 0)]
    pop, push = stack.pop, stack.append
    while stack:
        v, depth = pop()
        total += 1
        if total > max_nodes:
            return f"the document is too large: more than {max_nodes:,} values"
        if depth + 1 > max_depth:
            return f"values are nested more than {max_depth} levels deep"
        c = v.__class__
        if c is dict:
            for x in v.values():
                total += 1          # the key
                push((x, depth + 1))
        elif c is list:
            for x in v:
                push((x, depth + 1))
    return None


def _json_data(text: str, max_nodes: int, max_depth: int):
    """The data of a JSON document as PyYAML's safe loader builds it, within the bounds
    ``load`` enforces (nodes, depth), read with the json module (about 50 times faster than
    PyYAML: a 5,000-node, 10,000-pod scenario of 3.3 MB in 0.1 s instead of 5 s, the scenario
    itself then built in 0.4 s); None when
    the text is not such JSON (the caller then reads it as YAML)."""
    if _LIBYAML_DIFFERS.search(text) or _JSON_DIFFERS.search(text) or _FAR_COLON.search(text):
        return None
    # at most this many nodes (the collections; an array's items and an object's keys, one more
    # than its commas; an object's values, one per colon): beyond the bound, the YAML loader
    # refuses it while reading, before building anything, where json would build it all first
    if 2 * (text.count("[") + text.count("{")) + text.count(",") + text.count(":") > max_nodes:
        return None
    try:
        data = json.loads(text, parse_float=_yaml_float, parse_constant=_not_yaml, object_pairs_hook=_mapping)
    except (ValueError, RecursionError):
        return None
    # the node count and depth as _libyaml_documents counts them (no aliases in JSON)
    return data if _walk_bounds(data, max_nodes, max_depth) is None else None


def load_data(text: str, max_nodes=MAX_NODES, max_depth=MAX_DEPTH):
    """The data of one YAML document, as ``load(text)[0]``. JSON (a document that starts with
    ``{`` or ``[``) is read with the json module where it means the same (``_json_data``);
    YAML from libyaml's parser events when PyYAML has libyaml and the document is within the
    bounds (``_libyaml_documents``: a 5,000-node, 6,000-pod scenario of 4.8 MB in 0.8 s of CPU,
    where a pass checking the bounds and ``CSafeLoader`` took 5.2 s and the bounded loader 15 s). Anything else (a document out of bounds, not valid
    YAML, a value that cannot be read, no libyaml) goes through ``load``, which gives the error
    with its place, exactly as before."""
    if len(text) <= MAX_BYTES and _JSON_START.match(text):
        data = _json_data(text, max_nodes, max_depth)
        if data is not None:
            return data
    docs = _libyaml_read(text, max_nodes, max_depth) if len(text) <= MAX_BYTES else None
    if docs is not None and len(docs) == 1:
        return docs[0]
    return load(text, max_nodes, max_depth)[0]


def _bounded_loader(text: str, max_nodes: int, max_depth: int) -> BoundedSafeLoader:
    """A BoundedSafeLoader of ``text``; a character YAML does not allow (a control character,
    DEL, U+FFFE...) is a YAMLLoadError with its place (PyYAML's reader checks the whole text
    first)."""
    try:
        return BoundedSafeLoader(text, max_nodes=max_nodes, max_depth=max_depth)
    except yaml.reader.ReaderError as e:
        pos = e.position
        line = text.count("\n", 0, pos) + 1
        column = pos - text.rfind("\n", 0, pos)
        raise YAMLLoadError(f"line {line}, column {column}",
                            f"not valid YAML (the character #x{e.character:04x} is not allowed)") from None


def load(text: str, max_nodes=MAX_NODES, max_depth=MAX_DEPTH):
    """(data, root node) of one YAML document; YAMLLoadError says what is wrong and where."""
    if len(text) > MAX_BYTES:
        raise YAMLLoadError("YAML", f"the text is larger than {MAX_BYTES // (1024 * 1024)} MiB")
    loader = _bounded_loader(text, max_nodes, max_depth)
    try:
        try:
            root = loader.get_single_node()
        except RecursionError:   # pragma: no cover - MAX_DEPTH stops nesting long before
            raise YAMLLoadError("YAML", "values are nested too deeply") from None
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            problem = getattr(e, "problem", None) or str(e)
            raise YAMLLoadError(where(mark), f"not valid YAML ({problem})") from None
        if root is None:
            return None, None
        try:
            data = loader.construct_document(root)
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            problem = getattr(e, "problem", None) or str(e)
            raise YAMLLoadError(where(mark), f"not valid YAML ({problem})") from None
        return data, root
    finally:
        loader.dispose()


def load_documents(text: str, max_nodes=MAX_NODES, max_depth=MAX_DEPTH, max_documents=MAX_DOCUMENTS,
                   json_first=False) -> list:
    """Every document of a YAML stream (``---`` between documents), empty ones left out, read in
    bounded time and memory: the one entry point for a stream from untrusted hands (an upload, a
    paste, an import). The bounds are ``load``'s, counted over the whole stream: the text's size,
    the nodes with aliases expanded, the nesting depth, no recursive alias, and at most
    ``max_documents`` documents. YAMLLoadError says what is wrong and where.

    With ``json_first``, a text that starts with ``{`` or ``[`` is read as JSON by the json module
    (its meaning, not YAML's, where the two differ), after checking that its size in values cannot
    pass ``max_nodes`` and before checking its depth; a text json cannot read goes on as YAML.
    The rest is built from libyaml's parser events when the stream is within the bounds
    (``_libyaml_documents``; never libyaml's own composer, which recurses in C, so a deep text
    would crash the process), else PyYAML's bounded loader reads it, which stops at the first
    bound passed and says where."""
    if len(text) > MAX_BYTES:
        raise YAMLLoadError("YAML", f"the text is larger than {MAX_BYTES // (1024 * 1024)} MiB")
    if json_first and _JSON_START.match(text):
        if 2 * (text.count("[") + text.count("{")) + text.count(",") + text.count(":") > max_nodes:
            raise YAMLLoadError("JSON", f"the document is too large: more than {max_nodes:,} values")
        try:
            data = json.loads(text)
        except RecursionError:
            raise YAMLLoadError("JSON", f"values are nested more than {max_depth} levels deep") from None
        except json.JSONDecodeError as e:
            # a "{" starts no YAML but a flow mapping, which JSON's message describes better; a
            # "[" on several lines may be a YAML flow sequence
            if text.lstrip()[0] == "{" or "\n" not in text.strip():
                raise YAMLLoadError(f"line {e.lineno}, column {e.colno}", f"not valid JSON ({e.msg})") from None
        else:
            problem = _walk_bounds(data, max_nodes, max_depth)
            if problem is not None:
                raise YAMLLoadError("JSON", problem)
            return [data] if data is not None else []
    docs = _libyaml_read(text, max_nodes, max_depth)
    if docs is not None:
        docs = [d for d in docs if d is not None]
        if len(docs) > max_documents:
            raise YAMLLoadError("YAML", f"more than {max_documents:,} documents")
        return docs
    return _load_all_bounded(text, max_nodes, max_depth, max_documents)


def _load_all_bounded(text, max_nodes, max_depth, max_documents) -> list:
    loader = _bounded_loader(text, max_nodes, max_depth)
    docs = []
    try:
        while True:
            try:
                if not loader.check_node():
                    break
                root = loader.get_node()
                data = loader.construct_document(root)
            except RecursionError:   # pragma: no cover - MAX_DEPTH stops nesting long before
                raise YAMLLoadError("YAML", "values are nested too deeply") from None
            except yaml.reader.ReaderError as e:
                raise YAMLLoadError("YAML", f"not valid YAML (the character #x{e.character:04x} is not allowed)") from None
            except yaml.YAMLError as e:
                mark = getattr(e, "problem_mark", None)
                problem = getattr(e, "problem", None) or str(e)
                raise YAMLLoadError(where(mark), f"not valid YAML ({problem})") from None
            if data is not None:
                docs.append(data)
                if len(docs) > max_documents:
                    raise YAMLLoadError("YAML", f"more than {max_documents:,} documents")
        return docs
    finally:
        loader.dispose()


# ---------------------------------------------------------------------- places → marks

_TOKEN = re.compile(r"\[([^\]]*)\]|\.?([^.\[]+)")


def mark_for(root, place: str, key: bool = False):
    """The start mark of the deepest node of ``root`` that ``place`` names
    (``objects[3].spec.containers[0].resources.requests.cpu``), or None if it names none below
    the root. Mapping keys may contain dots (``kubernetes.io/hostname``): the longest key that
    matches the rest of the place wins. With ``key``, a place ending at a mapping key gives
    the key's mark (for "is not a field" problems) rather than its value's."""
    node, rest, found = root, place, None
    while rest and node is not None:
        if isinstance(node, yaml.SequenceNode):
            m = re.match(r"\[(\d+)\]", rest)
            if not m:
                break
            i = int(m.group(1))
            if i >= len(node.value):
                break
            node, rest = node.value[i], rest[m.end():]
        elif isinstance(node, yaml.MappingNode):
            body = rest[1:] if rest.startswith(".") else rest
            if rest.startswith("["):   # pluginConfig[Name]: the item whose name is Name
                break
            best = None
            for key_node, value in node.value:
                k = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
                if not isinstance(k, str) or not k:
                    continue
                if body == k or body.startswith(k + ".") or body.startswith(k + "["):
                    if best is None or len(k) > len(best[0]):
                        best = (k, key_node, value)
            if best is None:
                break
            k, key_node, value = best
            rest = body[len(k):]
            node = value
            # a problem about the key itself (e.g. an unknown field) points at the key
            if not rest:
                return (key_node if key else value).start_mark
        else:
            break
        found = node
    return found.start_mark if found is not None else None
