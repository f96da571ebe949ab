"""WebSocket protocol v1, shared by the daemon (`modlens.daemon`), its clients (`modlens feed`)
and the tests. The pydantic models in `messages.py` are the single source of truth;
docs/PROTOCOL.md is generated from them by `python -m modlens.protocol.doc`.

The engine may import this package; it imports nothing from the daemon."""
from modlens.protocol.errors import ERROR_MEANINGS, REFUSED_FOR_GOOD, ErrorCode, ProtocolError
from modlens.protocol.messages import *  # noqa: F403  (the models are the package's API)
from modlens.protocol.messages import __all__ as _message_names
from modlens.protocol.parse import parse_client_message, sniff_id

__all__ = ["ERROR_MEANINGS", "REFUSED_FOR_GOOD", "ErrorCode", "ProtocolError", "parse_client_message", "sniff_id", *_message_names]
