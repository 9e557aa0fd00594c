"""Small helpers shared by the driver test modules (not fixtures: those live
in conftest.py)."""

import socket
import struct
import uuid

import pytest


def unique(prefix="t"):
    """A fresh table or keyspace name, so tests in one keyspace never collide."""
    return f"{prefix}_{uuid.uuid4().hex[:10]}"


def raises(session, exc_type, statement, params=None, match=None):
    """Executes `statement` and asserts it fails with `exc_type`; `match` is a
    case-insensitive substring the server's message must contain."""
    with pytest.raises(exc_type) as info:
        session.execute(statement, params)
    if match is not None:
        assert match.lower() in str(info.value).lower(), str(info.value)
    return info.value


def rows(session, statement, params=None, **kwargs):
    """All rows of a statement as a list (the driver pages transparently)."""
    return list(session.execute(statement, params, **kwargs))


def bind_raw(prepared, values, raw):
    """Binds `values` normally, then replaces the serialized value at each
    index of `raw` ({index: bytes}) with the given bytes as-is: the way to
    send the server bytes the driver would refuse to serialize (wrong length,
    invalid UTF-8, ...)."""
    bound = prepared.bind(values)
    for index, data in raw.items():
        bound.values[index] = data
    return bound


# --- raw native-protocol v4 frames, for the malformed-input tests ---------

V4_REQUEST = 0x04
OPCODE_ERROR = 0x00
OPCODE_STARTUP = 0x01
OPCODE_READY = 0x02
OPCODE_OPTIONS = 0x05
OPCODE_SUPPORTED = 0x06
ERROR_PROTOCOL = 0x000A
FRAME_HEADER_LEN = 9


def v4_frame(opcode, body=b"", stream=0, version=V4_REQUEST, length=None):
    """A v4 request frame; `length` overrides the announced body length."""
    announced = len(body) if length is None else length
    return struct.pack(">BBhBI", version, 0, stream, opcode, announced) + body


LEGACY_FRAME_HEADER_LEN = 8


def read_frame(sock):
    """Reads one response frame: (opcode, body), or None when the server
    closed the connection (orderly or by reset) before a whole frame came."""
    first = _read_exact(sock, 1)
    if first is None:
        return None
    if first[0] & 0x7F <= 2:
        # v1/v2 responses (to a client that opened with v1/v2) have an
        # 8-byte header with a one-byte stream id.
        rest = _read_exact(sock, LEGACY_FRAME_HEADER_LEN - 1)
        if rest is None:
            return None
        _flags, _stream, opcode, length = struct.unpack(">BbBI", rest)
    else:
        rest = _read_exact(sock, FRAME_HEADER_LEN - 1)
        if rest is None:
            return None
        _flags, _stream, opcode, length = struct.unpack(">BhBI", rest)
    body = _read_exact(sock, length)
    if body is None:
        return None
    return opcode, body


def _read_exact(sock, n):
    data = b""
    while len(data) < n:
        try:
            chunk = sock.recv(n - len(data))
        except (ConnectionResetError, BrokenPipeError):
            return None
        if not chunk:
            return None
        data += chunk
    return data


def string_map(pairs):
    """A protocol [string map] (STARTUP's options)."""
    out = struct.pack(">H", len(pairs))
    for k, v in pairs.items():
        out += struct.pack(">H", len(k)) + k.encode() + struct.pack(">H", len(v)) + v.encode()
    return out


def error_code(body):
    """The [int] error code at the start of an ERROR body."""
    return struct.unpack(">i", body[:4])[0]


def open_socket(host, port, timeout=5):
    sock = socket.create_connection((host, port), timeout=timeout)
    sock.settimeout(timeout)
    return sock
