"""jevgate — safe, bounded, auditable browser control for AI agents.

The Python surface of the jevgate Rust library. Everything here is a thin translation of the
Rust API: dicts and lists in and out, exceptions that carry the library's stable error codes.

    >>> import jevgate
    >>> jevgate.validate_config({"gateway": {"jev": {"enabled": True, "provider": "local"}}})
    >>> try:
    ...     jevgate.validate_config({"gateway": {"jev": {"timeoutMs": 0}}})
    ... except jevgate.ConfigError as e:
    ...     print(e.code, e.path)
    JEV_INVALID_CONFIGURATION gateway.jev.timeoutMs
"""

from jevgate import codes
from jevgate._errors import (
    AccessDeniedError,
    ArgumentError,
    BrowserError,
    ConfigError,
    DeviceError,
    Error,
    GatewayError,
    GrammarError,
    JevError,
    LeaseError,
    StoreError,
    TaskError,
    ToolError,
    ValidationError,
)
from jevgate._jevgate import (
    BrowserCall,
    CancelToken,
    ChannelHandle,
    Computer,
    DeviceWorker,
    Gateway,
    Leases,
    LocalBrowser,
    ManualClock,
    Tasks,
    __version__,
    answer_schema,
    check_model_address,
    error_table,
    managed_tool_definitions,
    parse_command,
    split_parts,
    split_steps,
    tool_definitions,
    validate_config,
    validate_response,
)

__all__ = [
    "AccessDeniedError",
    "BrowserCall",
    "CancelToken",
    "ChannelHandle",
    "Computer",
    "DeviceWorker",
    "ArgumentError",
    "BrowserError",
    "ConfigError",
    "DeviceError",
    "Error",
    "Gateway",
    "GatewayError",
    "GrammarError",
    "JevError",
    "LeaseError",
    "Leases",
    "LocalBrowser",
    "ManualClock",
    "StoreError",
    "TaskError",
    "Tasks",
    "ToolError",
    "ValidationError",
    "__version__",
    "answer_schema",
    "check_model_address",
    "codes",
    "error_table",
    "parse_command",
    "split_parts",
    "split_steps",
    "tool_definitions",
    "validate_config",
    "validate_response",
]
