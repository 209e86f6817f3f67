"""Reading TensorBoard event files without TensorBoard (lesson 11): the scalars Ray Tune wrote.

An event file (`events.out.tfevents.*`, written by Tune's TBXLoggerCallback through tensorboardX) is
a sequence of TFRecords: an 8-byte little-endian length, a 4-byte checksum of it, the bytes of one
`Event` protocol buffer, and a 4-byte checksum of those. Each Event holds a step and a `Summary`
of tagged values; the scalars are the values with a `simple_value`. tensorboardX ships the Event's
protocol buffer definition, so a dozen lines read what TensorBoard would plot.
"""

import struct
from collections.abc import Iterator
from pathlib import Path

from tensorboardX.crc32c import crc32c
from tensorboardX.proto.event_pb2 import Event


def _masked_crc(data: bytes) -> int:
    """TFRecord's checksum: CRC32-C, rotated and offset (so a CRC of CRCs is not a CRC)."""
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def read_records(path: str | Path) -> Iterator[bytes]:
    """The records of a TFRecord file, each checked against its checksums."""
    with open(path, "rb") as file:
        while header := file.read(12):
            if len(header) < 12:
                raise ValueError(f"{path}: the file ends inside a record's header (truncated)")
            length, length_crc = struct.unpack("<QI", header)
            if _masked_crc(header[:8]) != length_crc:
                raise ValueError(f"{path}: a record's length fails its checksum (corrupt file)")
            data, footer = file.read(length), file.read(4)
            if len(data) < length or len(footer) < 4:
                raise ValueError(f"{path}: the file ends inside a record (truncated)")
            if _masked_crc(data) != struct.unpack("<I", footer)[0]:
                raise ValueError(f"{path}: a record fails its checksum (corrupt file)")
            yield data


def read_scalars(path: str | Path) -> dict[str, list[tuple[int, float]]]:
    """{tag: [(step, value), ...]} of every scalar in the event file at `path`."""
    scalars: dict[str, list[tuple[int, float]]] = {}
    for record in read_records(path):
        event = Event.FromString(record)
        for value in event.summary.value:
            if value.HasField("simple_value"):
                scalars.setdefault(value.tag, []).append((event.step, value.simple_value))
    return scalars


def find_event_files(folder: str | Path) -> list[Path]:
    """The event files under `folder` (one per trial in a Tune results folder), sorted."""
    return sorted(Path(folder).rglob("events.out.tfevents.*"))
