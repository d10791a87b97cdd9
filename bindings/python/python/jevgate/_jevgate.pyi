"""Type stubs of the native module jevgate._jevgate (re-exported by the jevgate package)."""

import os
from types import TracebackType
from typing import Any, Dict, List, Mapping, Optional, Type, Union

__version__: str

ConfigInput = Union[str, Mapping[str, Any]]

def validate_config(config: ConfigInput) -> None:
    """Validate a configuration (a dict or a JSON string); raise ConfigError with .path."""

class Gateway:
    """An open gateway on a data directory. Use as a context manager, or call close()."""

    def __init__(self, data_dir: Union[str, os.PathLike[str]], config: Optional[ConfigInput] = None) -> None: ...
    @property
    def generation(self) -> int:
        """The live configuration generation (1 after open, +1 per successful reload)."""
    @property
    def closed(self) -> bool: ...
    def reload(self, config: ConfigInput) -> int:
        """Validate and swap in a configuration atomically; return the new generation."""
    def doctor(self) -> Dict[str, Any]:
        """Local readiness checks: {"ok": bool, "checks": [{"name", "status", "code"?, "detail"}]}."""
    def secret_env_names(self) -> List[str]:
        """Environment variable names holding credentials this gateway reads."""
    def close(self) -> None:
        """Close the gateway and release the data directory. Idempotent."""
    def __enter__(self) -> "Gateway": ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None: ...
