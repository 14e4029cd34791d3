"""The Ogg container read just far enough to check that a file is Ogg Opus or Ogg Vorbis and how long it
plays: pages, packets, the codec's header and the last granule position. Standard library only; the store
(store/audio.py) and the cloud's upload checks use it.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

from .errors import InvalidSegment

#: The media type of every stored chunk.
OGG_MEDIA_TYPE = "audio/ogg"


class InvalidAudio(InvalidSegment):
    """Audio that is not an Ogg Opus or Ogg Vorbis stream, or a chunk that does not fit the meeting."""


@dataclass(frozen=True, slots=True)
class OggInfo:
    """What the container says about an Ogg audio stream."""

    codec: str  # "opus" or "vorbis"
    sample_rate: int
    channels: int
    duration: float  # seconds


def _pages(data: bytes) -> Iterator[tuple[int, int, int, bytes, bytes]]:
    """`(header_type, granule, serial, lacing table, body)` of each Ogg page, checking the framing as it goes."""
    pos = 0
    while pos < len(data):
        if data[pos:pos + 4] != b"OggS" or len(data) < pos + 27:
            raise InvalidAudio(f"not an Ogg stream (no page at byte {pos})")
        header_type, granule, serial = data[pos + 5], *struct.unpack_from("<qI", data, pos + 6)
        count = data[pos + 26]
        table = data[pos + 27:pos + 27 + count]
        size = sum(table)
        body_at = pos + 27 + count
        if len(table) != count or body_at + size > len(data):
            raise InvalidAudio(f"the Ogg stream is truncated (page at byte {pos})")
        yield header_type, granule, serial, table, data[body_at:body_at + size]
        pos = body_at + size


def _packets(data: bytes) -> Iterator[tuple[bytes, int, bool]]:
    """`(packet, granule of the page it ends on, whether it ends that page's last packet)` of the one logical
    stream of an Ogg file, in order.

    Raises:
        InvalidAudio: bad framing, a second stream, or a packet left unfinished at the end.
    """
    stream: int | None = None
    partial = b""
    for _header_type, granule, serial, table, body in _pages(data):
        if stream is None:
            stream = serial
        elif serial != stream:
            raise InvalidAudio("the Ogg file holds more than one stream; upload one audio stream per chunk")
        ended = [i for i, lace in enumerate(table) if lace < 255]
        at = 0
        for i, lace in enumerate(table):
            partial += body[at:at + lace]
            at += lace
            if lace < 255:
                yield partial, granule, i == ended[-1]
                partial = b""
    if partial:
        raise InvalidAudio("the Ogg stream is truncated (its last packet is unfinished)")


#: Samples (at 48 kHz) of one Opus frame by the TOC's configuration number (RFC 6716 §3.1, Table 2).
_OPUS_FRAME = [480, 960, 1920, 2880] * 3 + [480, 960] * 2 + [120, 240, 480, 960] * 4


def opus_packet_samples(packet: bytes) -> int:
    """Samples (at 48 kHz) one Opus packet decodes to, from its TOC byte (RFC 6716 §3.1-3.2).

    Raises:
        InvalidAudio: an empty packet, or a frame count a packet may not have (RFC 6716 §3.2.5: at most
            120 ms per packet).
    """
    if not packet:
        raise InvalidAudio("the Opus stream holds an empty packet")
    toc = packet[0]
    frame = _OPUS_FRAME[toc >> 3]
    code = toc & 3
    if code == 0:
        frames = 1
    elif code in (1, 2):
        frames = 2
    else:
        if len(packet) < 2:
            raise InvalidAudio("the Opus stream holds a packet with no frame count")
        frames = packet[1] & 0x3F
        if frames == 0:
            raise InvalidAudio("the Opus stream holds a packet of no frames")
    if frames * frame > 5760:
        raise InvalidAudio("the Opus stream holds a packet longer than 120 ms")
    return frames * frame


def _opus_head(packet: bytes) -> tuple[int, int, int]:
    """`(channels, pre_skip, input rate)` of an OpusHead packet (RFC 7845 §5.1), checked."""
    if len(packet) < 19 or packet[8] >> 4 != 0:
        raise InvalidAudio("the OpusHead header is malformed or of a version this service cannot read")
    channels, family = packet[9], packet[18]
    pre_skip, rate = struct.unpack_from("<HI", packet, 10)
    if channels == 0 or (family == 0 and channels > 2) or (family != 0 and len(packet) < 21 + channels):
        raise InvalidAudio("the OpusHead header has an impossible channel layout")
    return channels, pre_skip, rate


def _check_comments(packet: bytes, magic: bytes, name: str) -> None:
    """An OpusTags (RFC 7845 §5.2) or Vorbis comment header: vendor string and comments within the packet."""
    if not packet.startswith(magic):
        raise InvalidAudio(f"the second header of the stream is not {name}; the file is not a whole Ogg audio file")
    at = len(magic)
    try:
        (vendor,) = struct.unpack_from("<I", packet, at)
        at += 4 + vendor
        (count,) = struct.unpack_from("<I", packet, at)
        at += 4
        for _ in range(count):
            (size,) = struct.unpack_from("<I", packet, at)
            at += 4 + size
    except struct.error:
        raise InvalidAudio(f"the {name} header is malformed") from None
    if at > len(packet):
        raise InvalidAudio(f"the {name} header is malformed")


#: Samples a Vorbis packet decodes to at most (its largest block size, 8192, halved and overlapped).
_VORBIS_MAX_PACKET = 8192


def ogg_info(data: bytes) -> OggInfo:
    """Codec, rate, channels and playing time of an Ogg Opus or Ogg Vorbis file, with its headers and its
    granule positions checked against the packets it holds (issue 30): a file is refused unless its
    identification and comment headers are well formed and it plays no longer than its packets can.

    Raises:
        InvalidAudio: not Ogg, truncated, another codec, malformed headers, a granule position its packets
            cannot reach, or no audio.
    """
    if not data:
        raise InvalidAudio("the audio file is empty")
    packets = _packets(data)
    first = next(packets, None)
    if first is None:
        raise InvalidAudio("the Ogg stream holds no audio")
    head, head_granule, head_alone = first
    if head.startswith(b"OpusHead"):
        codec = "opus"
        channels, pre_skip, rate = _opus_head(head)
        comments, name = b"OpusTags", "OpusTags"
    elif head.startswith(b"\x01vorbis") and len(head) >= 30:
        codec, channels = "vorbis", head[11]
        (rate,) = struct.unpack_from("<I", head, 12)
        pre_skip = 0
        comments, name = b"\x03vorbis", "the Vorbis comment header"
        if channels == 0 or rate == 0:
            raise InvalidAudio("the Vorbis identification header is malformed")
    else:
        raise InvalidAudio("the Ogg stream holds neither Opus nor Vorbis audio; "
                           "encode it as Ogg Opus (e.g. `ffmpeg -i in.wav -c:a libopus out.ogg`)")
    if head_granule != 0 or not head_alone:
        raise InvalidAudio("the first page of the stream must hold its identification header alone")
    second = next(packets, None)
    if second is None:
        raise InvalidAudio("the Ogg stream holds no audio")
    _check_comments(second[0], comments, name)
    if codec == "vorbis":
        setup = next(packets, None)
        if setup is None or not setup[0].startswith(b"\x05vorbis"):
            raise InvalidAudio("the Vorbis setup header is missing")
    samples = 0  # what the packets so far decode to at most (Vorbis) or exactly (Opus), in granule units
    last_granule = -1
    for packet, granule, ends_page in packets:
        samples += opus_packet_samples(packet) if codec == "opus" else _VORBIS_MAX_PACKET
        if ends_page and granule >= 0:
            # RFC 7845 §4: a page's granule counts the samples of the packets ended so far (less any trimmed
            # at the very end): never more than they hold, never going back.
            if granule > samples or granule < last_granule:
                raise InvalidAudio(f"a granule position ({granule}) does not match the audio the stream holds "
                                   f"({samples} samples); the file is damaged or forged")
            last_granule = granule
    if last_granule < 0 or samples == 0:
        raise InvalidAudio("the Ogg stream holds no audio")
    if codec == "opus":
        # Opus granule positions count 48 kHz samples whatever the input rate, and include the pre-skip.
        duration = max(last_granule - pre_skip, 0) / 48000.0
    else:
        duration = last_granule / float(rate)
    return OggInfo(codec=codec, sample_rate=rate, channels=channels, duration=round(duration, 3))
