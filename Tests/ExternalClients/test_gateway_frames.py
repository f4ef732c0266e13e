"""herald-gateway's frames as a client in another language reads them: Python's protobuf runtime,
with classes compiled here from Schemas/gateway/gateway.proto (grpcio-tools' protoc), checked
against what docs/gateway.md says. The conformance suite against a live gateway builds on these
classes (issue 43)."""

import importlib
import pathlib
import struct
import sys
import tempfile
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def compile_frames(name="gateway"):
    """The `name`_pb2 module, compiled from Schemas/gateway/`name`.proto (and what it imports) into
    a temporary directory."""
    from grpc_tools import protoc

    out = tempfile.mkdtemp(prefix="herald-gateway-pb2-")
    status = protoc.main(
        ["protoc", f"-I{ROOT / 'Schemas/gateway'}", f"--python_out={out}", str(ROOT / f"Schemas/gateway/{name}.proto")]
    )
    if status != 0:
        raise RuntimeError(f"protoc failed on Schemas/gateway/{name}.proto ({status})")
    sys.path.insert(0, out)
    return importlib.import_module(f"{name}_pb2")


pb = compile_frames()


def framed(frame):
    """A frame with its 4-byte big-endian length, as on a TLS connection."""
    body = frame.SerializeToString()
    return struct.pack(">I", len(body)) + body


class FramesAsDocumented(unittest.TestCase):
    def test_example_ping(self):
        # docs/gateway.md: "a ping with nonce 1 ... on the wire: 00 00 00 04 1a 02 08 01"
        frame = pb.Frame(ping=pb.Ping(nonce=1))
        self.assertEqual(framed(frame).hex(" "), "00 00 00 04 1a 02 08 01")
        decoded = pb.Frame.FromString(bytes.fromhex("1a020801"))
        self.assertEqual(decoded.WhichOneof("kind"), "ping")
        self.assertEqual(decoded.ping.nonce, 1)

    def test_one_kind_per_frame(self):
        frame = pb.Frame(hello=pb.Hello(versions=[1], client_key="hk_client_x", device_token="ab" * 32))
        frame.ping.nonce = 7  # setting another kind replaces the hello: a oneof
        self.assertEqual(frame.WhichOneof("kind"), "ping")

    def test_websocket_upgrade_is_never_a_length(self):
        # docs/gateway.md: "GET " read as a length is 1,195,725,856, past any frame.
        (length,) = struct.unpack(">I", b"GET ")
        self.assertEqual(length, 1_195_725_856)
        self.assertGreater(length, 16_384)

    def test_unknown_fields_are_kept_not_refused(self):
        # A newer peer's field (number 99 on a Ping) decodes; the frame stays a ping.
        newer = bytes.fromhex("1a05") + bytes.fromhex("0801") + bytes.fromhex("980601")
        decoded = pb.Frame.FromString(newer)
        self.assertEqual(decoded.WhichOneof("kind"), "ping")
        self.assertEqual(decoded.ping.nonce, 1)


if __name__ == "__main__":
    unittest.main()
