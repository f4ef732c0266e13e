"""A hostile APNs: a TLS + HTTP/2 server that misbehaves on purpose, for the sender's abuse tests
(Tests/HeraldAPNsTests/HostileServerTests.swift).

    python3 hostile_apns.py MODE

It makes a self-signed certificate for localhost, listens on a free port of 127.0.0.1, prints
`port=<port> certificate=<PEM file>` and serves every connection in MODE until killed:

  garbage          answers the client's first request with 64 KiB of random bytes
  huge-headers     answers each request with a 64 MiB header block (HEADERS + CONTINUATION frames)
  endless-continuation
                   answers with HEADERS and then CONTINUATION frames for ever, never END_HEADERS
  settings-flood   sends SETTINGS frames as fast as the socket takes them
  zero-window      advertises an initial stream window of 0 and never opens it
  rst-flood        resets every request, and streams the client never opened, as fast as it can
"""

import os
import socket
import ssl
import struct
import subprocess
import sys
import tempfile
import threading

DATA, HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = 0, 1, 3, 4, 6, 7, 8, 9
END_STREAM, ACK, END_HEADERS = 0x1, 0x1, 0x4
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def frame(kind, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


def settings(**values):
    identifiers = {"max_concurrent_streams": 3, "initial_window_size": 4}
    return frame(SETTINGS, 0, 0, b"".join(struct.pack(">HI", identifiers[k], v) for k, v in values.items()))


def hpack_length(value, prefix_bits=7, first=0):
    """HPACK integer with a `prefix_bits` prefix."""
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes([first | value])
    out = [first | limit]
    value -= limit
    while value >= 128:
        out.append((value % 128) + 128)
        value //= 128
    out.append(value)
    return bytes(out)


def big_header_start(length):
    """`:status: 200` (indexed), then a literal header `x-big` whose value is `length` bytes."""
    return b"\x88" + b"\x00" + hpack_length(5) + b"x-big" + hpack_length(length)


def read_frames(connection):
    """Yields (type, flags, stream) of each frame the client sends."""
    buffer = b""
    preface_seen = False
    while True:
        chunk = connection.recv(65536)
        if not chunk:
            return
        buffer += chunk
        if not preface_seen:
            if len(buffer) < len(PREFACE):
                continue
            buffer = buffer[len(PREFACE):]
            preface_seen = True
        while len(buffer) >= 9:
            length = int.from_bytes(buffer[:3], "big")
            if len(buffer) < 9 + length:
                break
            kind, flags = buffer[3], buffer[4]
            stream = int.from_bytes(buffer[5:9], "big") & 0x7FFFFFFF
            buffer = buffer[9 + length:]
            yield kind, flags, stream


def serve(connection, mode):
    try:
        if mode == "zero-window":
            connection.sendall(settings(max_concurrent_streams=100, initial_window_size=0))
        else:
            connection.sendall(settings(max_concurrent_streams=100))
        if mode == "settings-flood":
            flood = settings(max_concurrent_streams=100) * 64
            while True:
                connection.sendall(flood)
        if mode == "rst-flood":
            stream = 1
            def reset_everything():
                nonlocal stream
                while True:
                    connection.sendall(b"".join(frame(RST_STREAM, 0, s, struct.pack(">I", 8))
                                                for s in range(stream, stream + 2000, 2)))
                    stream += 4000
            threading.Thread(target=reset_everything, daemon=True).start()
        for kind, flags, stream in read_frames(connection):
            if kind == SETTINGS and not flags & ACK:
                connection.sendall(frame(SETTINGS, ACK, 0))
            elif kind == PING and not flags & ACK:
                connection.sendall(frame(PING, ACK, 0, b"\0" * 8))
            elif kind == HEADERS:
                if mode == "garbage":
                    connection.sendall(os.urandom(65536))
                elif mode == "huge-headers":
                    size = 64 << 20
                    connection.sendall(frame(HEADERS, 0, stream, big_header_start(size)))
                    chunk = b"a" * 16384
                    for sent in range(0, size, len(chunk)):
                        last = sent + len(chunk) >= size
                        connection.sendall(frame(CONTINUATION, END_HEADERS if last else 0, stream, chunk))
                elif mode == "endless-continuation":
                    connection.sendall(frame(HEADERS, 0, stream, big_header_start(1 << 30)))
                    chunk = frame(CONTINUATION, 0, stream, b"a" * 16384)
                    while True:
                        connection.sendall(chunk)
                elif mode == "rst-flood":
                    connection.sendall(frame(RST_STREAM, 0, stream, struct.pack(">I", 7)))
                # zero-window: say nothing; the client cannot send its body.
    except (OSError, ssl.SSLError):
        pass
    finally:
        try:
            connection.close()
        except OSError:
            pass


def main():
    mode = sys.argv[1]
    directory = tempfile.mkdtemp(prefix="hostile-apns-")
    key, certificate = os.path.join(directory, "key.pem"), os.path.join(directory, "certificate.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-keyout", key, "-out", certificate, "-days", "1", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"], check=True, capture_output=True)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certificate, key)
    context.set_alpn_protocols(["h2"])
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    print(f"port={listener.getsockname()[1]} certificate={certificate}", flush=True)
    while True:
        raw, _ = listener.accept()
        def handle(raw=raw):
            try:
                connection = context.wrap_socket(raw, server_side=True)
            except (OSError, ssl.SSLError):
                raw.close()
                return
            serve(connection, mode)
        threading.Thread(target=handle, daemon=True).start()


if __name__ == "__main__":
    main()
